#include "runtime/parallel_executor.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "profile/profiler.h"

namespace onyx {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// The state of one parallel run, shared by the threads working on it.
class ParallelRun {
 public:
  ParallelRun(const CompiledGraph& plan, const RunEnv& env, std::vector<Value>& slots, bool spin)
      : spin_(spin),
        plan_(plan),
        env_(env),
        slots_(slots),
        pending_(new std::atomic<int>[plan.nodes.size()]),
        readers_(new std::atomic<int>[plan.num_slots]),
        remaining_(static_cast<int>(plan.nodes.size())),
        profile_run_(env.profiler ? Profiler::thread_run() : -1) {
    for (size_t i = 0; i < plan.nodes.size(); ++i) pending_[i].store(plan.nodes[i].num_producers, std::memory_order_relaxed);
    for (int s = 0; s < plan.num_slots; ++s) readers_[s].store(plan.slot_readers[s], std::memory_order_relaxed);
    ready_.reserve(plan.nodes.size());
    ready_.assign(plan.roots.begin(), plan.roots.end());  // ascending: already a min-heap
    queued_.store(static_cast<int>(ready_.size()), std::memory_order_relaxed);
  }

  // Runs nodes until the run is over (every node done, or an error).
  void work() {
    int64_t saved_run = 0;
    if (env_.profiler) {
      saved_run = Profiler::thread_run();
      Profiler::set_thread_run(profile_run_);
    }
    int next = -1;
    for (;;) {
      int i = next >= 0 ? next : take();
      next = -1;
      if (i < 0 || stopping_.load(std::memory_order_relaxed)) break;
      try {
        next = finish(i);
      } catch (...) {
        stop(std::current_exception());
        break;
      }
    }
    if (env_.profiler) Profiler::set_thread_run(saved_run);
  }

  void rethrow_error() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Runs node i, releases the buffers it was the last to need and schedules
  // its consumers; returns one newly ready consumer to run next (or -1).
  int finish(int i) {
    const PlannedNode& pn = plan_.nodes[static_cast<size_t>(i)];
    run_node(pn, slots_, env_, plan_.buffers.get());
    for (int s : pn.outputs)
      if (s >= 0 && plan_.slot_readers[s] == 0) slots_[s] = Value();  // nobody reads it
    for (int s : pn.reads) {  // a count of 1 needs no atomic: this was the only reader
      const int n = plan_.slot_readers[s];
      if (n == 1 || (n > 1 && readers_[s].fetch_sub(1, std::memory_order_acq_rel) == 1)) slots_[s] = Value();
    }
    int next = -1, queued = 0, sleepers = 0;
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    for (int c : pn.consumers) {
      if (plan_.nodes[static_cast<size_t>(c)].num_producers > 1 &&
          pending_[c].fetch_sub(1, std::memory_order_acq_rel) != 1)
        continue;  // other producers still running (a single producer needs no atomic)
      if (next < 0) {
        next = c;  // consumers are in plan order: keep the first
        continue;
      }
      if (!lock.owns_lock()) lock.lock();
      ready_.push_back(c);
      std::push_heap(ready_.begin(), ready_.end(), std::greater<int>());
      ++queued;
    }
    if (lock.owns_lock()) {
      queued_.store(static_cast<int>(ready_.size()), std::memory_order_release);
      sleepers = sleepers_;
      lock.unlock();
    }
    if (queued && sleepers) {
      if (queued == 1) cv_.notify_one();
      else cv_.notify_all();
    }
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> guard(mu_);  // no waiter can miss the end
      done_.store(true, std::memory_order_release);
      cv_.notify_all();
    }
    return next;
  }

  // The lowest-numbered ready node; blocks while none is ready and some node
  // is still running; -1 when the run is over.
  int take() {
    // Nodes are often short: look for work (or the end) a few microseconds
    // before sleeping, as the thread pool does between jobs.
    if (spin_) {
      auto has_news = [&] {
        return queued_.load(std::memory_order_acquire) > 0 || done_.load(std::memory_order_acquire) ||
               stopping_.load(std::memory_order_relaxed);
      };
      for (int i = 0; i < kSpins && !has_news(); ++i) cpu_relax();
    }
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (stopped_ || done_.load(std::memory_order_relaxed)) return -1;
      if (!ready_.empty()) {
        std::pop_heap(ready_.begin(), ready_.end(), std::greater<int>());
        int i = ready_.back();
        ready_.pop_back();
        queued_.store(static_cast<int>(ready_.size()), std::memory_order_release);
        return i;
      }
      ++sleepers_;
      cv_.wait(lock);
      --sleepers_;
    }
  }

  void stop(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = e;  // the first error wins
    stopped_ = true;
    stopping_.store(true, std::memory_order_relaxed);
    cv_.notify_all();
  }

  static constexpr int kSpins = 2000;  // a few microseconds of pause instructions
  const bool spin_;
  const CompiledGraph& plan_;
  const RunEnv& env_;
  std::vector<Value>& slots_;
  std::unique_ptr<std::atomic<int>[]> pending_;  // per node: producers not finished yet
  std::unique_ptr<std::atomic<int>[]> readers_;  // per slot: readers not finished yet
  // Written once per node: apart from the flags that idle threads poll.
  alignas(64) std::atomic<int> remaining_;  // nodes not finished yet
  alignas(64) std::atomic<int> queued_{0};  // ready_.size(), for spinning without the lock
  std::atomic<bool> done_{false};           // every node finished
  std::atomic<bool> stopping_{false};       // an error: start no more nodes
  const int64_t profile_run_;
  std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  std::vector<int> ready_;  // min-heap of node indices
  int sleepers_ = 0;
  bool stopped_ = false;
  std::exception_ptr error_;
};

}  // namespace

std::vector<Value> execute_graph_parallel(const CompiledGraph& plan, std::vector<Value> inputs, const RunEnv& env,
                                          ThreadPool* inter_pool) {
  if (!inter_pool || inter_pool->num_threads() == 1 || plan.nodes.size() < 2)
    return execute_graph(plan, std::move(inputs), {}, env);
  BoundFrame frame(plan, inputs, {});
  std::vector<Value>& slots = frame.slots();
  {
    ParallelRun run(plan, env, slots, inter_pool->allow_spinning());
    auto body = [&](int64_t, int64_t) { run.work(); };
    // Busy with another run (another caller, or another session sharing the
    // pool): this run goes on the calling thread alone.
    if (!inter_pool->try_parallel_for(inter_pool->num_threads(), body)) run.work();
    run.rethrow_error();
  }
  std::vector<Value> out;
  out.reserve(plan.output_slots.size());
  for (int s : plan.output_slots) out.push_back(slots[s]);
  return out;
}

}  // namespace onyx
