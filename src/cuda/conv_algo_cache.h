// The cuDNN convolution algorithm chosen per shape, kept in memory and, when
// conv_algo_cache_file is set, in a text file loaded when a session is made,
// so a new process skips the algorithm search. One line per entry:
//   <key> \t <algo> \t <workspace bytes> \t <math type>
// The key names the device, the cuDNN version and every parameter of the
// convolution. Plain C++ (no CUDA types).
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace onyx {

struct ConvAlgoChoice {
  int algo = 0;
  size_t workspace = 0;
  int math_type = 0;
};

class ConvAlgoCache {
 public:
  explicit ConvAlgoCache(std::string file = "");  // loads the file when it exists
  std::optional<ConvAlgoChoice> find(const std::string& key) const;
  // Records a choice; with a file, rewrites it (atomically: temp + rename).
  void put(const std::string& key, const ConvAlgoChoice& choice);
  size_t size() const;
  size_t loaded() const { return loaded_; }  // entries read from the file
  const std::string& file() const { return file_; }

 private:
  void save_locked() const;
  std::string file_;
  mutable std::mutex mutex_;
  std::map<std::string, ConvAlgoChoice> entries_;
  size_t loaded_ = 0;
};

}  // namespace onyx
