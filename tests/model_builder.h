// Small ONNX models built in memory for session and loader tests.
#pragma once
#include <onnx/onnx_pb.h>

#include <random>
#include <string>
#include <vector>

namespace onyx::test {

inline onnx::ValueInfoProto tensor_info(const std::string& name, int elem_type, const std::vector<int64_t>& dims,
                                        const std::vector<std::string>& symbols = {}) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (dims[i] >= 0) d->set_dim_value(dims[i]);
    else d->set_dim_param(i < symbols.size() ? symbols[i] : "N");
  }
  return vi;
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                                 std::vector<std::string> out, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + std::to_string(g->node_size()) : name);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

// A graph attribute (an If branch, a Loop / Scan body) named `name`, its graph named so too.
inline onnx::GraphProto* add_graph_attr(onnx::NodeProto* n, const std::string& name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

inline void add_ints_attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

inline void add_float_attr(onnx::NodeProto* n, const std::string& name, float value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

inline void add_int_attr(onnx::NodeProto* n, const std::string& name, int64_t value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

inline onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (auto d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

inline onnx::ModelProto make_model(int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

// y = Relu(x + b), x: float[N, 3], b: float[3] initializer
inline onnx::ModelProto add_relu_model() {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {-1, 3});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {-1, 3});
  *g->add_initializer() = float_tensor("b", {3}, {1.0f, -1.0f, 0.5f});
  add_node(g, "Add", {"x", "b"}, {"s"}, "add");
  add_node(g, "Relu", {"s"}, {"y"}, "relu");
  return m;
}

// An integer tensor of any ONNX element type stored in int32_data (8- and
// 16-bit integers, int32, bool).
inline onnx::TensorProto int_tensor(const std::string& name, int type, const std::vector<int64_t>& dims,
                                    const std::vector<int32_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (auto d : dims) t.add_dims(d);
  for (int32_t v : values) t.add_int32_data(v);
  return t;
}

// n seeded uniform integers in [lo, hi].
inline std::vector<int32_t> random_ints(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

inline std::string serialize(const onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

}  // namespace onyx::test
