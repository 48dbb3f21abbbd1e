// A graph prepared for execution: value names resolved to slot numbers, a
// kernel created per node, and for each node the slots whose last reader it
// is (the memory plan: those buffers are released as soon as it finishes).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "kernels/execution_provider.h"
#include "kernels/registry.h"
#include "onyx/session.h"
#include "runtime/in_place_concat.h"

namespace onyx {

// Reuses the memory of a plan's intermediate tensors across runs: a released
// buffer goes back to a free list and serves the next request it fits (the
// most recently freed of those between the size asked and twice it), so a
// steady-state run of fixed shapes allocates no tensor memory and keeps few,
// warm buffers. Thread-safe; tensors keep the pool alive, so outputs may
// outlive the session. Holds at most kMaxCachedBytes of free buffers.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static constexpr size_t kMinBytes = 1024;           // smaller tensors use the plain allocator
  static constexpr size_t kMaxCachedBytes = size_t{1} << 30;
  // max_cached_bytes 0: no reuse, a released buffer is freed at once.
  explicit BufferPool(size_t max_cached_bytes = kMaxCachedBytes) : max_cached_(max_cached_bytes) {}
  ~BufferPool();
  Tensor make(DataType dtype, const Shape& shape);
  void trim();  // gives every free buffer back to the system
  size_t cached_bytes() const;

 private:
  void give_back(void* p, size_t bytes);
  mutable std::mutex mutex_;
  std::vector<std::pair<void*, size_t>> free_;  // (buffer, capacity), most recently freed last
  size_t cached_ = 0;
  size_t max_cached_;
};

class CompiledGraph;

// Frames of slots kept across runs with the plan's constants already bound:
// copying hundreds of small constants (the operands of shape arithmetic) into a
// fresh frame cost a tenth of a small transformer's run, and a Loop body pays it
// per iteration. A frame comes back with every other slot cleared. Thread-safe:
// concurrent runs each take their own frame.
class FramePool {
 public:
  std::vector<Value> take(const CompiledGraph& plan);
  void give_back(const CompiledGraph& plan, std::vector<Value> frame);

 private:
  std::mutex mutex_;
  std::vector<std::vector<Value>> free_;
};

struct PlannedNode {
  const Node* node = nullptr;
  std::unique_ptr<Kernel> kernel;
  std::string provider = "CPU";
  ExecutionProvider* ep = nullptr;  // set for device providers only: outputs come from its memory
  const KernelDef* def = nullptr;   // the kernel chosen (for the placement log)
  std::vector<int> inputs;           // slot per input, -1 when omitted
  std::vector<int> outputs;          // slot per output, -1 when omitted
  std::vector<int> implicit_inputs;  // outer-scope values its subgraphs read
  std::vector<int> release_after;    // slots last read by this node
  // Inputs (indices) whose value an earlier node produced and dies here: the
  // sequential executor lets the kernel write its output into their buffer
  // (KernelContext::take_input_for_output).
  std::vector<int> donatable_inputs;
  // For the parallel executor: the distinct slots it reads (inputs and
  // implicit inputs), how many distinct nodes produce them, and the distinct
  // nodes (plan indices) that read its outputs.
  std::vector<int> reads;
  int num_producers = 0;
  std::vector<int> consumers;
  // A Concat whose inputs may be written straight into its output.
  std::shared_ptr<InPlaceConcat> in_place_concat;
};

struct GraphInput {
  std::string name;
  int slot = -1;
  TypeInfo type;
  const Tensor* initializer = nullptr;  // default value of an overridable initializer
};

class CompiledGraph {
 public:
  std::shared_ptr<const Graph> graph;  // owns the nodes the plan points at
  int num_slots = 0;
  std::vector<std::string> slot_names;
  std::vector<std::pair<int, Tensor>> constants;  // initializers bound once, shared by every run
  std::vector<GraphInput> inputs;                 // graph inputs, in declaration order
  std::vector<int> output_slots;
  std::vector<int> outer_slots;  // slot of each outer-scope name, in the order given to compile
  std::vector<PlannedNode> nodes;
  // For the parallel executor: per slot, the number of nodes reading it (its
  // buffer is released when the last of them finishes; 0: released when its
  // producer finishes), -1 for graph outputs and constants (never released); and the nodes
  // with no producer, in plan order.
  std::vector<int> slot_readers;
  std::vector<int> roots;
  std::shared_ptr<BufferPool> buffers = std::make_shared<BufferPool>();  // intermediates, reused across runs
  std::vector<int> unbound_slots;  // every slot but the constants': cleared when a frame is given back
  mutable FramePool frames;
  // Per slot, the in-place Concat it is an input of (empty: there are none).
  std::vector<ConcatPart> concat_part_of;
  // Partitioning (when a device provider is in use): op type -> (nodes, why
  // they run on the CPU), and the number of copy nodes inserted.
  std::map<std::string, std::pair<int, std::string>> fallbacks;
  int copies = 0;
  std::string capture_blocker;  // why a CUDA graph cannot hold the plan ("" when it can)
};

// Everything compiling needs from the session.
struct CompileEnv {
  const Model* model = nullptr;
  const KernelRegistry* registry = nullptr;
  const SessionOptions* options = nullptr;
  std::string model_name;
  // Device providers in priority order (the CPU is implicitly last); empty:
  // everything on the CPU. Subgraphs always run on the CPU.
  std::vector<ExecutionProvider*> device_providers;
};

// Compiles `graph`. `outer_names` are values the graph may read from the
// enclosing graph (for subgraphs); the top-level graph has none.
std::shared_ptr<CompiledGraph> compile_graph(std::shared_ptr<const Graph> graph, const CompileEnv& env,
                                             const std::vector<std::string>& outer_names);

}  // namespace onyx
