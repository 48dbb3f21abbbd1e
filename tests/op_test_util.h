// Runs one CPU kernel on given inputs, without a session, for kernel unit tests.
//   auto out = run_op(make_node("Add", {"a", "b"}, {"y"}), {a, b});
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "kernels/kernel.h"

namespace onyx::test {

inline Node make_node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                      std::map<std::string, Attribute> attrs = {}, const std::string& domain = "") {
  Node n;
  n.name = op + "_node";
  n.op_type = op;
  n.domain = domain;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attrs);
  return n;
}

inline Attribute attr_int(int64_t v) { Attribute a; a.type = AttrType::Int; a.i = v; return a; }
inline Attribute attr_float(float v) { Attribute a; a.type = AttrType::Float; a.f = v; return a; }
inline Attribute attr_string(std::string v) { Attribute a; a.type = AttrType::String; a.s = std::move(v); return a; }
inline Attribute attr_ints(std::vector<int64_t> v) { Attribute a; a.type = AttrType::Ints; a.ints = std::move(v); return a; }
inline Attribute attr_floats(std::vector<float> v) { Attribute a; a.type = AttrType::Floats; a.floats = std::move(v); return a; }
inline Attribute attr_tensor(Tensor t) { Attribute a; a.type = AttrType::Tensor; a.t = std::move(t); return a; }

class SimpleContext final : public KernelContext {
 public:
  SimpleContext(const Node& node, std::vector<Value> inputs) : node_(node), inputs_(std::move(inputs)) {
    outputs_.resize(node.outputs.size());
  }
  const Node& node() const override { return node_; }
  size_t num_inputs() const override { return node_.inputs.size(); }
  bool has_input(size_t i) const override {
    return i < node_.inputs.size() && !node_.inputs[i].empty() && i < inputs_.size() && !inputs_[i].is_none();
  }
  const Value& input_value(size_t i) const override { return inputs_.at(i); }
  size_t num_outputs() const override { return node_.outputs.size(); }
  bool wants_output(size_t i) const override { return i < node_.outputs.size() && !node_.outputs[i].empty(); }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    outputs_.at(i) = Value(Tensor(dtype, shape));
    return outputs_[i].tensor();
  }
  void set_output(size_t i, Value v) override { outputs_.at(i) = std::move(v); }
  ThreadPool* thread_pool() const override { return nullptr; }
  std::vector<Value> run_subgraph(const CompiledGraph&, std::vector<Value>) const override {
    kernel_fail("subgraphs are not supported by the single-op test harness");
  }
  std::vector<Value>& outputs() { return outputs_; }

 private:
  const Node& node_;
  std::vector<Value> inputs_;
  std::vector<Value> outputs_;
};

// Runs `node` at `opset` on the CPU registry. Inputs given as tensors; an
// undefined Tensor marks an omitted optional input.
inline std::vector<Tensor> run_op(const Node& node, const std::vector<Tensor>& inputs, int64_t opset = 17) {
  const KernelDef* def = cpu_kernel_registry().find(node, opset);
  if (!def) throw Error(ErrorCode::NotImplemented, "no CPU kernel for " + node.op_type);
  std::vector<const Tensor*> constants(node.inputs.size(), nullptr);
  KernelInitContext init(node, opset, constants, [](const std::string&) -> std::shared_ptr<const CompiledGraph> {
    kernel_fail("subgraphs are not supported by the single-op test harness");
  });
  auto kernel = def->factory(init);
  std::vector<Value> values;
  for (auto& t : inputs) values.push_back(t.defined() ? Value(t) : Value());
  SimpleContext ctx(node, values);
  kernel->run(ctx);
  std::vector<Tensor> out;
  for (auto& v : ctx.outputs()) out.push_back(v.is_tensor() ? v.tensor() : Tensor());
  return out;
}

template <class T>
std::vector<T> to_vector(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

inline void expect_near(const Tensor& t, const std::vector<float>& expected, float tol = 1e-5f) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t.float_at(i), expected[i], tol * std::max(1.0f, std::abs(expected[i]))) << "at index " << i;
}

}  // namespace onyx::test
