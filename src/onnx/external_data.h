// Read-only memory maps of external tensor data files, shared by every tensor
// that points into them: weights are used in place, never copied.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace onyx {

struct MappedFile {
  std::string path;
  const char* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const std::string> memory;  // set: the data lives here, not in a mapping
  ~MappedFile();
  // A file whose contents the caller holds in memory (kept alive by the result).
  static std::shared_ptr<MappedFile> in_memory(const std::string& name, std::shared_ptr<const std::string> bytes);
};

// External data files given in memory, by the location the model's tensors name.
using InMemoryFiles = std::map<std::string, std::shared_ptr<const std::string>>;

class ExternalDataFiles {
 public:
  explicit ExternalDataFiles(std::string base_dir) : base_dir_(std::move(base_dir)) {}
  // Maps `location` (relative to the model's folder) once; throws NoSuchFile.
  std::shared_ptr<MappedFile> open(const std::string& location);
  // Serves `location` from an existing mapping (the model file itself).
  void adopt(const std::string& location, std::shared_ptr<MappedFile> file);
  void adopt(const InMemoryFiles& files);
  // Maps any file by path (not cached).
  static std::shared_ptr<MappedFile> open_path(const std::string& path);
  const std::string& base_dir() const { return base_dir_; }

 private:
  std::string base_dir_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

}  // namespace onyx
