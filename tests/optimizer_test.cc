// Optimizer passes checked end to end: each model runs at level disable and
// at the level under test with the same inputs; outputs must agree and the
// expected rewrite must have fired (optimization_report).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <tuple>

#include "model_builder.h"
#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_conv.h"
#include "onyx/session.h"

namespace onyx {
namespace {

using test::add_int_attr;
using test::add_ints_attr;
using test::add_node;
using test::float_tensor;
using test::tensor_info;

std::unique_ptr<Session> load(const onnx::ModelProto& m, OptimizationLevel level) {
  std::string bytes = test::serialize(m);
  SessionOptions o;
  o.optimization_level = level;
  return Session::from_bytes(bytes.data(), bytes.size(), o);
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Runs at disable and at `level`; checks outputs match to `tol`; returns the report.
OptimizationReport check_same(const onnx::ModelProto& m, const Feeds& feeds, OptimizationLevel level, float tol = 1e-5f) {
  auto ref = load(m, OptimizationLevel::Disable)->run(feeds);
  auto s = load(m, level);
  auto got = s->run(feeds);
  EXPECT_EQ(ref.size(), got.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    const Tensor &a = ref[k].tensor(), &b = got[k].tensor();
    EXPECT_EQ(a.shape(), b.shape());
    for (int64_t i = 0; i < a.numel(); ++i)
      EXPECT_NEAR(b.float_at(i), a.float_at(i), tol * std::max(1.0, std::abs(a.float_at(i)))) << "output " << k << " at " << i;
  }
  return s->optimization_report();
}

// A float16 graph (onnxconverter-common's kind: a Cast to float16 after a float
// input, float16 weights) computes in float from level basic: the nodes read
// the widened weights and the Cast's float input, and one rounding to float16
// happens at the float16 output. Graph inputs and outputs keep their types.
TEST(Optimizer, Float16GraphComputesInFloat) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("xf", onnx::TensorProto::FLOAT, {1, 4, 6, 6});
  *g->add_input() = tensor_info("h", onnx::TensorProto::FLOAT16, {1, 3, 6, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT16, {1, 3, 6, 6});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {1, 3, 6, 6});
  *g->add_output() = tensor_info("s", onnx::TensorProto::INT64, {4});
  const std::vector<float> w = random_values(108, 21), b = {0.25f, -0.5f, 0.125f};
  auto half_bits = [](const std::vector<float>& v) {
    std::vector<int32_t> bits;
    for (float f : v) bits.push_back(Float16(f).bits);
    return bits;
  };
  *g->add_initializer() = test::int_tensor("w", onnx::TensorProto::FLOAT16, {3, 4, 3, 3}, half_bits(w));
  *g->add_initializer() = test::int_tensor("b", onnx::TensorProto::FLOAT16, {3}, half_bits(b));
  add_int_attr(add_node(g, "Cast", {"xf"}, {"x"}), "to", onnx::TensorProto::FLOAT16);
  add_ints_attr(add_node(g, "Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c"}, {"r"});
  add_node(g, "Add", {"r", "h"}, {"y"});
  add_int_attr(add_node(g, "Cast", {"r"}, {"z"}), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Shape", {"r"}, {"s"});
  const std::vector<float> x = random_values(144, 22), hv = random_values(108, 23);
  Tensor h(DataType::Float16, {1, 3, 6, 6});
  for (size_t i = 0; i < hv.size(); ++i) h.data<Float16>()[i] = Float16(hv[i]);
  Feeds feeds = {{"xf", Value(Tensor::from_vector<float>(x, {1, 4, 6, 6}))}, {"h", Value(h)}};
  auto s = load(m, OptimizationLevel::Basic);
  auto out = s->run(feeds);
  EXPECT_EQ(s->optimization_report().fusions.at("float16 computed in float"), 4);  // Conv, Relu, Add, Shape
  ASSERT_EQ(out[0].tensor().dtype(), DataType::Float16);
  ASSERT_EQ(out[1].tensor().dtype(), DataType::Float);
  const Tensor& shape = out[2].tensor();
  EXPECT_EQ(std::vector<int64_t>(shape.data<int64_t>(), shape.data<int64_t>() + shape.numel()),
            (std::vector<int64_t>{1, 3, 6, 6}));
  // In double from the float input (not rounded to float16) and the float16 weights.
  for (int64_t m_ = 0; m_ < 3; ++m_)
    for (int64_t oy = 0; oy < 6; ++oy)
      for (int64_t ox = 0; ox < 6; ++ox) {
        double acc = static_cast<float>(Float16(b[m_]));
        for (int64_t c = 0; c < 4; ++c)
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
              if (iy < 0 || iy >= 6 || ix < 0 || ix >= 6) continue;
              acc += double(x[(c * 6 + iy) * 6 + ix]) * double(float(Float16(w[((m_ * 4 + c) * 3 + ky) * 3 + kx])));
            }
        const double relu = std::max(acc, 0.0);
        const int64_t i = (m_ * 6 + oy) * 6 + ox;
        EXPECT_NEAR(out[1].tensor().data<float>()[i], relu, 1e-5 * std::max(1.0, relu)) << "z at " << i;
        const double want = float(Float16(float(relu + double(float(h.data<Float16>()[i])))));
        EXPECT_EQ(float(out[0].tensor().data<Float16>()[i]), want) << "y at " << i;  // rounded once
      }
}

TEST(Optimizer, ConvBatchNormAndReluFuse) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 2, 5, 5});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 3, 5, 5});
  *g->add_initializer() = float_tensor("w", {3, 2, 3, 3}, random_values(54, 1));
  *g->add_initializer() = float_tensor("scale", {3}, {1.5f, 0.5f, 2.0f});
  *g->add_initializer() = float_tensor("bias", {3}, {0.1f, -0.2f, 0.3f});
  *g->add_initializer() = float_tensor("mean", {3}, {0.2f, 0.0f, -0.5f});
  *g->add_initializer() = float_tensor("var", {3}, {1.0f, 4.0f, 0.25f});
  auto* conv = add_node(g, "Conv", {"x", "w"}, {"c"});
  add_ints_attr(conv, "pads", {1, 1, 1, 1});
  add_node(g, "BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"b"});
  add_node(g, "Relu", {"b"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(50, 2), {1, 2, 5, 5}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-4f);
  EXPECT_EQ(r.fusions["Conv+BatchNormalization"], 1);
  EXPECT_EQ(r.fusions["Conv+Relu"], 1);
  // Basic folds the batch norm too (a standard Conv, as onnxruntime's basic
  // level does), but leaves the activation to extended's FusedConv.
  OptimizationReport basic = check_same(m, feeds, OptimizationLevel::Basic, 1e-4f);
  EXPECT_EQ(basic.fusions["Conv+BatchNormalization"], 1);
  EXPECT_EQ(basic.fusions.count("Conv+Relu"), 0u);
}

// A per-channel or scalar Mul after a conv (a batch norm's scale, as tf2onnx leaves it after
// Keras' depthwise convolutions) goes into the weights and bias, a scalar Add into the bias;
// one that is not per channel (varying along width) stays.
TEST(Optimizer, ConvMulFoldsIntoWeights) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 5, 5});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 3, 5, 5});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {1, 3, 5, 5});
  *g->add_initializer() = float_tensor("dw", {3, 1, 3, 3}, random_values(27, 6));
  *g->add_initializer() = float_tensor("db", {3}, {0.5f, -1.0f, 0.25f});
  *g->add_initializer() = float_tensor("w", {3, 3, 1, 1}, random_values(9, 7));
  *g->add_initializer() = float_tensor("s", {1, 3, 1, 1}, {2.0f, -0.5f, 3.0f});
  *g->add_initializer() = float_tensor("half", {}, {0.5f});
  *g->add_initializer() = float_tensor("cols", {5}, {1, 2, 3, 4, 5});
  auto* dw = add_node(g, "Conv", {"x", "dw", "db"}, {"d"});
  add_int_attr(dw, "group", 3);
  add_ints_attr(dw, "pads", {1, 1, 1, 1});
  add_node(g, "Mul", {"s", "d"}, {"ds"});       // per channel, constant first
  add_node(g, "Conv", {"ds", "w"}, {"c"});
  add_node(g, "Mul", {"c", "half"}, {"ch"});    // scalar, no bias
  add_node(g, "Add", {"half", "ch"}, {"y"});    // scalar Add (PP-LCNetV3's affine blocks), constant first
  add_node(g, "Conv", {"x", "w"}, {"e"});
  add_node(g, "Mul", {"e", "cols"}, {"z"});     // along width: not foldable
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(75, 8), {1, 3, 5, 5}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["Conv+Mul"], 2);
  EXPECT_EQ(r.fusions["Conv+Add"], 1);
}

// GCNet's global context block: x + Conv(GlobalAveragePool(x)). The Add broadcasts the
// conv's [C, 1, 1] output up to x's shape, so it is no residual of the fused conv (the
// blocked conv once refused to run it); a same-shape residual still fuses.
TEST(Optimizer, BroadcastingAddIsNoConvResidual) {
  const int64_t C = 32;
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, C, 6, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, C, 6, 6});
  *g->add_initializer() = float_tensor("w", {C, C, 1, 1}, random_values(C * C, 4));
  *g->add_initializer() = float_tensor("w3", {C, C, 3, 3}, random_values(C * C * 9, 5));
  add_ints_attr(add_node(g, "Conv", {"x", "w3"}, {"c3"}), "pads", {1, 1, 1, 1});
  add_node(g, "GlobalAveragePool", {"c3"}, {"pooled"});
  add_node(g, "Conv", {"pooled", "w"}, {"context"});
  add_node(g, "Add", {"c3", "context"}, {"with_context"});  // broadcasts context up
  add_node(g, "Conv", {"with_context", "w"}, {"c"});
  add_node(g, "Add", {"c", "x"}, {"sum"});                    // a same-shape residual
  add_node(g, "Relu", {"sum"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(C * 36, 6), {1, C, 6, 6}))}};
  // (1e-3: the 3x3 conv may run as Winograd at level all)
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-3f);
  EXPECT_EQ(r.fusions["Conv+Add+Relu"], 1);
  EXPECT_EQ(r.fusions["Conv+Add"], 0);
}

// 1x1 heads of a few output channels (segmentation logits) run as one GEMM over the plain
// tensor, also with a residual and an activation fused in; results as unoptimized.
TEST(Optimizer, PointwiseHeadsMatchUnfused) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3, 9, 9});
  *g->add_input() = tensor_info("r", onnx::TensorProto::FLOAT, {2, 2, 9, 9});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 2, 9, 9});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {2, 2, 9, 9});
  *g->add_initializer() = float_tensor("w1", {32, 3, 3, 3}, random_values(864, 9));
  *g->add_initializer() = float_tensor("w2", {2, 32, 1, 1}, random_values(64, 10));
  *g->add_initializer() = float_tensor("b2", {2}, {0.25f, -0.5f});
  *g->add_initializer() = float_tensor("w3", {2, 32, 1, 1}, random_values(64, 11));
  add_ints_attr(add_node(g, "Conv", {"x", "w1"}, {"f"}), "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"f"}, {"fr"});
  add_node(g, "Conv", {"fr", "w2", "b2"}, {"h"});
  add_node(g, "Sigmoid", {"h"}, {"y"});
  add_node(g, "Conv", {"fr", "w3"}, {"k"});
  add_node(g, "Add", {"k", "r"}, {"kr"});
  add_node(g, "Relu", {"kr"}, {"z"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(486, 12), {2, 3, 9, 9}))},
                 {"r", Value(Tensor::from_vector<float>(random_values(324, 13), {2, 2, 9, 9}))}};
  check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  check_same(m, feeds, OptimizationLevel::All, 1e-5f);
}

// SiLU as exported, x * Sigmoid(x), after a conv (either Mul operand order)
// becomes the conv's Swish activation; a Sigmoid whose input has another
// reader stays a separate node.
TEST(Optimizer, ConvSigmoidMulFusesToSwish) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 6, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 4, 6, 6});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {1, 4, 6, 6});
  *g->add_initializer() = float_tensor("w1", {4, 3, 1, 1}, random_values(12, 4));
  *g->add_initializer() = float_tensor("w2", {4, 4, 1, 1}, random_values(16, 5));
  add_node(g, "Conv", {"x", "w1"}, {"c1"});
  add_node(g, "Sigmoid", {"c1"}, {"s1"});
  add_node(g, "Mul", {"s1", "c1"}, {"y"});
  add_node(g, "Conv", {"y", "w2"}, {"c2"});
  add_node(g, "Sigmoid", {"c2"}, {"s2"});
  add_node(g, "Mul", {"c2", "s2"}, {"m2"});
  add_node(g, "Add", {"m2", "c2"}, {"z"});  // c2 has a third reader: no fusion
  std::vector<float> x = random_values(108, 6);
  for (float& v : x) v *= 4.0f;  // reach the tails of the sigmoid
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(x, {1, 3, 6, 6}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["Conv+Swish"], 1);
}

// HardSwish as Paddle and TensorFlow export it, x * HardSigmoid(x) with alpha 0.1666667,
// becomes the conv's HardSwish activation with that alpha and beta; also with a beta
// oneDNN's hardswish cannot express (the generic epilogue then). Values as unfused.
TEST(Optimizer, ConvHardSigmoidMulFusesToHardSwish) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 7, 7});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 16, 7, 7});
  *g->add_initializer() = float_tensor("w1", {16, 3, 3, 3}, random_values(432, 14));
  *g->add_initializer() = float_tensor("w2", {16, 16, 1, 1}, random_values(256, 15));
  add_ints_attr(add_node(g, "Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  auto* h1 = add_node(g, "HardSigmoid", {"c1"}, {"h1"});
  test::add_float_attr(h1, "alpha", 0.1666667f);
  test::add_float_attr(h1, "beta", 0.5f);
  add_node(g, "Mul", {"c1", "h1"}, {"m1"});
  add_node(g, "Conv", {"m1", "w2"}, {"c2"});
  auto* h2 = add_node(g, "HardSigmoid", {"c2"}, {"h2"});
  test::add_float_attr(h2, "alpha", 0.25f);
  test::add_float_attr(h2, "beta", 0.3f);
  add_node(g, "Mul", {"h2", "c2"}, {"y"});
  std::vector<float> x = random_values(147, 16);
  for (float& v : x) v *= 3.0f;  // both clamps of the gate
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(x, {1, 3, 7, 7}))}};
  // The outputs are sums of larger terms that cancel: two summation orders (oneDNN's
  // SSE4.1 kernels under ONYX_MAX_ISA=baseline) differ by up to 2e-5 there.
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 5e-5f);
  EXPECT_EQ(r.fusions["Conv+HardSwish"], 2);
  check_same(m, feeds, OptimizationLevel::All, 5e-5f);
}

// GELU (decomposed with Erf, as exported) after a conv becomes its activation, also in the
// blocked layout; values as unfused.
TEST(Optimizer, ConvGeluFuses) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 16, 6, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 16, 6, 6});
  *g->add_initializer() = float_tensor("w1", {32, 16, 1, 1}, random_values(512, 17));
  *g->add_initializer() = float_tensor("w2", {16, 32, 1, 1}, random_values(512, 18));
  *g->add_initializer() = float_tensor("sqrt2", {}, {1.41421356f});
  *g->add_initializer() = float_tensor("one", {}, {1.0f});
  *g->add_initializer() = float_tensor("half", {}, {0.5f});
  add_node(g, "Conv", {"x", "w1"}, {"c"});
  add_node(g, "Div", {"c", "sqrt2"}, {"d"});
  add_node(g, "Erf", {"d"}, {"e"});
  add_node(g, "Add", {"e", "one"}, {"a"});
  add_node(g, "Mul", {"c", "a"}, {"m"});
  add_node(g, "Mul", {"m", "half"}, {"gelu"});
  add_node(g, "Conv", {"gelu", "w2"}, {"y"});
  std::vector<float> x = random_values(576, 19);
  for (float& v : x) v *= 3.0f;
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(x, {1, 16, 6, 6}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["Conv+Gelu"], 1);
  check_same(m, feeds, OptimizationLevel::All, 1e-5f);
}

// HardSwish and HardSigmoid written out as Paddle exports them: a conv's
// x * Clip(x + 3, 0, 6) / 6 becomes x * HardSigmoid(x) and then the conv's
// HardSwish activation; Clip(y + 3, 0, 6) * (1/6) on a non-conv value (opset
// 10: Clip bounds as attributes) becomes a HardSigmoid. Values as before.
TEST(Optimizer, HardSwishFromClipForms) {
  for (int opset : {10, 13}) {
    auto m = test::make_model(opset);
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 16, 6, 6});
    *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 16, 6, 6});
    *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {1, 16, 6, 6});
    *g->add_initializer() = float_tensor("w", {16, 16, 1, 1}, random_values(256, 21));
    for (auto [name, v] : std::vector<std::pair<const char*, float>>{
             {"three", 3.0f}, {"zero", 0.0f}, {"six", 6.0f}, {"sixth", 1.0f / 6.0f}})
      *g->add_initializer() = float_tensor(name, {}, {v});
    auto clip = [&](const std::string& in, const std::string& out) {
      if (opset >= 11) return add_node(g, "Clip", {in, "zero", "six"}, {out});
      auto* n = add_node(g, "Clip", {in}, {out});
      test::add_float_attr(n, "min", 0.0f);
      test::add_float_attr(n, "max", 6.0f);
      return n;
    };
    add_node(g, "Conv", {"x", "w"}, {"c"});
    add_node(g, "Add", {"three", "c"}, {"c3"});
    clip("c3", "cc");
    add_node(g, "Mul", {"cc", "c"}, {"cm"});
    add_node(g, "Div", {"cm", "six"}, {"y"});
    add_node(g, "Add", {"x", "three"}, {"x3"});
    clip("x3", "xc");
    add_node(g, "Mul", {"xc", "sixth"}, {"z"});
    std::vector<float> x = random_values(576, 22);
    for (float& v : x) v *= 3.0f;
    Feeds feeds = {{"x", Value(Tensor::from_vector<float>(x, {1, 16, 6, 6}))}};
    OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
    EXPECT_EQ(r.fusions["HardSwish as x * HardSigmoid(x)"], 1) << "opset " << opset;
    EXPECT_EQ(r.fusions["HardSigmoid"], 1) << "opset " << opset;
    EXPECT_EQ(r.fusions["Conv+HardSwish"], 1) << "opset " << opset;
    check_same(m, feeds, OptimizationLevel::All, 1e-5f);
  }
}

// A depthwise conv with channel multiplier 2 (FastViT's downsampling), twice on one input:
// both read one repeated-channel Gather and run as plain depthwise convs; values as before.
TEST(Optimizer, DepthwiseMultiplierAsRepeatedChannels) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 16, 9, 9});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 64, 5, 5});
  *g->add_initializer() = float_tensor("w7", {32, 1, 7, 7}, random_values(32 * 49, 20));
  *g->add_initializer() = float_tensor("w3", {32, 1, 3, 3}, random_values(32 * 9, 21));
  for (auto [w, out, k] : {std::tuple{"w7", "a", 7}, std::tuple{"w3", "b", 3}}) {
    auto* conv = add_node(g, "Conv", {"x", w}, {out});
    add_int_attr(conv, "group", 16);
    add_ints_attr(conv, "strides", {2, 2});
    add_ints_attr(conv, "pads", {k / 2, k / 2, k / 2, k / 2});
  }
  add_int_attr(add_node(g, "Concat", {"a", "b"}, {"y"}), "axis", 1);  // summed, they would merge into one conv
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(16 * 81, 22), {1, 16, 9, 9}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-5f);
  if (dnnl_available()) {
    EXPECT_EQ(r.fusions["depthwise multiplier as repeated channels"], 2);
  }
}

// GroupNorm as PyTorch exports it (Reshape [0, G, -1], InstanceNormalization, Reshape back
// through Shape(x) or a constant) between convs stays in the blocked layout when each group
// is whole blocks (1 group of 32 channels, then 2 groups); 4 groups of 8 only with 8-lane blocks.
TEST(Optimizer, GroupNormBetweenConvsStaysBlocked) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 8, 6, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 32, 6, 6});
  *g->add_initializer() = float_tensor("w1", {32, 8, 3, 3}, random_values(32 * 72, 23));
  *g->add_initializer() = float_tensor("w2", {32, 32, 1, 1}, random_values(1024, 24));
  *g->add_initializer() = float_tensor("w3", {32, 32, 1, 1}, random_values(1024, 25));
  *g->add_initializer() = float_tensor("w4", {32, 32, 1, 1}, random_values(1024, 26));
  *g->add_initializer() = float_tensor("gamma", {32, 1, 1}, random_values(32, 27));
  *g->add_initializer() = float_tensor("beta", {32, 1, 1}, random_values(32, 28));
  *g->add_initializer() = test::int64_tensor("full_shape", {4}, {2, 32, 6, 6});
  add_ints_attr(add_node(g, "Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  // norm(input, groups, reshape back from Shape or the constant) -> Mul gamma -> Add beta
  auto group_norm = [&](const std::string& in, int64_t groups, bool from_shape, const std::string& out) {
    *g->add_initializer() = test::int64_tensor(out + "_groups", {3}, {0, groups, -1});
    *g->add_initializer() = float_tensor(out + "_ones", {groups}, std::vector<float>(groups, 1.0f));
    *g->add_initializer() = float_tensor(out + "_zeros", {groups}, std::vector<float>(groups, 0.0f));
    add_node(g, "Reshape", {in, out + "_groups"}, {out + "_r"});
    add_node(g, "InstanceNormalization", {out + "_r", out + "_ones", out + "_zeros"}, {out + "_n"});
    std::string shape = "full_shape";
    if (from_shape) add_node(g, "Shape", {in}, {shape = out + "_shape"});
    add_node(g, "Reshape", {out + "_n", shape}, {out + "_b"});
    add_node(g, "Mul", {out + "_b", "gamma"}, {out + "_m"});
    add_node(g, "Add", {out + "_m", "beta"}, {out});
  };
  group_norm("c1", 1, true, "n1");
  add_node(g, "Conv", {"n1", "w2"}, {"c2"});
  group_norm("c2", 2, false, "n2");
  add_node(g, "Conv", {"n2", "w3"}, {"c3"});
  group_norm("c3", 4, true, "n3");  // 8 channels per group: whole blocks only where blocks are 8 wide
  add_node(g, "Conv", {"n3", "w4"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(2 * 8 * 36, 29), {2, 8, 6, 6}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  EXPECT_EQ(r.fusions["GroupNorm (Reshape, InstanceNormalization) on blocked values"],
            dnnl_preferred_block() == 8 ? 3 : 2);
}

// Linear + BatchNorm1d as LeViT exports it (MatMul, Flatten to [rows, C], BatchNormalization,
// Reshape back through Shape of the MatMul's output), and on a 2-D MatMul directly: the scale
// goes into the weights, the BatchNormalization becomes an Add; values as unfused.
TEST(Optimizer, MatMulBatchNormFolds) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 5, 8});
  *g->add_input() = tensor_info("x2", onnx::TensorProto::FLOAT, {4, 8});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 5, 6});
  *g->add_output() = tensor_info("y2", onnx::TensorProto::FLOAT, {4, 6});
  *g->add_initializer() = float_tensor("w", {8, 6}, random_values(48, 30));
  *g->add_initializer() = float_tensor("w2", {8, 6}, random_values(48, 31));
  std::vector<float> var = random_values(6, 32);
  for (float& v : var) v = std::abs(v) + 0.2f;
  for (const char* k : {"1", "2"}) {
    *g->add_initializer() = float_tensor(std::string("scale") + k, {6}, random_values(6, 33));
    *g->add_initializer() = float_tensor(std::string("bias") + k, {6}, random_values(6, 34));
    *g->add_initializer() = float_tensor(std::string("mean") + k, {6}, random_values(6, 35));
    *g->add_initializer() = float_tensor(std::string("var") + k, {6}, var);
  }
  add_node(g, "MatMul", {"x", "w"}, {"mm"});
  add_int_attr(add_node(g, "Flatten", {"mm"}, {"flat"}), "axis", 2);
  add_node(g, "BatchNormalization", {"flat", "scale1", "bias1", "mean1", "var1"}, {"bn"});
  add_node(g, "Shape", {"mm"}, {"mm_shape"});
  add_node(g, "Reshape", {"bn", "mm_shape"}, {"y"});
  add_node(g, "MatMul", {"x2", "w2"}, {"mm2"});
  add_node(g, "BatchNormalization", {"mm2", "scale2", "bias2", "mean2", "var2"}, {"y2"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(80, 36), {2, 5, 8}))},
                 {"x2", Value(Tensor::from_vector<float>(random_values(32, 37), {4, 8}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["MatMul+BatchNormalization"], 2);
}

// DenseNet's pattern: a zero Pad before a pool (dropped, so the pool stays
// blocked), a Concat of blocked values, then BatchNormalization + Relu that no
// conv absorbs (a depthwise 1x1 NchwcConv with the Relu fused).
TEST(Optimizer, BlockedLayoutThroughZeroPadAndStandaloneBatchNorm) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 10, 10});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 16, 5, 5});
  *g->add_initializer() = float_tensor("w1", {32, 3, 1, 1}, random_values(96, 7));
  *g->add_initializer() = float_tensor("w2", {16, 32, 1, 1}, random_values(512, 8));
  *g->add_initializer() = float_tensor("w3", {16, 48, 1, 1}, random_values(768, 9));
  *g->add_initializer() = test::int64_tensor("zeros", {8}, {0, 0, 0, 0, 0, 0, 0, 0});
  std::vector<float> scale = random_values(48, 10), var = random_values(48, 11);
  for (float& v : var) v = std::abs(v) + 0.1f;
  *g->add_initializer() = float_tensor("scale", {48}, scale);
  *g->add_initializer() = float_tensor("bias", {48}, random_values(48, 12));
  *g->add_initializer() = float_tensor("mean", {48}, random_values(48, 13));
  *g->add_initializer() = float_tensor("var", {48}, var);
  add_node(g, "Conv", {"x", "w1"}, {"c1"});
  add_node(g, "Pad", {"c1", "zeros"}, {"p"});
  auto* pool = add_node(g, "AveragePool", {"p"}, {"a"});
  add_ints_attr(pool, "kernel_shape", {2, 2});
  add_ints_attr(pool, "strides", {2, 2});
  add_node(g, "Conv", {"a", "w2"}, {"c2"});
  add_int_attr(add_node(g, "Concat", {"a", "c2"}, {"cat"}), "axis", 1);
  add_node(g, "BatchNormalization", {"cat", "scale", "bias", "mean", "var"}, {"bn"});
  add_node(g, "Relu", {"bn"}, {"r"});
  add_node(g, "Conv", {"r", "w3"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(300, 14), {1, 3, 10, 10}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  EXPECT_EQ(r.fusions["BatchNormalization+Relu as depthwise NchwcConv"], 1);
}

// HGNetV2's learnable affine blocks after a trained run: a scalar scale and
// a scalar shift after Conv + Relu become one depthwise 1x1 NchwcConv, and a
// per-channel scale then a shift then a Relu another.
TEST(Optimizer, ChannelAffineChainsComposeIntoOneDepthwise) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 16, 9, 9});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 32, 9, 9});
  *g->add_initializer() = float_tensor("w1", {32, 16, 1, 1}, random_values(512, 21));
  *g->add_initializer() = float_tensor("w2", {32, 32, 1, 1}, random_values(1024, 22));
  *g->add_initializer() = float_tensor("w3", {32, 32, 1, 1}, random_values(1024, 23));
  *g->add_initializer() = float_tensor("scale", {1}, {1.7f});
  *g->add_initializer() = float_tensor("shift", {}, {-0.3f});
  *g->add_initializer() = float_tensor("channel_scale", {1, 32, 1, 1}, random_values(32, 24));
  add_node(g, "Conv", {"x", "w1"}, {"c1"});
  add_node(g, "Relu", {"c1"}, {"r1"});
  add_node(g, "Mul", {"r1", "scale"}, {"m1"});
  add_node(g, "Add", {"shift", "m1"}, {"a1"});
  add_node(g, "Conv", {"a1", "w2"}, {"c2"});
  add_node(g, "Relu", {"c2"}, {"r2"});
  add_node(g, "Mul", {"channel_scale", "r2"}, {"m2"});
  add_node(g, "Sub", {"m2", "shift"}, {"s2"});
  add_node(g, "Relu", {"s2"}, {"r3"});
  add_node(g, "Conv", {"r3", "w3"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(1296, 25), {1, 16, 9, 9}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  EXPECT_EQ(r.fusions["Mul+Add as depthwise NchwcConv"], 1);
  EXPECT_EQ(r.fusions["Mul+Sub+Relu as depthwise NchwcConv"], 1);
}

// A dynamic batch leaves Shape(x) unknown, but the height it picks is not.
TEST(Optimizer, KnownDimsOfADynamicShapeFold) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {-1, 3, 4, 5});
  *g->add_output() = tensor_info("h", onnx::TensorProto::INT64, {});
  *g->add_output() = tensor_info("wc", onnx::TensorProto::INT64, {2});
  *g->add_output() = tensor_info("nc", onnx::TensorProto::INT64, {2});
  *g->add_initializer() = test::int64_tensor("two", {}, {2});
  *g->add_initializer() = test::int64_tensor("s", {1}, {1});
  *g->add_initializer() = test::int64_tensor("e", {1}, {3});
  *g->add_initializer() = test::int64_tensor("zero", {1}, {0});
  add_node(g, "Shape", {"x"}, {"shape"});
  add_node(g, "Gather", {"shape", "two"}, {"h"});
  add_node(g, "Slice", {"shape", "s", "e"}, {"wc"});
  add_node(g, "Slice", {"shape", "zero", "e"}, {"nc_wide"});  // holds the batch: stays
  add_node(g, "Slice", {"nc_wide", "zero", "two"}, {"nc"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(std::vector<float>(120, 1.0f), {2, 3, 4, 5}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Basic);
  EXPECT_EQ(r.fusions["Gather of a known dim folding"], 1);
  EXPECT_EQ(r.fusions["Slice of known dims folding"], 1);
  auto out = load(m, OptimizationLevel::Basic)->run(feeds);
  EXPECT_EQ(out[0].tensor().int_at(0), 4);
  EXPECT_EQ(out[1].tensor().int_at(0), 3);
  EXPECT_EQ(out[1].tensor().int_at(1), 4);
  EXPECT_EQ(out[2].tensor().int_at(0), 2);
  EXPECT_EQ(out[2].tensor().int_at(1), 3);
}

// MobileOne / RepVGG train-time blocks: convs of one input (3x3, 1x1, 1x3 and
// 3x1 with matching pads, one without bias) summed become one 3x3 conv; so do
// a 3x3 and a 1x1 of stride 2; a dilated branch stays apart.
TEST(Optimizer, ParallelConvBranchesMergeIntoOne) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 4, 7, 8});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 6, 7, 8});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {2, 6, 4, 4});
  struct B { const char* name; int64_t kh, kw, ph, pw; bool bias; };
  const B branches[] = {{"k33", 3, 3, 1, 1, true}, {"k11", 1, 1, 0, 0, true}, {"k13", 1, 3, 0, 1, false},
                        {"k31", 3, 1, 1, 0, true}};
  std::string sum;
  uint32_t seed = 50;
  for (const B& b : branches) {
    const std::string w = std::string(b.name) + "_w", c = std::string(b.name) + "_out";
    *g->add_initializer() = float_tensor(w, {6, 4, b.kh, b.kw}, random_values(24 * b.kh * b.kw, seed++));
    std::vector<std::string> in = {"x", w};
    if (b.bias) {
      *g->add_initializer() = float_tensor(std::string(b.name) + "_b", {6}, random_values(6, seed++));
      in.push_back(std::string(b.name) + "_b");
    }
    add_ints_attr(add_node(g, "Conv", in, {c}), "pads", {b.ph, b.pw, b.ph, b.pw});
    if (sum.empty()) {
      sum = c;
    } else {
      add_node(g, "Add", {sum, c}, {c + "_sum"});
      sum = c + "_sum";
    }
  }
  add_node(g, "Relu", {sum}, {"y"});
  *g->add_initializer() = float_tensor("s2_w", {6, 4, 3, 3}, random_values(216, seed++));
  *g->add_initializer() = float_tensor("s1_w", {6, 4, 3, 3}, random_values(216, seed++));
  auto* s2 = add_node(g, "Conv", {"x", "s2_w"}, {"s2"});
  add_ints_attr(s2, "pads", {1, 1, 1, 1});
  add_ints_attr(s2, "strides", {2, 2});
  auto* s1 = add_node(g, "Conv", {"x", "s1_w"}, {"s1"});
  add_ints_attr(s1, "pads", {2, 2, 2, 2});
  add_ints_attr(s1, "strides", {2, 2});
  add_ints_attr(s1, "dilations", {2, 2});
  *g->add_initializer() = float_tensor("s3_w", {6, 4, 1, 1}, random_values(24, seed++));
  auto* s3 = add_node(g, "Conv", {"x", "s3_w"}, {"s3"});
  add_ints_attr(s3, "strides", {2, 2});
  add_node(g, "Add", {"s2", "s3"}, {"s23"});  // the 1x1 reads the 3x3's centre taps: merged
  add_node(g, "Add", {"s23", "s1"}, {"z"});   // a dilated 3x3 reads another grid: stays apart
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(2 * 4 * 56, seed++), {2, 4, 7, 8}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-4f);
  EXPECT_EQ(r.fusions["Conv+Conv summed"], 4);
}

// FocalNet's MLP: the second 1x1 conv adds a residual that comes from a plain
// op (here a graph input); the conv still runs blocked, the residual reordered in.
TEST(Optimizer, ConvWithPlainResidualRunsBlocked) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 32, 6, 6});
  *g->add_input() = tensor_info("res", onnx::TensorProto::FLOAT, {1, 32, 6, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 32, 6, 6});
  *g->add_initializer() = float_tensor("w1", {64, 32, 1, 1}, random_values(64 * 32, 61));
  *g->add_initializer() = float_tensor("w2", {32, 64, 1, 1}, random_values(64 * 32, 62));
  add_node(g, "Conv", {"x", "w1"}, {"h"});
  add_node(g, "Relu", {"h"}, {"hr"});
  add_node(g, "Conv", {"hr", "w2"}, {"c2"});
  add_node(g, "Add", {"c2", "res"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(32 * 36, 63), {1, 32, 6, 6}))},
                 {"res", Value(Tensor::from_vector<float>(random_values(32 * 36, 64), {1, 32, 6, 6}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  EXPECT_EQ(r.fusions["plain residual reordered into NchwcConv"], 1);
}

// A diffusion UNet's resnet block: conv(x) + the timestep embedding [N, C, 1, 1], which
// broadcasts over the pixels. It is no residual of a fused conv (whose blocked and CUDA
// kernels sum element by element; the blocked one once refused it); at level all the
// embedding is reordered in once, so the convs and the Adds stay blocked. Results as
// unoptimized.
TEST(Optimizer, BroadcastingAddAfterConvStaysBlocked) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 32, 6, 6});
  *g->add_input() = tensor_info("emb", onnx::TensorProto::FLOAT, {2, 32, 1, 1});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 32, 6, 6});
  *g->add_initializer() = float_tensor("w1", {32, 32, 3, 3}, random_values(32 * 32 * 9, 81));
  *g->add_initializer() = float_tensor("w2", {32, 32, 1, 1}, random_values(32 * 32, 82));
  add_ints_attr(add_node(g, "Conv", {"x", "w1"}, {"h"}), "pads", {1, 1, 1, 1});
  add_node(g, "Add", {"h", "emb"}, {"h_emb"});
  add_node(g, "Conv", {"h_emb", "w2"}, {"c2"});
  add_node(g, "Add", {"c2", "emb"}, {"c2_emb"});
  add_node(g, "Relu", {"c2_emb"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(2 * 32 * 36, 83), {2, 32, 6, 6}))},
                 {"emb", Value(Tensor::from_vector<float>(random_values(2 * 32, 84), {2, 32, 1, 1}))}};
  OptimizationReport extended = check_same(m, feeds, OptimizationLevel::Extended, 1e-4f);
  EXPECT_EQ(extended.fusions["Conv+Add"] + extended.fusions["Conv+Add+Relu"], 0);
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  OptimizationReport all = check_same(m, feeds, OptimizationLevel::All, 1e-3f);
  EXPECT_EQ(all.fusions["per-channel operand reordered in"], 1);
}

// Position embeddings [1, S, H] + token embeddings [B, S, H], then LayerNormalization:
// the fused node takes the operand of the sum's shape first (the CUDA kernel repeats
// only its skip input). Results as unoptimized.
TEST(Optimizer, SkipLayerNormTakesTheFullOperandFirst) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("pos", onnx::TensorProto::FLOAT, {1, 5, 16});
  *g->add_input() = tensor_info("tok", onnx::TensorProto::FLOAT, {3, 5, 16});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {3, 5, 16});
  *g->add_initializer() = float_tensor("gamma", {16}, random_values(16, 91));
  *g->add_initializer() = float_tensor("beta", {16}, random_values(16, 92));
  add_node(g, "Add", {"pos", "tok"}, {"sum"});
  add_node(g, "LayerNormalization", {"sum", "gamma", "beta"}, {"y"});
  Feeds feeds = {{"pos", Value(Tensor::from_vector<float>(random_values(80, 93), {1, 5, 16}))},
                 {"tok", Value(Tensor::from_vector<float>(random_values(240, 94), {3, 5, 16}))}};
  EXPECT_EQ(check_same(m, feeds, OptimizationLevel::Extended).fusions["SkipLayerNormalization"], 1);
  SessionOptions o;
  o.optimization_level = OptimizationLevel::Extended;
  o.optimized_model_filepath = (std::filesystem::temp_directory_path() / "onyx_skip_ln_order.onnx").string();
  std::string bytes = test::serialize(m);
  Session::from_bytes(bytes.data(), bytes.size(), o);
  onnx::ModelProto saved;
  std::ifstream f(o.optimized_model_filepath, std::ios::binary);
  ASSERT_TRUE(saved.ParseFromIstream(&f));
  std::remove(o.optimized_model_filepath.c_str());
  ASSERT_EQ(saved.graph().node_size(), 1);
  EXPECT_EQ(saved.graph().node(0).input(0), "tok");
  EXPECT_EQ(saved.graph().node(0).input(1), "pos");
}

// Reshape(Squeeze(x)) collapses to one Reshape only where the Squeeze would succeed: a
// squeeze of a dim of 16 (PyTorch's no-op squeeze, as its dynamo exporter writes it) stays
// the error the spec asks for at every level, not a result at some.
TEST(Optimizer, ReshapeChainKeepsAFailingSqueeze) {
  for (int64_t squeezed : {1, 16}) {
    auto m = test::make_model();
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, squeezed, 4});
    *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, squeezed * 4});
    *g->add_initializer() = test::int64_tensor("axis", {1}, {1});
    *g->add_initializer() = test::int64_tensor("flat", {2}, {2, squeezed * 4});
    add_node(g, "Squeeze", {"x", "axis"}, {"s"});
    add_node(g, "Reshape", {"s", "flat"}, {"y"});
    Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(8 * squeezed, 90), {2, squeezed, 4}))}};
    if (squeezed == 1) {
      EXPECT_EQ(check_same(m, feeds, OptimizationLevel::Basic).fusions["Reshape chain"], 1);
      continue;
    }
    for (auto level : {OptimizationLevel::Disable, OptimizationLevel::Basic, OptimizationLevel::All}) {
      try {
        load(m, level)->run(feeds);
        ADD_FAILURE() << "a Squeeze of a dim of 16 ran at level " << static_cast<int>(level);
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("Squeeze: dimension 1 of shape [2,16,4] is not 1"), std::string::npos)
            << e.what();
      }
    }
  }
}

// A branch whose dilations do not match its rank is left to the Conv kernel,
// which names the attribute; merged, it made weights of the wrong rank.
TEST(Optimizer, ParallelConvMergeLeavesMalformedDilations) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 5, 5});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 4, 5, 5});
  *g->add_initializer() = float_tensor("w3", {4, 3, 3, 3}, random_values(108, 70));
  *g->add_initializer() = float_tensor("w1", {4, 3, 1, 1}, random_values(12, 71));
  auto* a = add_node(g, "Conv", {"x", "w3"}, {"a"});
  add_ints_attr(a, "pads", {1, 1, 1, 1});
  add_ints_attr(a, "dilations", {1});
  add_ints_attr(add_node(g, "Conv", {"x", "w1"}, {"b"}), "dilations", {1});
  add_node(g, "Add", {"a", "b"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(75, 72), {1, 3, 5, 5}))}};
  try {
    load(m, OptimizationLevel::Extended)->run(feeds);
    ADD_FAILURE() << "a Conv with 1 dilation for 2 spatial dims ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dilations has 1 values, expected 2"), std::string::npos) << e.what();
  }
}

// GhostNet concatenates convs of 24, 8 and 40 channels: the blocks of the
// result mix lanes of two inputs, and the chain stays blocked through it.
TEST(Optimizer, ConcatOfPartialBlocksStaysBlocked) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 16, 6, 7});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 20, 6, 7});
  const std::vector<int64_t> widths = {24, 8, 40};
  std::vector<std::string> parts;
  for (size_t k = 0; k < widths.size(); ++k) {
    const std::string w = "w" + std::to_string(k), c = "c" + std::to_string(k);
    *g->add_initializer() = float_tensor(w, {widths[k], 16, 1, 1}, random_values(widths[k] * 16, 41 + k));
    add_node(g, "Conv", {"x", w}, {c});
    parts.push_back(c);
  }
  add_int_attr(add_node(g, "Concat", parts, {"cat"}), "axis", 1);
  add_node(g, "Relu", {"cat"}, {"r"});
  *g->add_initializer() = float_tensor("wy", {20, 72, 1, 1}, random_values(20 * 72, 45));
  add_node(g, "Conv", {"r", "wy"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(2 * 16 * 42, 46), {2, 16, 6, 7}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  // Blocks of 8 (no AVX-512): 24, 8 and 40 channels are whole blocks, a plain Concat of blocked values.
  EXPECT_EQ(r.fusions["Concat of partial blocks as NchwcConcat"], dnnl_preferred_block() == 16 ? 1 : 0);
}

// Upsampling between convs stays blocked: nearest 2x by scales, and linear to
// sizes made of the input's own batch and channels (a dynamic batch) and a
// constant height and width. A Resize that changes channels stays plain.
TEST(Optimizer, ResizeBetweenConvsStaysBlocked) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {-1, 8, 5, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {-1, 16, 13, 11});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {-1, 9, 5, 6});
  *g->add_initializer() = float_tensor("w1", {24, 8, 3, 3}, random_values(24 * 72, 31));
  *g->add_initializer() = float_tensor("w2", {16, 24, 1, 1}, random_values(16 * 24, 32));
  *g->add_initializer() = float_tensor("scales", {4}, {1, 1, 2, 2});
  *g->add_initializer() = float_tensor("to_channels", {4}, {1, 1.125f, 1, 1});
  *g->add_initializer() = test::int64_tensor("zero", {1}, {0});
  *g->add_initializer() = test::int64_tensor("two", {1}, {2});
  *g->add_initializer() = test::int64_tensor("hw", {2}, {13, 11});
  auto* c1 = add_node(g, "Conv", {"x", "w1"}, {"c1"});
  add_ints_attr(c1, "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c1"}, {"r1"});
  add_node(g, "Resize", {"r1", "", "scales"}, {"up"});
  add_node(g, "Shape", {"up"}, {"shape"});
  add_node(g, "Slice", {"shape", "zero", "two"}, {"nc"});
  add_int_attr(add_node(g, "Concat", {"nc", "hw"}, {"sizes"}), "axis", 0);
  auto* lin = add_node(g, "Resize", {"up", "", "", "sizes"}, {"lin"});
  auto* mode = lin->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("linear");
  add_node(g, "Conv", {"lin", "w2"}, {"y"});
  add_node(g, "Resize", {"x", "", "to_channels"}, {"z"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(2 * 8 * 30, 33), {2, 8, 5, 6}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  EXPECT_EQ(r.fusions["Resize as NchwcResize"], 2);
}

// A segmentation head's final upsampling, a graph output read by nothing else,
// writes NCHW itself (no ReorderOutput of the larger output): 20 channels (a
// partial block), linear 2x and nearest 4x (the plain resize after a reorder).
TEST(Optimizer, ResizeToGraphOutputWritesNchw) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 8, 7, 6});
  *g->add_output() = tensor_info("twice", onnx::TensorProto::FLOAT, {2, 20, 14, 12});
  *g->add_output() = tensor_info("four", onnx::TensorProto::FLOAT, {2, 20, 28, 24});
  *g->add_initializer() = float_tensor("w", {20, 8, 3, 3}, random_values(20 * 72, 51));
  *g->add_initializer() = float_tensor("two", {4}, {1, 1, 2, 2});
  *g->add_initializer() = float_tensor("four_x", {4}, {1, 1, 4, 4});
  add_ints_attr(add_node(g, "Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  auto* lin = add_node(g, "Resize", {"c", "", "two"}, {"twice"});
  auto* mode = lin->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("linear");
  add_node(g, "Resize", {"c", "", "four_x"}, {"four"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(2 * 8 * 42, 52), {2, 8, 7, 6}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  EXPECT_EQ(r.fusions["Resize as NchwcResize to NCHW"], 2);
  EXPECT_EQ(r.fusions["Resize as NchwcResize"], 0);
}

// GhostNet's cat([x1, x2])[:, :oup] keeps every channel when oup is even: the
// Slice goes (ends past the dim and negative starts included); one that drops
// a channel, and one with step 2, stay.
TEST(Optimizer, SliceOfEverythingIsRemoved) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 6});
  *g->add_output() = tensor_info("fewer", onnx::TensorProto::FLOAT, {2, 5});
  *g->add_output() = tensor_info("strided", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_initializer() = test::int64_tensor("starts", {2}, {-2, 0});
  *g->add_initializer() = test::int64_tensor("ends", {2}, {2, 1000});
  *g->add_initializer() = test::int64_tensor("end5", {1}, {5});
  *g->add_initializer() = test::int64_tensor("zero", {1}, {0});
  *g->add_initializer() = test::int64_tensor("one", {1}, {1});
  *g->add_initializer() = test::int64_tensor("two", {1}, {2});
  *g->add_initializer() = test::int64_tensor("big", {1}, {6});
  add_int_attr(add_node(g, "Concat", {"x", "x"}, {"cat"}), "axis", 1);
  add_node(g, "Slice", {"cat", "starts", "ends"}, {"all"});
  add_node(g, "Relu", {"all"}, {"y"});
  add_node(g, "Slice", {"cat", "zero", "end5", "one"}, {"fewer"});
  add_node(g, "Slice", {"cat", "zero", "big", "one", "two"}, {"strided"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>({1, -2, 3, -4, 5, -6}, {2, 3}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Basic);
  EXPECT_EQ(r.fusions["Slice of everything"], 1);
  auto out = load(m, OptimizationLevel::Basic)->run(feeds);
  EXPECT_EQ(out[1].tensor().shape(), (Shape{2, 5}));
  EXPECT_EQ(out[2].tensor().shape(), (Shape{2, 3}));
  EXPECT_FLOAT_EQ(out[2].tensor().data<float>()[1], 3.0f);
}

// x * 1, 1 * x, x + 0, x - 0, x / 1 go; an Add of zeros that broadcasts x to a
// larger shape stays (its output is not x).
TEST(Optimizer, NeutralArithmeticIsRemoved) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_output() = tensor_info("wide", onnx::TensorProto::FLOAT, {2, 2, 3});
  *g->add_initializer() = float_tensor("one", {1}, {1.0f});
  *g->add_initializer() = float_tensor("ones", {1, 3}, {1.0f, 1.0f, 1.0f});
  *g->add_initializer() = float_tensor("zero", {}, {0.0f});
  *g->add_initializer() = float_tensor("zeros", {2, 2, 3}, std::vector<float>(12, 0.0f));
  *g->add_initializer() = float_tensor("half", {}, {0.5f});
  add_node(g, "Mul", {"x", "one"}, {"a"});
  add_node(g, "Mul", {"ones", "a"}, {"b"});
  add_node(g, "Sub", {"b", "zero"}, {"c"});
  add_node(g, "Div", {"c", "one"}, {"d"});
  add_node(g, "Add", {"zero", "d"}, {"e"});
  add_node(g, "Mul", {"e", "half"}, {"y"});  // not neutral: stays
  add_node(g, "Add", {"x", "zeros"}, {"wide"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>({1, -2, 3, -4, 5, -6}, {2, 3}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Basic);
  EXPECT_EQ(r.fusions["Mul by a neutral constant"], 2);
  EXPECT_EQ(r.fusions["Sub by a neutral constant"], 1);
  EXPECT_EQ(r.fusions["Div by a neutral constant"], 1);
  EXPECT_EQ(r.fusions["Add by a neutral constant"], 1);
  auto s = load(m, OptimizationLevel::Basic);
  auto out = s->run(feeds);
  EXPECT_EQ(out[0].tensor().shape(), (Shape{2, 3}));
  EXPECT_FLOAT_EQ(out[0].tensor().data<float>()[1], -1.0f);
  EXPECT_EQ(out[1].tensor().shape(), (Shape{2, 2, 3}));
}

// An inverted residual block's expansion (1x1 + Relu) and depthwise 3x3
// stride 2 (+ Clip) become one NchwcPointwiseDepthwise. 96 channels at 96x96
// expand to 3.5 MB, so the session runs the band-by-band fused kernel. When
// the expanded tensor has a second reader (here a graph output) they stay apart.
TEST(Optimizer, ExpansionAndDepthwiseFuse) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  for (bool expanded_is_output : {false, true}) {
    auto m = test::make_model();
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 16, 96, 96});
    *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 8, 48, 48});
    if (expanded_is_output) *g->add_output() = tensor_info("e", onnx::TensorProto::FLOAT, {1, 96, 96, 96});
    *g->add_initializer() = float_tensor("w1", {96, 16, 1, 1}, random_values(96 * 16, 21));
    *g->add_initializer() = float_tensor("b1", {96}, random_values(96, 22));
    *g->add_initializer() = float_tensor("w2", {96, 1, 3, 3}, random_values(96 * 9, 23));
    *g->add_initializer() = float_tensor("w3", {8, 96, 1, 1}, random_values(8 * 96, 24));
    *g->add_initializer() = float_tensor("lo", {}, {0.0f});
    *g->add_initializer() = float_tensor("hi", {}, {6.0f});
    add_node(g, "Conv", {"x", "w1", "b1"}, {"c1"});
    add_node(g, "Relu", {"c1"}, {"e"});
    auto* dw = add_node(g, "Conv", {"e", "w2"}, {"c2"});
    add_int_attr(dw, "group", 96);
    add_ints_attr(dw, "strides", {2, 2});
    add_ints_attr(dw, "pads", {1, 1, 1, 1});
    add_node(g, "Clip", {"c2", "lo", "hi"}, {"d"});
    add_node(g, "Conv", {"d", "w3"}, {"y"});
    Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(16 * 96 * 96, 25), {1, 16, 96, 96}))}};
    OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
    // The fused kernel is AVX-512 code: other CPUs run the two convs apart.
    EXPECT_EQ(r.fusions["NchwcConv 1x1 + depthwise as NchwcPointwiseDepthwise"],
              !expanded_is_output && nchwc_direct_available() ? 1 : 0);
  }
}

// Zero Pads on the spatial dims become the padding of the Conv / AveragePool
// reading them (the pool then counts the padding); a Pad with a nonzero value
// or one padding channels stays.
TEST(Optimizer, ZeroPadFoldsIntoConvAndAveragePool) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 4, 9, 9});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 8, 9, 9});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {1, 4, 10, 9});
  *g->add_output() = tensor_info("v", onnx::TensorProto::FLOAT, {1, 4, 11, 11});
  *g->add_initializer() = float_tensor("w", {8, 4, 3, 3}, random_values(288, 21));
  *g->add_initializer() = test::int64_tensor("sym", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  *g->add_initializer() = test::int64_tensor("uneven", {8}, {0, 0, 2, 1, 0, 0, 0, 1});
  *g->add_initializer() = float_tensor("one", {}, {1.0f});
  add_node(g, "Pad", {"x", "sym"}, {"p1"});
  add_node(g, "Conv", {"p1", "w"}, {"y"});
  add_node(g, "Pad", {"x", "uneven"}, {"p2"});
  auto* pool = add_node(g, "AveragePool", {"p2"}, {"z"});
  add_ints_attr(pool, "kernel_shape", {3, 3});
  add_ints_attr(pool, "pads", {1, 0, 1, 1});
  add_int_attr(pool, "count_include_pad", 1);
  add_node(g, "Pad", {"x", "sym", "one"}, {"p3"});  // pads with ones: stays
  auto* pool3 = add_node(g, "AveragePool", {"p3"}, {"v"});
  add_ints_attr(pool3, "kernel_shape", {1, 1});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(324, 22), {1, 4, 9, 9}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Basic);
  EXPECT_EQ(r.fusions["Pad+Conv"], 1);
  EXPECT_EQ(r.fusions["Pad+AveragePool"], 1);

  // Padding the channel axis cannot become spatial padding.
  auto c = test::make_model();
  auto* cg = c.mutable_graph();
  *cg->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 4, 9, 9});
  *cg->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 8, 9, 9});
  *cg->add_initializer() = float_tensor("w", {8, 6, 3, 3}, random_values(432, 23));
  *cg->add_initializer() = test::int64_tensor("chan", {8}, {0, 1, 1, 1, 0, 1, 1, 1});
  add_node(cg, "Pad", {"x", "chan"}, {"p"});
  add_node(cg, "Conv", {"p", "w"}, {"y"});
  EXPECT_EQ(check_same(c, feeds, OptimizationLevel::Basic).fusions["Pad+Conv"], 0);
}

// Dilated kernels larger than the map (DeepLab's ASPP): taps that only ever
// read padding are dropped, exactly; a dilated conv whose taps all reach the
// image keeps its kernel.
TEST(Optimizer, DilatedConvLosesTapsThatOnlyReadPadding) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 2, 3, 5});
  *g->add_input() = tensor_info("z", onnx::TensorProto::FLOAT, {1, 2, 7, 7});
  *g->add_output() = tensor_info("y1", onnx::TensorProto::FLOAT, {1, 4, 3, 5});
  *g->add_output() = tensor_info("y2", onnx::TensorProto::FLOAT, {1, 3, 4, 4});
  *g->add_output() = tensor_info("y3", onnx::TensorProto::FLOAT, {1, 3, 7, 7});
  *g->add_initializer() = float_tensor("w1", {4, 2, 3, 3}, random_values(72, 41));
  *g->add_initializer() = float_tensor("w2", {3, 2, 3, 3}, random_values(54, 42));
  *g->add_initializer() = float_tensor("b2", {3}, random_values(3, 43));
  auto* c1 = add_node(g, "Conv", {"x", "w1"}, {"y1"});  // rows: only the centre tap lands
  add_ints_attr(c1, "dilations", {4, 1});
  add_ints_attr(c1, "pads", {4, 1, 4, 1});
  auto* c2 = add_node(g, "Conv", {"z", "w2", "b2"}, {"y2"});  // strided, both axes
  add_ints_attr(c2, "dilations", {8, 8});
  add_ints_attr(c2, "strides", {2, 2});
  add_ints_attr(c2, "pads", {8, 8, 8, 8});
  auto* c3 = add_node(g, "Conv", {"z", "w2"}, {"y3"});  // every tap reaches the image
  add_ints_attr(c3, "dilations", {2, 2});
  add_ints_attr(c3, "pads", {2, 2, 2, 2});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(30, 44), {1, 2, 3, 5}))},
                 {"z", Value(Tensor::from_vector<float>(random_values(98, 45), {1, 2, 7, 7}))}};
  EXPECT_EQ(check_same(m, feeds, OptimizationLevel::Basic).fusions["Conv dead dilated taps"], 2);
}

int changed_rounds(const OptimizationReport& r, const std::string& pass) {
  int n = 0;
  for (const PassStat& p : r.passes)
    if (p.name == pass) n += p.changed;
  return n;
}

// Training-mode Dropout with ratio 0 (train-mode exports) is an identity and
// goes; with a nonzero ratio it stays.
TEST(Optimizer, TrainingDropoutWithRatioZeroIsRemoved) {
  for (float ratio : {0.0f, 0.5f}) {
    auto m = test::make_model(13);
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3});
    *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 3});
    *g->add_initializer() = float_tensor("ratio", {}, {ratio});
    onnx::TensorProto training;
    training.set_name("training");
    training.set_data_type(onnx::TensorProto::BOOL);
    training.add_int32_data(1);
    *g->add_initializer() = training;
    add_node(g, "Dropout", {"x", "ratio", "training"}, {"d"});
    add_node(g, "Relu", {"d"}, {"y"});
    auto s = load(m, OptimizationLevel::Basic);
    EXPECT_EQ(changed_rounds(s->optimization_report(), "redundant_node_elimination") > 0, ratio == 0.0f) << ratio;
    if (ratio == 0.0f) {
      Tensor x = Tensor::from_vector<float>({-1, 2, -3, 4, 5, -6}, {2, 3});
      auto y = s->run({{"x", Value(x)}});
      const Tensor& t = y[0].tensor();
      std::vector<float> got(t.data<float>(), t.data<float>() + t.numel());
      EXPECT_EQ(got, (std::vector<float>{0, 2, 0, 4, 5, 0}));
    }
  }
}

// ReduceMean over H and W (x.mean([2, 3])) runs as GlobalAveragePool (plus a
// Flatten without keepdims); axes given as attribute (opset 17) or input (18).
// Other axes stay a ReduceMean.
TEST(Optimizer, SpatialMeanBecomesGlobalAveragePool) {
  struct Case {
    int64_t opset;
    std::vector<int64_t> axes;
    int64_t keepdims;
    std::vector<int64_t> out_shape;
    int fused;
  };
  for (const Case& c : {Case{17, {2, 3}, 0, {2, 5}, 1}, Case{18, {-1, -2}, 1, {2, 5, 1, 1}, 1},
                        Case{18, {2, 3}, 0, {2, 5}, 1}, Case{17, {1, 2}, 1, {2, 1, 1, 4}, 0}}) {
    auto m = test::make_model(c.opset);
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 5, 3, 4});
    *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, c.out_shape);
    onnx::NodeProto* mean;
    if (c.opset >= 18) {
      *g->add_initializer() = test::int64_tensor("axes", {static_cast<int64_t>(c.axes.size())}, c.axes);
      mean = add_node(g, "ReduceMean", {"x", "axes"}, {"y"});
    } else {
      mean = add_node(g, "ReduceMean", {"x"}, {"y"});
      add_ints_attr(mean, "axes", c.axes);
    }
    add_int_attr(mean, "keepdims", c.keepdims);
    Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(120, 41), {2, 5, 3, 4}))}};
    auto r = check_same(m, feeds, OptimizationLevel::All, 1e-5f);
    EXPECT_EQ(r.fusions["ReduceMean as GlobalAveragePool"], c.fused) << c.opset << " keepdims " << c.keepdims;
  }
}

// ConvNeXt's pattern: permutes to channels-last and back around work done in
// NHWC, a per-channel layer scale, a residual Add. The permutes become
// channels-last reorders to and from the blocked layout (24 channels: a
// partial block) and the scale a depthwise 1x1 NchwcConv.
TEST(Optimizer, BlockedLayoutThroughChannelsLastPermutes) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 7, 9});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 8, 7, 9});
  *g->add_initializer() = float_tensor("w1", {24, 3, 1, 1}, random_values(72, 15));
  *g->add_initializer() = float_tensor("w2", {8, 24, 1, 1}, random_values(192, 16));
  *g->add_initializer() = float_tensor("gamma", {24, 1, 1}, random_values(24, 17));
  add_node(g, "Conv", {"x", "w1"}, {"c"});
  add_ints_attr(add_node(g, "Transpose", {"c"}, {"nhwc"}), "perm", {0, 2, 3, 1});
  add_node(g, "Tanh", {"nhwc"}, {"t"});
  add_ints_attr(add_node(g, "Transpose", {"t"}, {"nchw"}), "perm", {0, 3, 1, 2});
  add_node(g, "Mul", {"nchw", "gamma"}, {"scaled"});
  add_node(g, "Add", {"c", "scaled"}, {"sum"});
  add_node(g, "Conv", {"sum", "w2"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(189, 18), {1, 3, 7, 9}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  EXPECT_EQ(r.fusions["Mul as depthwise NchwcConv"], 1);
  EXPECT_EQ(r.fusions["Transpose as channels-last reorder"], 2);
}

// RegNet's grouped 3x3 (16 channels per group: whole blocks) stays in the
// blocked layout, and the pool after it with it; ResNeXt's 4 channels per
// group are merged into block-wide groups (block-diagonal weights); 2 per
// group (8x the work) stay plain. Outputs match the unoptimized graph.
TEST(Optimizer, GroupedConvWithWholeBlocksStaysBlocked) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build: no blocked layout";
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 8, 6, 7});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 48, 1, 1});
  *g->add_initializer() = float_tensor("w1", {32, 8, 1, 1}, random_values(256, 31));
  *g->add_initializer() = float_tensor("w2", {48, 16, 3, 3}, random_values(48 * 16 * 9, 32));
  *g->add_initializer() = float_tensor("b2", {48}, random_values(48, 33));
  *g->add_initializer() = float_tensor("w3", {32, 4, 3, 3}, random_values(32 * 4 * 9, 34));
  *g->add_initializer() = float_tensor("w4", {16, 2, 3, 3}, random_values(16 * 2 * 9, 38));
  add_node(g, "Conv", {"x", "w1"}, {"c1"});
  auto* grouped = add_node(g, "Conv", {"c1", "w2", "b2"}, {"c2"});
  add_int_attr(grouped, "group", 2);  // 16 in, 24 out per group: the outputs straddle blocks
  add_ints_attr(grouped, "pads", {1, 1, 1, 1});
  auto* narrow = add_node(g, "Conv", {"c1", "w3"}, {"c3"});
  add_int_attr(narrow, "group", 8);  // 4 channels per group: merged four at a time
  add_ints_attr(narrow, "pads", {0, 1, 1, 0});
  auto* narrower = add_node(g, "Conv", {"c1", "w4"}, {"c4"});
  add_int_attr(narrower, "group", 16);  // 2 channels per group: stays plain
  add_node(g, "Relu", {"c2"}, {"r"});
  add_node(g, "GlobalAveragePool", {"r"}, {"y"});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {1, 32, 5, 6});
  *g->add_output() = tensor_info("u", onnx::TensorProto::FLOAT, {1, 16, 4, 5});
  g->mutable_node(2)->set_output(0, "z");
  g->mutable_node(3)->set_output(0, "u");
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(336, 35), {1, 8, 6, 7}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  // With blocks of 8 (no AVX-512) the 24 outputs per group are whole blocks too.
  EXPECT_EQ(r.fusions["grouped Conv as NchwcConv"], dnnl_preferred_block() == 16 ? 1 : 2);
  EXPECT_EQ(r.fusions["grouped Conv groups merged to block width"], 1);
  // 16 in and 16 out per group: blocked.
  *g->mutable_initializer(1) = float_tensor("w2", {32, 16, 3, 3}, random_values(32 * 16 * 9, 36));
  *g->mutable_initializer(2) = float_tensor("b2", {32}, random_values(32, 37));
  *g->mutable_output(0) = tensor_info("y", onnx::TensorProto::FLOAT, {1, 32, 1, 1});
  r = check_same(m, feeds, OptimizationLevel::All, 1e-4f);
  EXPECT_EQ(r.fusions["grouped Conv as NchwcConv"], 2);
  EXPECT_EQ(r.fusions["grouped Conv groups merged to block width"], 1);
}

TEST(Optimizer, GeluAndLayerNormFromDecomposedForms) {
  auto m = test::make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 4});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 4});
  for (auto [name, v] : std::vector<std::pair<const char*, float>>{
           {"sqrt2", 1.4142135f}, {"one", 1.0f}, {"half", 0.5f}, {"two", 2.0f}, {"eps", 1e-5f}})
    *g->add_initializer() = float_tensor(name, {}, {v});
  *g->add_initializer() = float_tensor("gamma", {4}, {1.0f, 2.0f, 0.5f, -1.0f});
  *g->add_initializer() = float_tensor("beta", {4}, {0.0f, 0.1f, 0.2f, 0.3f});
  // GELU, erf form, products in the (x * 0.5) * (1 + erf) order.
  add_node(g, "Div", {"x", "sqrt2"}, {"d"});
  add_node(g, "Erf", {"d"}, {"e"});
  add_node(g, "Add", {"e", "one"}, {"e1"});
  add_node(g, "Mul", {"x", "half"}, {"xh"});
  add_node(g, "Mul", {"xh", "e1"}, {"gelu"});
  // LayerNorm over the last axis, decomposed.
  add_ints_attr(add_node(g, "ReduceMean", {"gelu"}, {"mu"}), "axes", {-1});
  add_node(g, "Sub", {"gelu", "mu"}, {"dev"});
  add_node(g, "Pow", {"dev", "two"}, {"sq"});
  add_ints_attr(add_node(g, "ReduceMean", {"sq"}, {"var"}), "axes", {-1});
  add_node(g, "Add", {"var", "eps"}, {"ve"});
  add_node(g, "Sqrt", {"ve"}, {"sd"});
  add_node(g, "Div", {"dev", "sd"}, {"n"});
  add_node(g, "Mul", {"n", "gamma"}, {"ng"});
  add_node(g, "Add", {"ng", "beta"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(8, 3), {2, 4}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-4f);
  EXPECT_EQ(r.fusions["Gelu"], 1);
  EXPECT_EQ(r.fusions["LayerNormalization"], 1);
}

// A float16 graph takes the same fusion; the fused kernel computes in float (as
// onnxruntime's, which casts around it), so the result is the unfused graph's.
TEST(Optimizer, Float16GeluFusesAndRuns) {
  auto m = test::make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT16, {2, 4});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT16, {2, 4});
  for (auto [name, v] : std::vector<std::pair<const char*, float>>{{"sqrt2", 1.4142135f}, {"one", 1.0f}, {"half", 0.5f}}) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT16);
    t->add_int32_data(float_to_half(v));
  }
  add_node(g, "Div", {"x", "sqrt2"}, {"d"});
  add_node(g, "Erf", {"d"}, {"e"});
  add_node(g, "Add", {"e", "one"}, {"e1"});
  add_node(g, "Mul", {"x", "half"}, {"xh"});
  add_node(g, "Mul", {"xh", "e1"}, {"y"});
  std::vector<float> x = random_values(8, 3);
  Feeds feeds = {{"x", Value(Tensor::from_vector<Float16>(std::vector<Float16>(x.begin(), x.end()), {2, 4}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 2e-3f);
  EXPECT_EQ(r.fusions["Gelu"], 1);
}

// Cohere's per-head norm: x [B, S, H, D] normalized over D, then scaled by a
// [H, D] weight. The weight is not one value per normalized element, so the
// fused op stops at the normalization and the Mul stays.
TEST(Optimizer, LayerNormLeavesPerHeadScaleUnfused) {
  const int64_t B = 2, S = 3, H = 4, D = 5;
  auto m = test::make_model(17);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {B, S, H, D});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {B, S, H, D});
  *g->add_initializer() = float_tensor("two", {}, {2.0f});
  *g->add_initializer() = float_tensor("eps", {}, {1e-5f});
  *g->add_initializer() = float_tensor("w", {H, D}, random_values(H * D, 9));
  add_ints_attr(add_node(g, "ReduceMean", {"x"}, {"mu"}), "axes", {-1});
  add_node(g, "Sub", {"x", "mu"}, {"dev"});
  add_node(g, "Pow", {"dev", "two"}, {"sq"});
  add_ints_attr(add_node(g, "ReduceMean", {"sq"}, {"var"}), "axes", {-1});
  add_node(g, "Add", {"var", "eps"}, {"ve"});
  add_node(g, "Sqrt", {"ve"}, {"sd"});
  add_node(g, "Reciprocal", {"sd"}, {"inv"});
  add_node(g, "Mul", {"dev", "inv"}, {"n"});
  add_node(g, "Mul", {"n", "w"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(B * S * H * D, 8), {B, S, H, D}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-4f);
  EXPECT_EQ(r.fusions["LayerNormalization"], 0);
}

// RMS normalization as the PyTorch exporters write Llama's / T5's: x * (1 / Sqrt(mean(x^2) + eps)) * w,
// the reciprocal as Div(1, s) or Reciprocal(s), or x / s directly. Each becomes one
// SimplifiedLayerNormalization. The causal-mask comparison (LessOrEqual, a function op
// libonnx 1.12 cannot type on its own) must not stop the types of what follows: the
// Cast to float of a float value after it is dropped.
TEST(Optimizer, RmsNormFromDecomposedForms) {
  auto m = test::make_model(17);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3, 4});
  *g->add_input() = tensor_info("pos", onnx::TensorProto::INT64, {4});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 3, 4});

  for (auto [name, v] : std::vector<std::pair<const char*, float>>{{"two", 2.0f}, {"one", 1.0f}, {"eps", 1e-6f}, {"zero", 0.0f}})
    *g->add_initializer() = float_tensor(name, {}, {v});
  *g->add_initializer() = float_tensor("w", {4}, {1.0f, 2.0f, 0.5f, -1.0f});
  *g->add_initializer() = test::int64_tensor("col", {3, 1}, {0, 1, 2});
  add_node(g, "LessOrEqual", {"pos", "col"}, {"mask"});  // [3, 4], causal
  add_node(g, "Where", {"mask", "x", "zero"}, {"xm"});
  add_node(g, "Cast", {"xm"}, {"x0"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("to");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(onnx::TensorProto::FLOAT);
    return a;
  }());
  // Each form: rms(in) * w -> out.
  auto rms = [&](const std::string& in, const std::string& out, int form, const std::string& scale = "w") {
    add_node(g, "Pow", {in, "two"}, {in + "_sq"});
    add_ints_attr(add_node(g, "ReduceMean", {in + "_sq"}, {in + "_ms"}), "axes", {-1});
    add_node(g, "Add", {in + "_ms", "eps"}, {in + "_ve"});
    add_node(g, "Sqrt", {in + "_ve"}, {in + "_s"});
    if (form == 0) add_node(g, "Div", {"one", in + "_s"}, {in + "_r"});
    if (form == 1) add_node(g, "Reciprocal", {in + "_s"}, {in + "_r"});
    if (form == 2) add_node(g, "Div", {in, in + "_s"}, {in + "_n"});
    else add_node(g, "Mul", {in, in + "_r"}, {in + "_n"});
    add_node(g, "Mul", {scale, in + "_n"}, {out});
  };
  rms("x0", "y0", 0);
  rms("y0", "y1", 1);
  rms("y1", "y2", 2);
  rms("y2", "y", 1, "eps");  // a scalar scale: one value for the row, not per element; not fused
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(24, 5), {2, 3, 4}))},
                 {"pos", Value(Tensor::from_vector<int64_t>({0, 1, 2, 3}, {4}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["SimplifiedLayerNormalization"], 3);
  // LessOrEqual, Where, the three fused nodes and the seven of the scalar-scale form: the Cast
  // went with the types.
  EXPECT_EQ(load(m, OptimizationLevel::Extended)->node_placement().size(), 12u);
}

// A model pre-fused by ONNX Runtime: its com.microsoft ops become Onyx's own
// forms, so MatMul + BiasGelu ends as one FusedMatMul and FusedConv reaches the
// conv fusions and layout passes like a plain Conv.
TEST(Optimizer, OrtContribOpsBecomeOnyxFusedOps) {
  auto m = test::make_model(17);
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {3, 5});
  *g->add_input() = tensor_info("img", onnx::TensorProto::FLOAT, {1, 2, 5, 5});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {3, 4});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {3, 4});
  *g->add_output() = tensor_info("c", onnx::TensorProto::FLOAT, {1, 3, 5, 5});
  *g->add_initializer() = float_tensor("w", {5, 4}, random_values(20, 7));
  *g->add_initializer() = float_tensor("w2", {5, 4}, random_values(20, 11));
  *g->add_initializer() = float_tensor("b", {4}, {0.5f, -1.0f, 0.25f, 2.0f});
  *g->add_initializer() = float_tensor("k", {3, 2, 3, 3}, random_values(54, 8));
  add_node(g, "MatMul", {"x", "w"}, {"h"});
  add_node(g, "BiasGelu", {"h", "b"}, {"y"})->set_domain("com.microsoft");
  add_node(g, "MatMul", {"x", "w2"}, {"h2"});
  add_node(g, "FastGelu", {"h2", "b"}, {"z"})->set_domain("com.microsoft");
  auto* conv = add_node(g, "FusedConv", {"img", "k"}, {"c"});
  conv->set_domain("com.microsoft");
  add_ints_attr(conv, "pads", {1, 1, 1, 1});
  auto* act = conv->add_attribute();
  act->set_name("activation");
  act->set_type(onnx::AttributeProto::STRING);
  act->set_s("Relu");
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(15, 9), {3, 5}))},
                 {"img", Value(Tensor::from_vector<float>(random_values(50, 10), {1, 2, 5, 5}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["com.microsoft BiasGelu"], 1);
  EXPECT_EQ(r.fusions["com.microsoft FastGelu"], 1);
  EXPECT_EQ(r.fusions["com.microsoft FusedConv"], 1);
  EXPECT_EQ(r.fusions["MatMul+Add+Gelu"], 2);
}

// Local attention over windows (Twins, NesT): rank-5 Q [B, W, H, S, D], K^T, V and a mask
// [W, 1, S, T] broadcast over batch and heads. The fused op takes the dims before the last
// four as more batch dims; values as the unfused graph.
TEST(Optimizer, ScaledDotProductAttentionRank5) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  const int64_t B = 2, W = 3, H = 2, S = 4, D = 8;
  *g->add_input() = tensor_info("q", onnx::TensorProto::FLOAT, {B, W, H, S, D});
  *g->add_input() = tensor_info("kt", onnx::TensorProto::FLOAT, {B, W, H, D, S});
  *g->add_input() = tensor_info("v", onnx::TensorProto::FLOAT, {B, W, H, S, D});
  *g->add_input() = tensor_info("mask", onnx::TensorProto::FLOAT, {W, 1, S, S});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {B, W, H, S, D});
  *g->add_initializer() = float_tensor("scale", {}, {0.35355339f});
  add_node(g, "MatMul", {"q", "kt"}, {"s"});
  add_node(g, "Mul", {"s", "scale"}, {"ss"});
  add_node(g, "Add", {"ss", "mask"}, {"sm"});
  add_int_attr(add_node(g, "Softmax", {"sm"}, {"p"}), "axis", -1);
  add_node(g, "MatMul", {"p", "v"}, {"y"});
  const int64_t n = B * W * H * S * D;
  Feeds feeds = {{"q", Value(Tensor::from_vector<float>(random_values(n, 50), {B, W, H, S, D}))},
                 {"kt", Value(Tensor::from_vector<float>(random_values(n, 51), {B, W, H, D, S}))},
                 {"v", Value(Tensor::from_vector<float>(random_values(n, 52), {B, W, H, S, D}))},
                 {"mask", Value(Tensor::from_vector<float>(random_values(W * S * S, 53), {W, 1, S, S}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["ScaledDotProductAttention"], 1);
}

// scaled_dot_product_attention as the PyTorch exporters write it: 1/sqrt(D) split over Q and
// K^T, an additive mask, Softmax, the NaN guard Where(IsNaN(p), 0, p), then P V; and the
// unmasked form with one scale on the scores over 3-D [B*H, S, D] operands (older bmm
// attention). Both become ScaledDotProductAttention and agree with the unfused graph, also
// for a row whose mask is -inf throughout (zeros, as the guard gives).
TEST(Optimizer, ScaledDotProductAttentionFuses) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  const int64_t B = 2, H = 3, S = 5, T = 7, D = 8;
  *g->add_input() = tensor_info("q", onnx::TensorProto::FLOAT, {B, H, S, D});
  *g->add_input() = tensor_info("k", onnx::TensorProto::FLOAT, {B, H, T, D});
  *g->add_input() = tensor_info("v", onnx::TensorProto::FLOAT, {B, H, T, D});
  *g->add_input() = tensor_info("mask", onnx::TensorProto::FLOAT, {B, 1, S, T});
  *g->add_input() = tensor_info("q3", onnx::TensorProto::FLOAT, {B * H, S, D});
  *g->add_input() = tensor_info("kt3", onnx::TensorProto::FLOAT, {B * H, D, T});
  *g->add_input() = tensor_info("v3", onnx::TensorProto::FLOAT, {B * H, T, D});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {B, H, S, D});
  *g->add_output() = tensor_info("y3", onnx::TensorProto::FLOAT, {B * H, S, D});
  *g->add_initializer() = float_tensor("half_scale", {}, {0.42044820762685725f});  // 8^-1/4
  *g->add_initializer() = float_tensor("zero", {}, {0.0f});
  *g->add_initializer() = float_tensor("sqrt_d", {}, {2.8284271247461903f});
  add_node(g, "Mul", {"q", "half_scale"}, {"qs"});
  auto* tr = add_node(g, "Transpose", {"k"}, {"kt"});
  add_ints_attr(tr, "perm", {0, 1, 3, 2});
  add_node(g, "Mul", {"kt", "half_scale"}, {"kts"});
  add_node(g, "MatMul", {"qs", "kts"}, {"s"});
  add_node(g, "Add", {"s", "mask"}, {"sm"});
  add_int_attr(add_node(g, "Softmax", {"sm"}, {"p"}), "axis", -1);
  add_node(g, "IsNaN", {"p"}, {"nan"});
  add_node(g, "Where", {"nan", "zero", "p"}, {"pg"});
  add_node(g, "MatMul", {"pg", "v"}, {"y"});
  add_node(g, "MatMul", {"q3", "kt3"}, {"s3"});
  add_node(g, "Div", {"s3", "sqrt_d"}, {"s3d"});
  add_int_attr(add_node(g, "Softmax", {"s3d"}, {"p3"}), "axis", -1);
  add_node(g, "MatMul", {"p3", "v3"}, {"y3"});
  std::vector<float> mask = random_values(B * S * T, 44);
  for (int64_t t = 0; t < T; ++t) mask[(1 * S + 2) * T + t] = -std::numeric_limits<float>::infinity();
  Feeds feeds = {{"q", Value(Tensor::from_vector<float>(random_values(B * H * S * D, 40), {B, H, S, D}))},
                 {"k", Value(Tensor::from_vector<float>(random_values(B * H * T * D, 41), {B, H, T, D}))},
                 {"v", Value(Tensor::from_vector<float>(random_values(B * H * T * D, 42), {B, H, T, D}))},
                 {"mask", Value(Tensor::from_vector<float>(mask, {B, 1, S, T}))},
                 {"q3", Value(Tensor::from_vector<float>(random_values(B * H * S * D, 45), {B * H, S, D}))},
                 {"kt3", Value(Tensor::from_vector<float>(random_values(B * H * D * T, 46), {B * H, D, T}))},
                 {"v3", Value(Tensor::from_vector<float>(random_values(B * H * T * D, 47), {B * H, T, D}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["ScaledDotProductAttention+Transpose"], 1);  // K read as it is
  EXPECT_EQ(r.fusions["ScaledDotProductAttention"], 1);
  auto y = load(m, OptimizationLevel::Extended)->run(feeds);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d) EXPECT_EQ(y[0].tensor().float_at(((1 * H + h) * S + 2) * D + d), 0.0f);
}

// Long key sequences (Whisper's encoder: 1500 frames) run in blocks of query rows whose
// scores stay in cache: 37 query rows over 3000 keys are three blocks, the last partial,
// per head; the mask follows each block's rows (a fully masked row in the last one). K is
// given as it is ([.., T, D], a decoder's cached keys) and its Transpose is fused too.
TEST(Optimizer, ScaledDotProductAttentionLongKeysInRowBlocks) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  const int64_t H = 2, S = 37, T = 3000, D = 8;
  *g->add_input() = tensor_info("q", onnx::TensorProto::FLOAT, {1, H, S, D});
  *g->add_input() = tensor_info("k", onnx::TensorProto::FLOAT, {1, H, T, D});
  *g->add_input() = tensor_info("v", onnx::TensorProto::FLOAT, {1, H, T, D});
  *g->add_input() = tensor_info("mask", onnx::TensorProto::FLOAT, {1, 1, S, T});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, H, S, D});
  *g->add_initializer() = float_tensor("scale", {}, {0.35355339f});
  *g->add_initializer() = float_tensor("zero", {}, {0.0f});
  add_ints_attr(add_node(g, "Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
  add_node(g, "MatMul", {"q", "kt"}, {"s"});
  add_node(g, "Mul", {"s", "scale"}, {"ss"});
  add_node(g, "Add", {"ss", "mask"}, {"sm"});
  add_int_attr(add_node(g, "Softmax", {"sm"}, {"p"}), "axis", -1);
  add_node(g, "IsNaN", {"p"}, {"nan"});
  add_node(g, "Where", {"nan", "zero", "p"}, {"pg"});
  add_node(g, "MatMul", {"pg", "v"}, {"y"});
  std::vector<float> mask = random_values(S * T, 63);
  const int64_t masked_row = 34;
  for (int64_t t = 0; t < T; ++t) mask[masked_row * T + t] = -std::numeric_limits<float>::infinity();
  Feeds feeds = {{"q", Value(Tensor::from_vector<float>(random_values(H * S * D, 60), {1, H, S, D}))},
                 {"k", Value(Tensor::from_vector<float>(random_values(H * T * D, 61), {1, H, T, D}))},
                 {"v", Value(Tensor::from_vector<float>(random_values(H * T * D, 62), {1, H, T, D}))},
                 {"mask", Value(Tensor::from_vector<float>(mask, {1, 1, S, T}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["ScaledDotProductAttention+Transpose"], 1);
  auto y = load(m, OptimizationLevel::Extended)->run(feeds);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d) EXPECT_EQ(y[0].tensor().float_at((h * S + masked_row) * D + d), 0.0f);
}

// A decode step: one query row against cached keys, read straight from K (given as it is,
// its Transpose fused) or from K^T, with a padding mask; head sizes off the vector width
// (D 20) and past the 128 columns the value sum keeps in registers (Dv 130).
TEST(Optimizer, ScaledDotProductAttentionDecodeStep) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  const int64_t B = 2, H = 3, T = 50, D = 20, Dv = 130;
  *g->add_input() = tensor_info("q", onnx::TensorProto::FLOAT, {B, H, 1, D});
  *g->add_input() = tensor_info("k", onnx::TensorProto::FLOAT, {B, H, T, D});
  *g->add_input() = tensor_info("kt", onnx::TensorProto::FLOAT, {B, H, D, T});
  *g->add_input() = tensor_info("v", onnx::TensorProto::FLOAT, {B, H, T, Dv});
  *g->add_input() = tensor_info("mask", onnx::TensorProto::FLOAT, {B, 1, 1, T});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {B, H, 1, Dv});
  *g->add_output() = tensor_info("y2", onnx::TensorProto::FLOAT, {B, H, 1, Dv});
  *g->add_initializer() = float_tensor("scale", {}, {0.2236068f});
  add_ints_attr(add_node(g, "Transpose", {"k"}, {"k_t"}), "perm", {0, 1, 3, 2});
  add_node(g, "MatMul", {"q", "k_t"}, {"s"});
  add_node(g, "Mul", {"s", "scale"}, {"ss"});
  add_node(g, "Add", {"ss", "mask"}, {"sm"});
  add_int_attr(add_node(g, "Softmax", {"sm"}, {"p"}), "axis", -1);
  add_node(g, "MatMul", {"p", "v"}, {"y"});
  add_node(g, "MatMul", {"q", "kt"}, {"s2"});
  add_node(g, "Mul", {"s2", "scale"}, {"ss2"});
  add_int_attr(add_node(g, "Softmax", {"ss2"}, {"p2"}), "axis", -1);
  add_node(g, "MatMul", {"p2", "v"}, {"y2"});
  std::vector<float> mask(B * T, 0.f);
  for (int64_t t = 0; t < 7; ++t) mask[T + t] = -1e9f;  // the second row's left padding
  Feeds feeds = {{"q", Value(Tensor::from_vector<float>(random_values(B * H * D, 80), {B, H, 1, D}))},
                 {"k", Value(Tensor::from_vector<float>(random_values(B * H * T * D, 81), {B, H, T, D}))},
                 {"kt", Value(Tensor::from_vector<float>(random_values(B * H * D * T, 82), {B, H, D, T}))},
                 {"v", Value(Tensor::from_vector<float>(random_values(B * H * T * Dv, 83), {B, H, T, Dv}))},
                 {"mask", Value(Tensor::from_vector<float>(mask, {B, 1, 1, T}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["ScaledDotProductAttention+Transpose"], 1);
  EXPECT_EQ(r.fusions["ScaledDotProductAttention"], 1);
}

// Grouped-query attention as Hugging Face writes it (repeat_kv: Unsqueeze(kv, 2) -> Expand
// -> Reshape repeats each of 2 KV heads for 3 query heads): the fused op reads the 2-head
// caches in place. Shapes that are not that repeat (here the Expand also broadcasts a batch of
// 1 to 2) are materialized by the kernel instead; both give the unfused values.
TEST(Optimizer, ScaledDotProductAttentionGroupedHeads) {
  const int64_t Hk = 2, rep = 3, T = 9, D = 8;
  for (int64_t kv_batch : {2, 1}) {
    auto m = test::make_model();
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("q", onnx::TensorProto::FLOAT, {2, Hk * rep, 1, D});
    *g->add_input() = tensor_info("k", onnx::TensorProto::FLOAT, {kv_batch, Hk, T, D});
    *g->add_input() = tensor_info("v", onnx::TensorProto::FLOAT, {kv_batch, Hk, T, D});
    *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, Hk * rep, 1, D});
    *g->add_initializer() = float_tensor("scale", {}, {0.35355339f});
    *g->add_initializer() = test::int64_tensor("axis2", {1}, {2});
    *g->add_initializer() = test::int64_tensor("expand_to", {5}, {2, Hk, rep, T, D});
    *g->add_initializer() = test::int64_tensor("merged", {4}, {2, Hk * rep, T, D});
    for (const std::string kv : {"k", "v"}) {
      add_node(g, "Unsqueeze", {kv, "axis2"}, {kv + "_u"});
      add_node(g, "Expand", {kv + "_u", "expand_to"}, {kv + "_e"});
      add_node(g, "Reshape", {kv + "_e", "merged"}, {kv + "_rep"});
    }
    add_ints_attr(add_node(g, "Transpose", {"k_rep"}, {"kt"}), "perm", {0, 1, 3, 2});
    add_node(g, "MatMul", {"q", "kt"}, {"s"});
    add_node(g, "Mul", {"s", "scale"}, {"ss"});
    add_int_attr(add_node(g, "Softmax", {"ss"}, {"p"}), "axis", -1);
    add_node(g, "MatMul", {"p", "v_rep"}, {"y"});
    const int64_t kv_size = kv_batch * Hk * T * D;
    Feeds feeds = {{"q", Value(Tensor::from_vector<float>(random_values(2 * Hk * rep * D, 90), {2, Hk * rep, 1, D}))},
                   {"k", Value(Tensor::from_vector<float>(random_values(kv_size, 91), {kv_batch, Hk, T, D}))},
                   {"v", Value(Tensor::from_vector<float>(random_values(kv_size, 92), {kv_batch, Hk, T, D}))}};
    OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
    EXPECT_EQ(r.fusions["ScaledDotProductAttention+Transpose+RepeatKV"], 1) << "kv batch " << kv_batch;
  }
}

// If branches (and an If nested in one) get the passes too, with the enclosing graph's
// constants they read as their own: Optimum's merged decoders run the whole model inside
// an If. Linear layers on outer weights fuse in every branch; an initializer that is also
// a graph input stays an input (a fed value wins), and the values match level disable.
// BERT's self-attention as exported: per projection x @ W + b, Reshape to
// [B, S, H, D], Transpose heads-first (K to [B, H, D, S]); Softmax(Q K^T / sqrt(D))
// @ V back to [B, S, H Dv].
onnx::ModelProto bert_self_attention(int64_t B, int64_t S, int64_t E, int64_t H, int64_t Dqk, int64_t Dv) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {B, S, E});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {B, S, H * Dv});
  uint32_t seed = 60;
  for (auto [p, D, perm] : {std::tuple{"q", Dqk, std::vector<int64_t>{0, 2, 1, 3}},
                            std::tuple{"k", Dqk, std::vector<int64_t>{0, 2, 3, 1}},
                            std::tuple{"v", Dv, std::vector<int64_t>{0, 2, 1, 3}}}) {
    std::string n = p;
    *g->add_initializer() = float_tensor(n + "_w", {E, H * D}, random_values(E * H * D, seed++));
    *g->add_initializer() = float_tensor(n + "_b", {H * D}, random_values(H * D, seed++));
    *g->add_initializer() = test::int64_tensor(n + "_shape", {4}, {B, S, H, D});
    add_node(g, "MatMul", {"x", n + "_w"}, {n + "_mm"});
    add_node(g, "Add", {n + "_mm", n + "_b"}, {n + "_lin"});
    add_node(g, "Reshape", {n + "_lin", n + "_shape"}, {n + "_heads"});
    add_ints_attr(add_node(g, "Transpose", {n + "_heads"}, {n + "_t"}), "perm", perm);
  }
  *g->add_initializer() = float_tensor("sqrt_d", {}, {std::sqrt(static_cast<float>(Dqk))});
  *g->add_initializer() = test::int64_tensor("out_shape", {3}, {B, S, H * Dv});
  add_node(g, "MatMul", {"q_t", "k_t"}, {"scores"});
  add_node(g, "Div", {"scores", "sqrt_d"}, {"scaled"});
  add_int_attr(add_node(g, "Softmax", {"scaled"}, {"probs"}), "axis", -1);
  add_node(g, "MatMul", {"probs", "v_t"}, {"ctx"});
  add_ints_attr(add_node(g, "Transpose", {"ctx"}, {"ctx_t"}), "perm", {0, 2, 1, 3});
  add_node(g, "Reshape", {"ctx_t", "out_shape"}, {"y"});
  return m;
}

// The fused Attention splits one packed projection in three equal parts: a
// value projection of another width than the query's stays unfused.
TEST(Optimizer, AttentionFusesOnlyEqualProjections) {
  const int64_t B = 2, S = 3, E = 16, H = 2;
  for (auto [Dqk, Dv] : {std::pair<int64_t, int64_t>{8, 8}, {4, 8}, {8, 4}}) {
    auto m = bert_self_attention(B, S, E, H, Dqk, Dv);
    Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(B * S * E, 7), {B, S, E}))}};
    OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-4f);
    EXPECT_EQ(r.fusions["Attention"], Dqk == Dv ? 1 : 0) << "Dqk " << Dqk << " Dv " << Dv;
  }
}

TEST(Optimizer, SubgraphsAreOptimizedWithOuterConstants) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("c", onnx::TensorProto::BOOL, {});
  *g->add_input() = tensor_info("c2", onnx::TensorProto::BOOL, {});
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 4});
  *g->add_input() = tensor_info("k", onnx::TensorProto::FLOAT, {1});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_initializer() = float_tensor("w", {4, 3}, random_values(12, 70));
  *g->add_initializer() = float_tensor("b", {3}, {0.5f, -1.0f, 2.0f});
  *g->add_initializer() = float_tensor("k", {1}, {3.0f});  // overridable
  auto linear_branch = [](onnx::GraphProto* sg, const std::string& name) {
    sg->set_name(name);
    *sg->add_output() = tensor_info(name + "_r", onnx::TensorProto::FLOAT, {2, 3});
    add_node(sg, "MatMul", {"x", "w"}, {name + "_mm"});
    add_node(sg, "Add", {name + "_mm", "b"}, {name + "_lin"});
    add_node(sg, "Mul", {name + "_lin", "k"}, {name + "_r"});
  };
  auto add_branches = [](onnx::NodeProto* n) {
    std::vector<onnx::GraphProto*> branches;
    for (const char* attr : {"then_branch", "else_branch"}) {
      auto* a = n->add_attribute();
      a->set_name(attr);
      a->set_type(onnx::AttributeProto::GRAPH);
      branches.push_back(a->mutable_g());
    }
    return branches;
  };
  auto outer = add_branches(add_node(g, "If", {"c"}, {"y"}, "if"));
  linear_branch(outer[0], "then");
  outer[1]->set_name("else");
  *outer[1]->add_output() = tensor_info("else_r", onnx::TensorProto::FLOAT, {2, 3});
  auto nested = add_branches(add_node(outer[1], "If", {"c2"}, {"else_r"}, "nested_if"));
  linear_branch(nested[0], "nested_then");
  linear_branch(nested[1], "nested_else");
  add_node(nested[1], "Neg", {"nested_else_r"}, {"nested_else_neg"});
  *nested[1]->mutable_output(0) = tensor_info("nested_else_neg", onnx::TensorProto::FLOAT, {2, 3});
  Tensor x = Tensor::from_vector<float>(random_values(8, 71), {2, 4});
  for (bool c : {true, false})
    for (bool c2 : {true, false}) {
      Feeds feeds = {{"c", Value(Tensor::scalar<bool>(c))},
                     {"c2", Value(Tensor::scalar<bool>(c2))},
                     {"x", Value(x)},
                     {"k", Value(Tensor::from_vector<float>({-2.0f}, {1}))}};
      OptimizationReport r = check_same(m, feeds, OptimizationLevel::All);
      EXPECT_EQ(r.fusions["MatMul+Add"], 3);
      Feeds defaults(feeds.begin(), feeds.end() - 1);  // k at its initializer's value
      check_same(m, defaults, OptimizationLevel::All);
    }
}

// SiLU written as x * Sigmoid(x) after a Linear, with bias (a Conformer's feed-forward) and
// without (a Llama MLP's gate projection), runs in the FusedMatMul epilogue; a Sigmoid whose
// output has another reader is left alone.
TEST(Optimizer, MatMulSwishFusesIntoEpilogue) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3, 40});
  *g->add_output() = tensor_info("gate", onnx::TensorProto::FLOAT, {2, 3, 24});
  *g->add_output() = tensor_info("ff", onnx::TensorProto::FLOAT, {2, 3, 24});
  *g->add_output() = tensor_info("kept", onnx::TensorProto::FLOAT, {2, 3, 24});
  *g->add_output() = tensor_info("sig", onnx::TensorProto::FLOAT, {2, 3, 24});
  *g->add_initializer() = float_tensor("w1", {40, 24}, random_values(960, 31));
  *g->add_initializer() = float_tensor("w2", {40, 24}, random_values(960, 32));
  *g->add_initializer() = float_tensor("w3", {40, 24}, random_values(960, 33));
  *g->add_initializer() = float_tensor("b", {24}, random_values(24, 34));
  add_node(g, "MatMul", {"x", "w1"}, {"h1"});
  add_node(g, "Sigmoid", {"h1"}, {"s1"});
  add_node(g, "Mul", {"h1", "s1"}, {"gate"});
  add_node(g, "MatMul", {"x", "w2"}, {"m2"});
  add_node(g, "Add", {"m2", "b"}, {"h2"});
  add_node(g, "Sigmoid", {"h2"}, {"s2"});
  add_node(g, "Mul", {"s2", "h2"}, {"ff"});
  add_node(g, "MatMul", {"x", "w3"}, {"h3"});
  add_node(g, "Sigmoid", {"h3"}, {"sig"});
  add_node(g, "Mul", {"h3", "sig"}, {"kept"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(240, 35), {2, 3, 40}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["MatMul+Swish"], 1);
  EXPECT_EQ(r.fusions["MatMul+Add+Swish"], 1);
  EXPECT_EQ(r.fusions["MatMul+Add"], 1);
}

// PyTorch 2's exporter writes nn.Linear + GELU as MatMul, Add and the opset-20
// Gelu: both forms of it end in the FusedMatMul epilogue.
TEST(Optimizer, StandardGeluFoldsIntoFusedMatMul) {
  auto m = test::make_model(20);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {3, 5});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {3, 4});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {3, 4});
  *g->add_initializer() = float_tensor("w", {5, 4}, random_values(20, 7));
  *g->add_initializer() = float_tensor("w2", {5, 4}, random_values(20, 11));
  *g->add_initializer() = float_tensor("b", {4}, {0.5f, -1.0f, 0.25f, 2.0f});
  add_node(g, "MatMul", {"x", "w"}, {"h"});
  add_node(g, "Add", {"h", "b"}, {"hb"});
  add_node(g, "Gelu", {"hb"}, {"y"});
  add_node(g, "MatMul", {"x", "w2"}, {"h2"});
  add_node(g, "Add", {"h2", "b"}, {"hb2"});
  auto* tanh = add_node(g, "Gelu", {"hb2"}, {"z"});
  auto* approx = tanh->add_attribute();
  approx->set_name("approximate");
  approx->set_type(onnx::AttributeProto::STRING);
  approx->set_s("tanh");
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(15, 9), {3, 5}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["MatMul+Add+Gelu"], 2);
}

// Dynamic quantization's per-MatMul chain (ORT's quantize_dynamic form):
// MatMulInteger -> Cast -> Mul(input scale x weight scale) -> Add(bias)
// becomes one MatMulIntegerToFloat; the shared DynamicQuantizeLinear stays.
TEST(Optimizer, DynamicQuantizedMatMulChainFuses) {
  auto m = test::make_model(17);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {3, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {3, 4});
  *g->add_output() = tensor_info("y2", onnx::TensorProto::FLOAT, {3, 4});
  onnx::TensorProto w;
  w.set_name("w");
  w.set_data_type(onnx::TensorProto::INT8);
  w.add_dims(6);
  w.add_dims(4);
  std::string bytes;
  for (int i = 0; i < 24; ++i) bytes.push_back(static_cast<char>((i * 37) % 255 - 127));
  w.set_raw_data(bytes);
  *g->add_initializer() = w;
  std::reverse(bytes.begin(), bytes.end());  // a second weight, so the two chains stay apart
  w.set_name("w2");
  w.set_raw_data(bytes);
  *g->add_initializer() = w;
  *g->add_initializer() = float_tensor("w_scale", {}, {0.02f});
  *g->add_initializer() = float_tensor("bias", {4}, {0.5f, -1.0f, 0.25f, 2.0f});
  add_node(g, "DynamicQuantizeLinear", {"x"}, {"q", "s", "z"});
  add_node(g, "Mul", {"s", "w_scale"}, {"scale"});
  // Two projections of the same quantized input, one with a bias.
  add_node(g, "MatMulInteger", {"q", "w", "z"}, {"acc"});
  add_int_attr(add_node(g, "Cast", {"acc"}, {"accf"}), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Mul", {"accf", "scale"}, {"mm"});
  add_node(g, "Add", {"mm", "bias"}, {"y"});
  add_node(g, "MatMulInteger", {"q", "w2", "z"}, {"acc2"});
  add_int_attr(add_node(g, "Cast", {"acc2"}, {"accf2"}), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Mul", {"scale", "accf2"}, {"y2"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(18, 12), {3, 6}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Extended, 1e-5f);
  EXPECT_EQ(r.fusions["MatMulInteger+Cast+Mul+Add"], 1);
  EXPECT_EQ(r.fusions["MatMulInteger+Cast+Mul"], 1);
}

// Swin's window padding as exporters write it: the pad to a multiple of the
// window is computed from the input's shape at run time (Shape, Gather, Mod,
// Sub, Concat), which libonnx's data propagation does not follow through Mod.
// Inference works those small values out, so the Pad's output gets a static
// shape and the Shape read from it folds too (2 Shape foldings, not 1).
TEST(Optimizer, ShapesComputedAtRunTimeAreInferred) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 7, 6, 2});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {-1, -1, -1}, {"b", "h", "rest"});
  *g->add_initializer() = test::int64_tensor("one", {1}, {1});
  *g->add_initializer() = test::int64_tensor("window", {1}, {4});
  *g->add_initializer() = test::int64_tensor("zeros", {5}, {0, 0, 0, 0, 0});
  *g->add_initializer() = test::int64_tensor("zero2", {2}, {0, 0});
  *g->add_initializer() = test::int64_tensor("first_two", {2}, {0, 1});
  *g->add_initializer() = test::int64_tensor("rest", {1}, {-1});
  add_node(g, "Shape", {"x"}, {"s"});
  add_node(g, "Gather", {"s", "one"}, {"h"});
  add_node(g, "Mod", {"h", "window"}, {"h_mod"});
  add_node(g, "Sub", {"window", "h_mod"}, {"short"});
  add_node(g, "Mod", {"short", "window"}, {"pad_h"});
  add_int_attr(add_node(g, "Concat", {"zeros", "pad_h", "zero2"}, {"pads"}), "axis", 0);
  add_node(g, "Pad", {"x", "pads"}, {"padded"});
  add_node(g, "Shape", {"padded"}, {"ps"});
  add_node(g, "Gather", {"ps", "first_two"}, {"lead"});
  add_int_attr(add_node(g, "Concat", {"lead", "rest"}, {"to"}), "axis", 0);
  add_node(g, "Reshape", {"padded", "to"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(random_values(84, 61), {1, 7, 6, 2}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Basic);
  EXPECT_EQ(r.fusions["Shape folding"], 2);
  auto out = load(m, OptimizationLevel::Basic)->run(feeds);
  EXPECT_EQ(out[0].tensor().shape(), (Shape{1, 8, 12}));
}

TEST(Optimizer, BasicFoldsShapesCastsAndDuplicates) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {3, 2});
  add_node(g, "Shape", {"x"}, {"s"});
  *g->add_initializer() = test::float_tensor("unused", {1}, {0});
  // reversed shape via constant-foldable ops: Gather(s, [1, 0])
  onnx::TensorProto idx;
  idx.set_name("idx");
  idx.set_data_type(onnx::TensorProto::INT64);
  idx.add_dims(2);
  idx.add_int64_data(1);
  idx.add_int64_data(0);
  *g->add_initializer() = idx;
  add_node(g, "Gather", {"s", "idx"}, {"rs"});
  add_node(g, "Reshape", {"x", "rs"}, {"r"});
  add_int_attr(add_node(g, "Cast", {"r"}, {"rc"}), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Relu", {"rc"}, {"a1"});
  add_node(g, "Relu", {"rc"}, {"a2"});  // duplicate of a1
  add_node(g, "Add", {"a1", "a2"}, {"y"});
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>({1, -2, 3, -4, 5, -6}, {2, 3}))}};
  OptimizationReport r = check_same(m, feeds, OptimizationLevel::Basic);
  EXPECT_EQ(r.fusions["Shape folding"], 1);
  bool cse = false, folding = false;
  for (auto& p : r.passes) {
    if (p.name == "common_subexpression_elimination") cse = p.changed > 0;
    if (p.name == "constant_folding") folding = folding || p.changed > 0;  // it runs twice
  }
  EXPECT_TRUE(cse);
  EXPECT_TRUE(folding);
}

TEST(Optimizer, DisabledPassDoesNotRun) {
  auto m = test::add_relu_model();
  std::string bytes = test::serialize(m);
  SessionOptions o;
  o.config["session.disable_passes"] = "constant_folding,dead_code_elimination";
  auto s = Session::from_bytes(bytes.data(), bytes.size(), o);
  for (auto& p : s->optimization_report().passes)
    if (p.name == "constant_folding" || p.name == "dead_code_elimination") {
      EXPECT_EQ(p.ms, 0.0) << p.name;
    }
}

}  // namespace
}  // namespace onyx
