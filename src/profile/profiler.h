// The session profiler: records session events (model loading, optimizer
// passes, initialization), one event per run and one per executed node, and
// writes them as a Chrome trace (see trace_writer.h).
//
// Recording is cheap: a node event stores pointers, two timestamps and the
// packed types and shapes of its inputs and outputs; names and JSON are made
// only when the file is written. Safe to record from several threads.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onyx/value.h"

namespace onyx {

class Profiler {
 public:
  explicit Profiler(std::string file_prefix);

  // Nanoseconds since the profiler started.
  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin_).count();
  }
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // A session-level event (cat "Session") that started at `start_ns` and ends now.
  void session_event(const std::string& name, int64_t start_ns, const std::string& args_json = "{}");
  // The same with an explicit end.
  void session_event(const std::string& name, int64_t start_ns, int64_t end_ns, const std::string& args_json);

  // Brackets one run on the calling thread: node events recorded on this
  // thread in between belong to it.
  int64_t begin_run();  // returns the start time
  void end_run(int64_t start_ns);
  // The run that node events recorded on the calling thread belong to (-1:
  // none). An executor that runs one run's nodes on several threads sets it
  // on each of them (and restores it after).
  static int64_t thread_run();
  static void set_thread_run(int64_t run);

  // One executed node that started at `start_ns` and ended now; its inputs
  // and outputs are slots[in_slots[k]] / slots[out_slots[k]] (-1: omitted).
  void record_node(const Node& node, const std::string& provider, const std::vector<int>& in_slots,
                   const std::vector<int>& out_slots, const std::vector<Value>& slots, int64_t start_ns);

  // The device time of a node's kernel (cat "Kernel", named "<node>_kernel"),
  // measured with device events, placed at the start of its Node event.
  void record_kernel(const Node& node, const std::string& provider, int64_t node_start_ns, double device_ms);

  // Writes the trace to PREFIX_YYYY-MM-DD_HH-MM-SS.json, stops recording and
  // returns the path.
  std::string end_profiling();
  // The trace document as it stands (for tests).
  std::string to_json() const;
  size_t node_event_count() const;

 private:
  struct NodeRecord {
    const Node* node;
    const std::string* provider;
    int64_t start_ns, end_ns;
    int64_t run;
    int tid;
    uint64_t output_bytes;
    std::vector<int64_t> io;  // packed input then output types and shapes (see profiler.cc)
  };
  struct Event {
    std::string cat, name;
    int64_t start_ns, end_ns;
    int tid;
    int64_t run;
    std::string args_json;
  };

  std::string file_prefix_;
  std::chrono::steady_clock::time_point origin_;
  std::chrono::system_clock::time_point wall_origin_;
  std::atomic<bool> active_{true};
  std::atomic<int64_t> next_run_{0};
  mutable std::mutex mu_;
  std::deque<NodeRecord> nodes_;
  std::vector<Event> events_;
};

// Small integer id of the calling thread (the OS thread id on Linux).
int profiler_thread_id();

}  // namespace onyx
