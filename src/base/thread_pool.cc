#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "base/openmp_team.h"
#include "base/thread_placement.h"
#include "onyx/status.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ONYX_CPU_RELAX() _mm_pause()
#else
#define ONYX_CPU_RELAX() std::this_thread::yield()
#endif

namespace onyx {

namespace {

constexpr auto kWorkerSpin = std::chrono::microseconds(100);
constexpr auto kCallerSpin = std::chrono::microseconds(500);
thread_local const ThreadPool* t_inside_pool = nullptr;  // the pool whose job this thread is running

constexpr uint64_t kStaticJob = 0x8000;  // in state_'s low 16 bits, above the chunk count
constexpr int kMaxParts = 0x7FFF;

inline uint32_t gen_of(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
inline int next_of(uint64_t s) { return static_cast<int>((s >> 16) & 0xFFFF); }
inline int parts_of(uint64_t s) { return static_cast<int>(s & kMaxParts); }
inline int end_of(uint64_t s) { return static_cast<int>(s & 0xFFFF); }  // a share's end

void chunk_range(int64_t n, int parts, int index, int64_t* begin, int64_t* end) {
  int64_t base = n / parts, extra = n % parts;
  *begin = index * base + std::min<int64_t>(index, extra);
  *end = *begin + base + (index < extra ? 1 : 0);
}

// Spins until pred() or the deadline; returns pred().
//
// No sched_yield in the loop. On a 2-vCPU VM (kernel 6.18) a worker that
// yielded between jobs took almost none of them, even on a CPU of its own:
// tiny BERT at 2 threads ran at its 1-thread speed (median 0.29 ms against
// 0.18), and yielding only after 20 us of spinning was as bad. With another
// process busy on one of the two cores, BERT-base at 2 threads is no slower
// without it (108 ms against 112).
template <class Pred>
bool spin_until(Pred pred, std::chrono::steady_clock::duration budget) {
  if (pred()) return true;
  auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      ONYX_CPU_RELAX();
    }
    if (std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads, bool allow_spinning) : allow_spinning_(allow_spinning) {
  ThreadPoolOptions o;
  o.num_threads = num_threads;
  o.allow_spinning = allow_spinning;
  start_workers(o);
}

ThreadPool::ThreadPool(const ThreadPoolOptions& options) : allow_spinning_(options.allow_spinning) {
  if (static_cast<bool>(options.create_thread) != static_cast<bool>(options.join_thread))
    fail(ErrorCode::InvalidArgument,
         "thread options: create_thread and join_thread must be given together (only " +
             std::string(options.create_thread ? "create_thread" : "join_thread") + " is set)");
  if (options.dynamic_block_base < 0)
    fail(ErrorCode::InvalidArgument,
         "thread options: dynamic_block_base must be 0 or more, got " + std::to_string(options.dynamic_block_base));
  block_base_ = options.dynamic_block_base;
  start_workers(options);
}

void ThreadPool::start_workers(const ThreadPoolOptions& options) {
  num_threads_ = std::max(1, options.num_threads);
  shares_ = std::make_unique<Share[]>(static_cast<size_t>(num_threads_));
  openmp_team_ = options.use_openmp_team && !options.create_thread && openmp_available();
  if (openmp_team_) return;
  const int workers = num_threads_ - 1;
  try {
    if (options.create_thread) {
      join_thread_ = options.join_thread;
      handles_.reserve(static_cast<size_t>(workers));
      for (int i = 0; i < workers; ++i) {
        handles_.push_back(options.create_thread([this, i] { worker_loop(i + 1); }));
        ++num_workers_;
      }
    } else {
      workers_.reserve(static_cast<size_t>(workers));
      for (int i = 0; i < workers; ++i) {
        workers_.emplace_back([this, i] { worker_loop(i + 1); });
        ++num_workers_;
      }
    }
  } catch (...) {
    stop_workers();  // the constructor fails: no destructor will join the ones already started
    throw;
  }
}

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
  for (void* h : handles_) join_thread_(h);
  handles_.clear();
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::finish_chunk() {
  // the caller waits for every chunk; wake it if it went to sleep
  int parts = parts_of(state_.load(std::memory_order_relaxed));
  if (chunks_done_.fetch_add(1, std::memory_order_seq_cst) + 1 == parts && caller_sleeping_.load()) {
    std::lock_guard<std::mutex> lock(mutex_);
    done_.notify_all();
  }
}

int ThreadPool::claim_chunk(uint32_t gen, int home) {
  uint64_t s = state_.load(std::memory_order_acquire);
  if (!(s & kStaticJob)) {  // dynamic: one counter
    while (gen_of(s) == gen && next_of(s) < parts_of(s))
      if (state_.compare_exchange_weak(s, s + (uint64_t{1} << 16), std::memory_order_acq_rel)) return next_of(s);
    return -1;
  }
  // Static: the home share from its front, then the others' from their backs.
  for (int i = 0; i < num_threads_; ++i) {
    std::atomic<uint64_t>& word = shares_[(home + i) % num_threads_].word;
    uint64_t w = word.load(std::memory_order_acquire);
    while (gen_of(w) == gen && next_of(w) < end_of(w)) {
      const uint64_t taken = i == 0 ? w + (uint64_t{1} << 16) : w - 1;
      if (word.compare_exchange_weak(w, taken, std::memory_order_acq_rel)) return i == 0 ? next_of(w) : end_of(w) - 1;
    }
    if (gen_of(w) != gen) return -1;  // a newer job: this one's chunks are all taken
  }
  return -1;
}

void ThreadPool::run_chunks(uint32_t gen, int home) {
  struct Inside {  // restores the thread's marker however the chunks end
    const ThreadPool* outer = t_inside_pool;
    ~Inside() { t_inside_pool = outer; }
  } inside;
  t_inside_pool = this;
  for (int chunk; (chunk = claim_chunk(gen, home)) >= 0;) {
    // Holding an unfinished chunk of job `gen`: its fields stay valid.
    int64_t b, e;
    if (job_dynamic_) {
      b = bounds_[static_cast<size_t>(chunk)];
      e = bounds_[static_cast<size_t>(chunk) + 1];
    } else {
      chunk_range(job_n_, parts_of(state_.load(std::memory_order_relaxed)), chunk, &b, &e);
    }
    if (b < e) {
      try {
        (*job_)(b, e);
      } catch (...) {
        // Leaving a worker (or an OpenMP region) it would end the process: kept for the
        // caller instead, and the job's other chunks still run so that it ends as usual.
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!job_error_) job_error_ = std::current_exception();
      }
    }
    finish_chunk();
  }
}

void ThreadPool::parallel_for(int64_t n, RangeFn fn) {
  if (n <= 0) return;
  if (t_inside_pool == this || num_threads() == 1) {
    fn(0, n);
    return;
  }
  if (openmp_team_) {
    // Another caller's job holds the team: this thread runs its loop alone
    // rather than wait (a second team would oversubscribe the cores).
    std::unique_lock<std::mutex> call_lock(call_mutex_, std::try_to_lock);
    if (call_lock.owns_lock()) run_job(n, fn);
    else fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mutex_);
  run_job(n, fn);
}

bool ThreadPool::try_parallel_for(int64_t n, RangeFn fn) {
  if (n <= 0) return true;
  if (t_inside_pool == this || num_threads() == 1) {
    fn(0, n);
    return true;
  }
  std::unique_lock<std::mutex> call_lock(call_mutex_, std::try_to_lock);
  if (!call_lock.owns_lock()) return false;
  run_job(n, fn);
  return true;
}

void ThreadPool::run_job(int64_t n, const RangeFn& fn) {
  int parts;
  if (block_base_ > 0 && n > 1) {
    // Guided chunks: each max(min_chunk, remaining / (base x threads)); the
    // minimum keeps their number within what state_ can count.
    constexpr int64_t kMaxGuided = 4096;
    const int64_t divisor = static_cast<int64_t>(block_base_) * num_threads();
    const int64_t min_chunk = std::max<int64_t>(1, (n + kMaxGuided - 1) / kMaxGuided);
    bounds_.clear();
    bounds_.push_back(0);
    for (int64_t pos = 0; pos < n;) {
      int64_t rem = n - pos;
      pos += std::min(rem, std::max(min_chunk, rem / divisor));
      bounds_.push_back(pos);
    }
    parts = static_cast<int>(bounds_.size()) - 1;
    job_dynamic_ = true;
  } else {
    parts = static_cast<int>(std::min<int64_t>(n, std::min(4 * num_threads(), kMaxParts)));
    job_dynamic_ = false;
  }
  job_ = &fn;
  job_n_ = n;
  chunks_done_.store(0, std::memory_order_relaxed);
  uint32_t gen = gen_of(state_.load(std::memory_order_relaxed)) + 1;
  if (!job_dynamic_) {
    for (int t = 0; t < num_threads_; ++t) {
      const uint64_t front = static_cast<uint64_t>(parts) * t / num_threads_;
      const uint64_t end = static_cast<uint64_t>(parts) * (t + 1) / num_threads_;
      shares_[t].word.store((uint64_t{gen} << 32) | front << 16 | end, std::memory_order_relaxed);
    }
    team_tickets_.store(0, std::memory_order_relaxed);
  }
  // Publishes the shares too (a seq_cst store releases the stores before it).
  state_.store((uint64_t{gen} << 32) | (job_dynamic_ ? 0 : kStaticJob) | static_cast<uint64_t>(parts),
               std::memory_order_seq_cst);
  if (openmp_team_) {
    // The team's threads claim chunks like workers; the region ends when all have.
    struct TeamJob {
      ThreadPool* pool;
      uint32_t gen;
    } team_job{this, gen};
    run_on_openmp_team(num_threads_, [](void* a) {
      auto* j = static_cast<TeamJob*>(a);
      ThreadPool& p = *j->pool;
      p.run_chunks(j->gen, p.team_tickets_.fetch_add(1, std::memory_order_relaxed) % p.num_threads_);
    }, &team_job);
    end_job();
    return;
  }
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    caller_cpu_.store(current_cpu(), std::memory_order_relaxed);
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  run_chunks(gen, 0);
  auto all_done = [&] { return chunks_done_.load(std::memory_order_acquire) == parts; };
  if (!spin_until(all_done, kCallerSpin)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeping_.store(true, std::memory_order_seq_cst);
    done_.wait(lock, all_done);
    caller_sleeping_.store(false);
  }
  end_job();
}

void ThreadPool::end_job() {
  job_ = nullptr;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    error = std::exchange(job_error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::worker_loop(int home) {
  uint32_t seen = 0;
  for (;;) {
    auto has_work = [&] { return stop_.load() || gen_of(state_.load(std::memory_order_seq_cst)) != seen; };
    if (!(allow_spinning_ && spin_until(has_work, kWorkerSpin))) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, has_work);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      lock.unlock();
      move_off_cpu(caller_cpu_.load(std::memory_order_relaxed));
    }
    if (stop_.load()) return;
    seen = gen_of(state_.load(std::memory_order_acquire));
    run_chunks(seen, home);
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
