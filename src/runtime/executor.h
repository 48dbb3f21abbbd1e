// Runs a compiled graph: one frame of slots per call, nodes in plan order,
// each value released after its last reader.
#pragma once
#include <vector>

#include "runtime/execution_plan.h"

namespace onyx {

class Profiler;

struct RunEnv {
  ThreadPool* pool = nullptr;
  const std::string* model_name = nullptr;
  Profiler* profiler = nullptr;  // set only while profiling: one event per executed node
};

// A frame of plan.num_slots values with the constants, outer-scope values
// and inputs (moved from `inputs`) bound, as execute_graph starts; borrowed
// from the plan's FramePool and given back, cleared, when it goes.
// `inputs` are positional (plan.inputs order; a none Value takes the
// initializer default); `outer` gives plan.outer_slots' values.
class BoundFrame {
 public:
  BoundFrame(const CompiledGraph& plan, std::vector<Value>& inputs, const std::vector<Value>& outer);
  ~BoundFrame();
  BoundFrame(const BoundFrame&) = delete;
  BoundFrame& operator=(const BoundFrame&) = delete;
  std::vector<Value>& slots() { return slots_; }

 private:
  const CompiledGraph& plan_;
  std::vector<Value> slots_;
};

// Runs one node of a frame: its kernel, the check that it produced every
// wanted output, its profile event. Errors are rethrown as onyx::Error
// naming the model and the node.
void run_node(const PlannedNode& pn, std::vector<Value>& slots, const RunEnv& env, BufferPool* buffers);

std::vector<Value> execute_graph(const CompiledGraph& plan, std::vector<Value> inputs, const std::vector<Value>& outer,
                                 const RunEnv& env);

}  // namespace onyx
