// Runs one CPU kernel on given inputs, without a session, for kernel unit tests.
//   auto out = run_op(make_node("Add", {"a", "b"}, {"y"}), {a, b});
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "kernels/kernel.h"
#include "runtime/node_evaluator.h"

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

// A float tensor of shape s with small repeating values (multiples of 1/8 in
// [-11/8, 11/8]) that depend on seed.
inline Tensor pattern(const Shape& s, int seed) {
  Tensor t(DataType::Float, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(((i * 37 + seed * 11) % 23) - 11) / 8.0f;
  return t;
}

inline Attribute attr_int(int64_t v) { Attribute a; a.type = AttrType::Int; a.i = v; return a; }
inline Attribute attr_float(float v) { Attribute a; a.type = AttrType::Float; a.f = v; return a; }
inline Attribute attr_string(std::string v) { Attribute a; a.type = AttrType::String; a.s = std::move(v); return a; }
inline Attribute attr_ints(std::vector<int64_t> v) { Attribute a; a.type = AttrType::Ints; a.ints = std::move(v); return a; }
inline Attribute attr_floats(std::vector<float> v) { Attribute a; a.type = AttrType::Floats; a.floats = std::move(v); return a; }
inline Attribute attr_strings(std::vector<std::string> v) { Attribute a; a.type = AttrType::Strings; a.strings = std::move(v); return a; }
inline Attribute attr_tensor(Tensor t) { Attribute a; a.type = AttrType::Tensor; a.t = std::move(t); return a; }

// Runs `node` at `opset` on the CPU registry with any values as inputs.
inline std::vector<Value> run_op_values(const Node& node, const std::vector<Value>& inputs, int64_t opset = 17,
                                        ThreadPool* pool = nullptr) {
  return evaluate_node(node, opset, inputs, cpu_kernel_registry(), pool);
}

// Runs `node` at `opset` on the CPU registry. Inputs given as tensors; an
// undefined Tensor marks an omitted optional input. `pool`: the kernel's intra-op threads.
inline std::vector<Tensor> run_op(const Node& node, const std::vector<Tensor>& inputs, int64_t opset = 17,
                                  ThreadPool* pool = nullptr) {
  std::vector<Value> values;
  for (auto& t : inputs) {
    if (t.defined()) values.emplace_back(t);
    else values.emplace_back();
  }
  std::vector<Tensor> out;
  for (auto& v : run_op_values(node, values, opset, pool)) out.push_back(v.is_tensor() ? v.tensor() : Tensor());
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
