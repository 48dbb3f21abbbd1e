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
  ~MappedFile();
};

class ExternalDataFiles {
 public:
  explicit ExternalDataFiles(std::string base_dir) : base_dir_(std::move(base_dir)) {}
  // Maps `location` (relative to the model's folder) once; throws NoSuchFile.
  std::shared_ptr<MappedFile> open(const std::string& location);
  // Serves `location` from an existing mapping (the model file itself).
  void adopt(const std::string& location, std::shared_ptr<MappedFile> file);
  // Maps any file by path (not cached).
  static std::shared_ptr<MappedFile> open_path(const std::string& path);
  const std::string& base_dir() const { return base_dir_; }

 private:
  std::string base_dir_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

}  // namespace onyx
