#include "runtime/executor.h"

#include <algorithm>

#include "profile/profiler.h"

namespace onyx {

namespace {

class FrameContext final : public KernelContext {
 public:
  // plan: set when outputs may be placed in a Concat's output (in_place_concat.h).
  FrameContext(const PlannedNode& pn, std::vector<Value>& slots, const RunEnv& env, BufferPool* buffers,
               const CompiledGraph* plan)
      : pn_(pn), slots_(slots), env_(env), buffers_(buffers), plan_(plan) {}

  const Node& node() const override { return *pn_.node; }
  size_t num_inputs() const override { return pn_.inputs.size(); }
  bool has_input(size_t i) const override {
    return i < pn_.inputs.size() && pn_.inputs[i] >= 0 && !slots_[pn_.inputs[i]].is_none();
  }
  const Value& input_value(size_t i) const override {
    if (!has_input(i)) kernel_fail("input " + std::to_string(i) + " is missing");
    return slots_[pn_.inputs[i]];
  }
  size_t num_outputs() const override { return pn_.outputs.size(); }
  bool wants_output(size_t i) const override { return i < pn_.outputs.size() && pn_.outputs[i] >= 0; }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    Value& v = output_slot(i);
    if (pn_.ep) v = Value(pn_.ep->make_tensor(dtype, shape));
    else if (plan_ && pn_.outputs[i] >= 0) v = Value(make_slot_tensor(*plan_, slots_, pn_.outputs[i], dtype, shape, buffers_));
    else v = Value(buffers_ ? buffers_->make(dtype, shape) : Tensor(dtype, shape));
    return v.tensor();
  }
  void set_output(size_t i, Value value) override { output_slot(i) = std::move(value); }
  // Only in the sequential executor (plan_ set): there no other node can be
  // reading the input while this one writes.
  Tensor* take_input_for_output(size_t in, size_t out, DataType dtype, const Shape& shape) override {
    // (donatable_inputs is empty for nodes on a device provider)
    if (!plan_ || out >= pn_.outputs.size() || pn_.outputs[out] < 0) return nullptr;
    if (std::find(pn_.donatable_inputs.begin(), pn_.donatable_inputs.end(), static_cast<int>(in)) ==
        pn_.donatable_inputs.end())
      return nullptr;
    if (!plan_->concat_part_of.empty() && plan_->concat_part_of[pn_.outputs[out]].concat) return nullptr;
    Value& v = slots_[pn_.inputs[in]];
    if (!v.is_tensor()) return nullptr;
    const Tensor& t = v.tensor();
    if (t.dtype() != dtype || t.shape() != shape || t.device().type != DeviceType::CPU ||
        t.holder().use_count() != 1)
      return nullptr;
    output_slot(out) = v;  // the input slot keeps its reference until the node ends
    return &output_slot(out).tensor();
  }
  ThreadPool* thread_pool() const override { return env_.pool; }
  std::vector<Value> run_subgraph(const CompiledGraph& graph, std::vector<Value> inputs) const override {
    std::vector<Value> outer;
    outer.reserve(pn_.implicit_inputs.size());
    for (int s : pn_.implicit_inputs) outer.push_back(slots_[s]);
    return execute_graph(graph, std::move(inputs), outer, env_);
  }

 private:
  Value& output_slot(size_t i) {
    if (i >= pn_.outputs.size()) kernel_fail("output index " + std::to_string(i) + " is out of range");
    if (pn_.outputs[i] < 0) return scratch_;  // an omitted output: computed, then dropped
    return slots_[pn_.outputs[i]];
  }

  const PlannedNode& pn_;
  std::vector<Value>& slots_;
  const RunEnv& env_;
  BufferPool* buffers_;
  const CompiledGraph* plan_;
  Value scratch_;
};

[[noreturn]] void rethrow_with_node(const RunEnv& env, const Node& n, ErrorCode code, const std::string& msg) {
  if (msg.rfind("model '", 0) == 0) throw Error(code, msg);
  fail(code, "model '" + (env.model_name ? *env.model_name : std::string("?")) + "', node " + n.describe() + ": " + msg);
}

// One node; inlined into the sequential loop, called through run_node by the
// parallel executor. in_place_plan: the plan, when Concat inputs may be
// written in place (sequential runs only: producers running at once would
// race to allocate the shared output).
[[gnu::always_inline]] inline void run_node_inline(const PlannedNode& pn, std::vector<Value>& slots, const RunEnv& env,
                                                   BufferPool* buffers, const CompiledGraph* in_place_plan) {
  const int64_t prof_start = env.profiler ? env.profiler->now_ns() : 0;
  if (pn.in_place_concat && in_place_plan && concat_in_place(*pn.in_place_concat, slots)) {
    if (env.profiler) env.profiler->record_node(*pn.node, pn.provider, pn.inputs, pn.outputs, slots, prof_start);
    return;
  }
  FrameContext ctx(pn, slots, env, buffers, in_place_plan);
  const int timing = env.profiler && pn.ep ? pn.ep->timing_begin() : -1;
  try {
    pn.kernel->run(ctx);
    if (timing >= 0) env.profiler->record_kernel(*pn.node, pn.provider, prof_start, pn.ep->timing_end(timing));
  } catch (const Error& e) {
    rethrow_with_node(env, *pn.node, e.code(), e.what());
  } catch (const std::exception& e) {
    rethrow_with_node(env, *pn.node, ErrorCode::RuntimeException, e.what());
  }
  if (pn.in_place_concat && in_place_plan) learn_concat_layout(*pn.in_place_concat, slots);
  for (size_t k = 0; k < pn.outputs.size(); ++k)
    if (pn.outputs[k] >= 0 && slots[pn.outputs[k]].is_none())
      rethrow_with_node(env, *pn.node, ErrorCode::RuntimeException,
                        "the kernel did not produce output " + std::to_string(k) + " ('" + pn.node->outputs[k] + "')");
  if (env.profiler) env.profiler->record_node(*pn.node, pn.provider, pn.inputs, pn.outputs, slots, prof_start);
}

}  // namespace

void run_node(const PlannedNode& pn, std::vector<Value>& slots, const RunEnv& env, BufferPool* buffers) {
  run_node_inline(pn, slots, env, buffers, nullptr);
}

std::vector<Value> FramePool::take(const CompiledGraph& plan) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      std::vector<Value> frame = std::move(free_.back());
      free_.pop_back();
      return frame;
    }
  }
  std::vector<Value> frame(plan.num_slots);
  for (auto& [slot, t] : plan.constants) frame[slot] = Value(t);
  return frame;
}

void FramePool::give_back(const CompiledGraph& plan, std::vector<Value> frame) {
  for (int s : plan.unbound_slots) frame[s] = Value();
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(frame));
}

BoundFrame::BoundFrame(const CompiledGraph& plan, std::vector<Value>& inputs, const std::vector<Value>& outer)
    : plan_(plan), slots_(plan.frames.take(plan)) {
  for (size_t i = 0; i < plan.outer_slots.size() && i < outer.size(); ++i) slots_[plan.outer_slots[i]] = outer[i];
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const GraphInput& in = plan.inputs[i];
    if (i < inputs.size() && !inputs[i].is_none()) slots_[in.slot] = std::move(inputs[i]);
    else if (in.initializer) slots_[in.slot] = Value(*in.initializer);
  }
}

BoundFrame::~BoundFrame() { plan_.frames.give_back(plan_, std::move(slots_)); }

std::vector<Value> execute_graph(const CompiledGraph& plan, std::vector<Value> inputs, const std::vector<Value>& outer,
                                 const RunEnv& env) {
  BoundFrame frame(plan, inputs, outer);
  std::vector<Value>& slots = frame.slots();
  for (const PlannedNode& pn : plan.nodes) {
    run_node_inline(pn, slots, env, plan.buffers.get(), &plan);
    for (int s : pn.release_after) slots[s] = Value();
  }
  std::vector<Value> out;
  out.reserve(plan.output_slots.size());
  for (int s : plan.output_slots) out.push_back(slots[s]);
  return out;
}

}  // namespace onyx
