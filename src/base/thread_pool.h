// Intra-op parallelism. Kernels call parallel_for; with one thread (or no
// pool) the work runs inline on the caller.
//
// The caller takes part in the work. Work is split in chunks that threads
// claim as they arrive (their own share first, see below), so a late-waking
// worker never delays a call: the others take its chunks. Workers
// spin briefly after a job (when allow_spinning), then sleep on a condition
// variable: back-to-back kernels see no wake-up latency, and an idle session
// burns no CPU. A worker woken on its caller's CPU moves to another one
// (base/thread_placement.h): sharing the caller's, it could only take turns.
//
// Chunking: by default (dynamic_block_base 0) [0, n) is cut into up to
// 4 x threads equal chunks, and each thread owns a contiguous share of them
// (the caller the first): it takes its own from the front, then, done, the
// others' from the back. Kernels that split their work alike thus find on
// their core the data the kernel before wrote there (claimed in arrival
// order, which core ran which rows changed from kernel to kernel): at 2
// threads Inception-v3 ran 8% and EfficientNet-B0 6% faster on a VM whose
// vCPUs were slow to share cache lines. With a dynamic block base B > 0
// the chunks start
// large and shrink: each takes max(1, remaining / (B x threads)) items, so a
// thread that drew costly iterations is balanced by the others taking the
// many small chunks left at the end (guided scheduling).
//
// Threads: the pool starts num_threads - 1 workers, with std::thread or, when
// given, the application's create_thread / join_thread callbacks. With
// use_openmp_team it starts none and runs each job on the caller's OpenMP
// team (base/openmp_team.h): when oneDNN's OpenMP threads run the
// convolutions, the other kernels then run on those same threads instead of
// a second set competing for the cores.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "onyx/environment.h"

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

// CreateThreadFn / JoinThreadFn (the application's thread functions) are in onyx/environment.h.
struct ThreadPoolOptions {
  int num_threads = 1;  // total, the caller included
  bool allow_spinning = true;
  int dynamic_block_base = 0;  // 0: static chunking
  bool use_openmp_team = false;  // no own workers; ignored without OpenMP or with create_thread
  CreateThreadFn create_thread;  // both or neither
  JoinThreadFn join_thread;
};

class ThreadPool {
 public:
  // num_threads: total threads including the caller. allow_spinning: workers
  // poll for new work for a short while (~100 us) before sleeping.
  explicit ThreadPool(int num_threads, bool allow_spinning = true);
  // Throws onyx::Error (InvalidArgument) when only one of create_thread /
  // join_thread is set; an exception from create_thread is passed on after
  // the workers already started are joined.
  explicit ThreadPool(const ThreadPoolOptions& options);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  bool allow_spinning() const { return allow_spinning_; }
  bool uses_openmp_team() const { return openmp_team_; }
  int dynamic_block_base() const { return block_base_; }
  // Calls fn(begin, end) over [0, n) split in contiguous chunks. Called from
  // inside one of this pool's jobs, it runs inline. The first exception fn
  // throws, on any thread, is rethrown here once every chunk has ended. Concurrent callers from
  // other threads take turns; on the OpenMP team, a caller that finds the
  // team busy runs its loop inline instead.
  void parallel_for(int64_t n, RangeFn fn);
  // The same, except that when another thread's call holds the pool it
  // returns false at once without running anything.
  bool try_parallel_for(int64_t n, RangeFn fn);

 private:
  void start_workers(const ThreadPoolOptions& options);
  void stop_workers();
  void run_job(int64_t n, const RangeFn& fn);  // with call_mutex_ held
  void worker_loop(int home);
  // Claims and runs chunks of job `gen`, starting with thread `home`'s share.
  void run_chunks(uint32_t gen, int home);
  int claim_chunk(uint32_t gen, int home);  // -1: none left
  void finish_chunk();
  void end_job();  // after the last chunk: rethrows the job's first exception

  std::vector<std::thread> workers_;  // without create_thread
  std::vector<void*> handles_;        // with create_thread
  JoinThreadFn join_thread_;
  int num_workers_ = 0;
  int num_threads_ = 1;
  bool openmp_team_ = false;
  bool allow_spinning_;
  int block_base_ = 0;
  std::vector<int64_t> bounds_;  // chunk k of a dynamic job is [bounds_[k], bounds_[k+1])
  bool job_dynamic_ = false;
  std::mutex call_mutex_;  // one parallel_for at a time; concurrent callers queue
  std::mutex mutex_;       // for sleeping only
  std::condition_variable wake_, done_;
  // state_: generation << 32 | next chunk << 16 | kStaticJob bit | number of chunks
  std::atomic<uint64_t> state_{0};
  // A static job's shares of chunk indices, one per thread: generation << 32 | front << 16 | end.
  struct alignas(64) Share {
    std::atomic<uint64_t> word{0};
  };
  std::unique_ptr<Share[]> shares_;
  std::atomic<int> team_tickets_{0};  // on the OpenMP team: which share each thread starts with
  std::atomic<int> chunks_done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<int> caller_cpu_{-1};  // the CPU of the caller that last woke workers
  std::atomic<bool> stop_{false};
  const RangeFn* job_ = nullptr;
  int64_t job_n_ = 0;
  std::mutex error_mutex_;
  std::exception_ptr job_error_;  // the job's first exception, from whichever thread
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
