#include "cuda/conv_algo_cache.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace onyx {

ConvAlgoCache::ConvAlgoCache(std::string file) : file_(std::move(file)) {
  if (file_.empty()) return;
  std::ifstream in(file_);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string key;
    ConvAlgoChoice c;
    if (!std::getline(ls, key, '\t')) continue;
    if (!(ls >> c.algo >> c.workspace >> c.math_type)) continue;  // a damaged line is skipped: it is only a cache
    entries_[key] = c;
  }
  loaded_ = entries_.size();
}

std::optional<ConvAlgoChoice> ConvAlgoCache::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void ConvAlgoCache::put(const std::string& key, const ConvAlgoChoice& choice) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[key] = choice;
  if (!file_.empty()) save_locked();
}

size_t ConvAlgoCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

void ConvAlgoCache::save_locked() const {
  std::string tmp = file_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return;  // an unwritable cache file costs only the search next time
    out << "# onyx cuDNN convolution algorithm cache: key\talgo\tworkspace_bytes\tmath_type\n";
    for (auto& [k, c] : entries_) out << k << '\t' << c.algo << '\t' << c.workspace << '\t' << c.math_type << '\n';
  }
  std::rename(tmp.c_str(), file_.c_str());
}

}  // namespace onyx
