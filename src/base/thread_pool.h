// Intra-op parallelism. Kernels call parallel_for; with one thread (or no
// pool) the work runs inline on the caller.
//
// The caller takes part in the work. Work is split in chunks that threads
// claim as they arrive, so a late-waking worker never delays a call. Workers
// spin briefly after a job (when allow_spinning), then sleep on a condition
// variable: back-to-back kernels see no wake-up latency, and an idle session
// burns no CPU.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace onyx {

// A non-owning reference to a callable void(int64_t begin, int64_t end). It
// never allocates; the callable must outlive the call it is passed to.
class RangeFn {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& f)  // NOLINT: implicit, so lambdas pass straight in
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(o))(b, e); }) {}
  void operator()(int64_t b, int64_t e) const { call_(obj_, b, e); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

class ThreadPool {
 public:
  // num_threads: total threads including the caller. allow_spinning: workers
  // poll for new work for a short while (~100 us) before sleeping.
  explicit ThreadPool(int num_threads, bool allow_spinning = true);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }
  bool allow_spinning() const { return allow_spinning_; }
  // Calls fn(begin, end) over [0, n) split in contiguous chunks. Called from
  // inside one of this pool's jobs, it runs inline.
  void parallel_for(int64_t n, RangeFn fn);

 private:
  void worker_loop();
  bool run_chunks(uint32_t gen);  // claims and runs chunks of job `gen`; false when it is stale
  void finish_chunk();

  std::vector<std::thread> workers_;
  bool allow_spinning_;
  std::mutex call_mutex_;  // one parallel_for at a time; concurrent callers queue
  std::mutex mutex_;       // for sleeping only
  std::condition_variable wake_, done_;
  // state_: generation << 32 | next chunk << 16 | number of chunks
  std::atomic<uint64_t> state_{0};
  std::atomic<int> chunks_done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  const RangeFn* job_ = nullptr;
  int64_t job_n_ = 0;
};

// Runs fn over [0, n) on `pool` when given, else inline.
template <class F>
inline void parallel_for(ThreadPool* pool, int64_t n, F&& fn) {
  if (n <= 0) return;
  if (!pool || pool->num_threads() == 1 || n == 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool->parallel_for(n, RangeFn(fn));
}

int physical_core_count();

}  // namespace onyx
