#include "base/thread_pool.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

namespace onyx {

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

static void chunk_range(int64_t n, int parts, int index, int64_t* begin, int64_t* end) {
  int64_t base = n / parts, extra = n % parts;
  *begin = index * base + std::min<int64_t>(index, extra);
  *end = *begin + base + (index < extra ? 1 : 0);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  std::lock_guard<std::mutex> call_lock(call_mutex_);
  int parts = static_cast<int>(std::min<int64_t>(n, num_threads()));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    pending_ = num_threads() - 1;
    ++generation_;
  }
  wake_.notify_all();
  int64_t b, e;
  chunk_range(n, parts, 0, &b, &e);
  if (b < e) fn(b, e);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  int64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    int parts = static_cast<int>(std::min<int64_t>(n, num_threads()));
    if (index < parts) {
      int64_t b, e;
      chunk_range(n, parts, index, &b, &e);
      if (b < e) (*job)(b, e);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_all();
    }
  }
}

int physical_core_count() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical, core;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("physical id", 0) == 0) physical = line.substr(line.find(':') + 1);
    if (line.rfind("core id", 0) == 0) {
      core = line.substr(line.find(':') + 1);
      cores.insert({physical, core});
    }
  }
  int hw = static_cast<int>(std::thread::hardware_concurrency());
  int n = cores.empty() ? hw : static_cast<int>(cores.size());
  return std::max(1, std::min(n, hw > 0 ? hw : n));
}

}  // namespace onyx
