// Running one node outside a graph: constant folding at load, and kernel tests.
#pragma once
#include <vector>

#include "kernels/registry.h"

namespace onyx {

// A KernelContext over plain vectors, for running one kernel by hand.
class SingleNodeContext final : public KernelContext {
 public:
  SingleNodeContext(const Node& node, const std::vector<Value>& inputs, ThreadPool* pool = nullptr)
      : node_(node), inputs_(inputs), outputs_(node.outputs.size()), pool_(pool) {}
  const Node& node() const override { return node_; }
  size_t num_inputs() const override { return node_.inputs.size(); }
  bool has_input(size_t i) const override {
    return i < node_.inputs.size() && !node_.inputs[i].empty() && i < inputs_.size() && !inputs_[i].is_none();
  }
  const Value& input_value(size_t i) const override {
    if (!has_input(i)) kernel_fail("input " + std::to_string(i) + " is missing");
    return inputs_[i];
  }
  size_t num_outputs() const override { return node_.outputs.size(); }
  bool wants_output(size_t i) const override { return i < node_.outputs.size() && !node_.outputs[i].empty(); }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    outputs_.at(i) = Value(Tensor(dtype, shape));
    return outputs_[i].tensor();
  }
  void set_output(size_t i, Value v) override { outputs_.at(i) = std::move(v); }
  ThreadPool* thread_pool() const override { return pool_; }
  std::vector<Value> run_subgraph(const CompiledGraph&, std::vector<Value>) const override {
    kernel_fail("subgraphs cannot run outside a session");
  }
  std::vector<Value>& outputs() { return outputs_; }

 private:
  const Node& node_;
  const std::vector<Value>& inputs_;
  std::vector<Value> outputs_;
  ThreadPool* pool_;
};


// Creates the node's kernel from `registry` (every input is offered to it as a
// constant) and runs it once. Throws when there is no kernel or it fails.
std::vector<Value> evaluate_node(const Node& node, int64_t opset, const std::vector<Value>& inputs,
                                 const KernelRegistry& registry, ThreadPool* pool = nullptr);

}  // namespace onyx
