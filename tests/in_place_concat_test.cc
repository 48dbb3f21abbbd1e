// Concat inputs written straight into the Concat's output
// (runtime/in_place_concat.h): which Concats qualify, that the layout is
// learned on the first run and used from the second, and that results stay
// right when shapes change or the slices can't be used.
#include <gtest/gtest.h>

#include "cpu/cpu_provider.h"
#include "model_builder.h"
#include "onnx/loader.h"
#include "runtime/executor.h"

namespace onyx {
namespace {

struct Compiled {
  Model model;
  std::shared_ptr<CompiledGraph> plan;
  SessionOptions options;
};

std::unique_ptr<Compiled> compile(const onnx::ModelProto& m) {
  auto c = std::make_unique<Compiled>();
  std::string bytes = test::serialize(m);
  c->model = load_model_from_bytes(bytes.data(), bytes.size(), "concat");
  CompileEnv env{&c->model, &cpu_kernel_registry(), &c->options, "concat", {}};
  c->plan = compile_graph(std::make_shared<const Graph>(c->model.graph), env, {});
  return c;
}

const PlannedNode& node_named(const CompiledGraph& plan, const std::string& name) {
  for (auto& pn : plan.nodes)
    if (pn.node->name == name) return pn;
  throw std::runtime_error("no node " + name);
}

Tensor input_of(const Shape& shape, float start) {
  Tensor t(DataType::Float, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i % 13) - 6.0f;
  return t;
}

Tensor run(const CompiledGraph& plan, const Tensor& x) {
  RunEnv env;
  return execute_graph(plan, {Value(x)}, {}, env)[0].tensor();
}

// y = Concat(Concat(Relu(x), Neg(x)), Abs(x)) along `axis`, or the same
// with Neg(x) also read by an Add when `shared_input`.
onnx::ModelProto nested_concat_model(int64_t axis, bool shared_input = false) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = test::tensor_info("x", onnx::TensorProto::FLOAT, {-1, -1, 16}, {"N", "C"});
  *g->add_output() = test::tensor_info("y", onnx::TensorProto::FLOAT, {-1, -1, 16}, {"N", "C3"});
  test::add_node(g, "Relu", {"x"}, {"a"}, "relu");
  test::add_node(g, "Neg", {"x"}, {"b"}, "neg");
  test::add_node(g, "Abs", {"x"}, {"c"}, "abs");
  auto* inner = test::add_node(g, "Concat", {"a", "b"}, {"ab"}, "inner");
  auto* outer = test::add_node(g, "Concat", {"ab", "c"}, {"y"}, "outer");
  for (auto* n : {inner, outer}) {
    auto* at = n->add_attribute();
    at->set_name("axis");
    at->set_type(onnx::AttributeProto::INT);
    at->set_i(axis);
  }
  if (shared_input) {
    *g->add_output() = test::tensor_info("z", onnx::TensorProto::FLOAT, {-1, -1, 16}, {"N", "C"});
    test::add_node(g, "Add", {"b", "x"}, {"z"}, "add");
  }
  return m;
}

// The reference: the same concatenation done by hand on [N, C, 16] inputs.
Tensor expected_nested(const Tensor& x, int64_t axis) {
  const int64_t N = x.shape()[0], C = x.shape()[1], D = 16;
  const float* p = x.data<float>();
  auto part = [&](int k, float v) { return k == 0 ? std::max(v, 0.0f) : k == 1 ? -v : std::abs(v); };
  Shape out = axis == 1 ? Shape{N, 3 * C, D} : Shape{3 * N, C, D};
  Tensor y(DataType::Float, out);
  float* q = y.data<float>();
  for (int k = 0; k < 3; ++k)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t d = 0; d < D; ++d) {
          float v = part(k, p[(n * C + c) * D + d]);
          if (axis == 1) q[(n * 3 * C + k * C + c) * D + d] = v;
          else q[((k * N + n) * C + c) * D + d] = v;
        }
  return y;
}

void expect_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << "element " << i;
}

TEST(InPlaceConcat, NestedConcatsAreLearnedThenWrittenInPlace) {
  auto c = compile(nested_concat_model(1));
  const PlannedNode& inner = node_named(*c->plan, "inner");
  const PlannedNode& outer = node_named(*c->plan, "outer");
  ASSERT_TRUE(inner.in_place_concat && outer.in_place_concat);
  EXPECT_EQ(inner.in_place_concat->layout.load(), nullptr);
  Tensor x = input_of({1, 4, 16}, 0.5f);
  expect_equal(run(*c->plan, x), expected_nested(x, 1));
  const ConcatLayout* layout = outer.in_place_concat->layout.load();
  ASSERT_NE(layout, nullptr);  // learned by the first run
  EXPECT_EQ(layout->out_shape, (Shape{1, 12, 16}));
  EXPECT_EQ(layout->part_offsets, (std::vector<size_t>{0, 8 * 16 * 4}));
  for (int i = 0; i < 3; ++i) expect_equal(run(*c->plan, x), expected_nested(x, 1));  // in place from now on
  // a different channel count: the recorded slices don't fit, the Concats copy
  Tensor wider = input_of({1, 8, 16}, -1.5f);
  expect_equal(run(*c->plan, wider), expected_nested(wider, 1));
  expect_equal(run(*c->plan, x), expected_nested(x, 1));
}

TEST(InPlaceConcat, InputsInSeveralPiecesAreCopied) {
  // batch 2 along axis 1: each input is two pieces of the output, no layout
  auto c = compile(nested_concat_model(1));
  Tensor x = input_of({2, 4, 16}, 2.0f);
  for (int i = 0; i < 2; ++i) expect_equal(run(*c->plan, x), expected_nested(x, 1));
  EXPECT_EQ(node_named(*c->plan, "outer").in_place_concat->layout.load(), nullptr);
  // along axis 0 (negative axis -3) the same inputs are contiguous slices
  auto c0 = compile(nested_concat_model(-3));
  for (int i = 0; i < 3; ++i) expect_equal(run(*c0->plan, x), expected_nested(x, 0));
  EXPECT_NE(node_named(*c0->plan, "outer").in_place_concat->layout.load(), nullptr);
}

TEST(InPlaceConcat, InputsReadElsewhereDontQualify) {
  auto c = compile(nested_concat_model(1, /*shared_input=*/true));
  EXPECT_FALSE(node_named(*c->plan, "inner").in_place_concat);  // b is also read by the Add
  EXPECT_TRUE(node_named(*c->plan, "outer").in_place_concat);
  Tensor x = input_of({1, 4, 16}, 1.0f);
  for (int i = 0; i < 3; ++i) {
    RunEnv env;
    auto out = execute_graph(*c->plan, {Value(x)}, {}, env);
    expect_equal(out[0].tensor(), expected_nested(x, 1));
    for (int64_t k = 0; k < x.numel(); ++k) ASSERT_EQ(out[1].tensor().data<float>()[k], 0.0f);  // -x + x
  }
}

}  // namespace
}  // namespace onyx
