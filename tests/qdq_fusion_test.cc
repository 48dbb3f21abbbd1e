// The qdq_fusion pass on small QDQ graphs: the fused graph holds the integer
// ops, and its outputs equal the float QDQ graph's (optimizations disabled)
// within one quantization step; groups that are not exactly equivalent stay.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>

#include "session_test_util.h"

namespace onyx {
namespace {

using test::add_int_attr;
using test::add_ints_attr;
using test::add_node;
using test::float_tensor;
using test::int_tensor;
using test::load;
using test::random_ints;
using test::tensor_info;

std::vector<float> random_values(size_t n, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Scale and zero point constants named `prefix`_s / `prefix`_z.
void add_qparams(onnx::GraphProto* g, const std::string& prefix, float scale, int type, int32_t zero_point) {
  *g->add_initializer() = float_tensor(prefix + "_s", {}, {scale});
  *g->add_initializer() = int_tensor(prefix + "_z", type, {}, {zero_point});
}

void quantize(onnx::GraphProto* g, const std::string& in, const std::string& params, const std::string& out) {
  add_node(g, "QuantizeLinear", {in, params + "_s", params + "_z"}, {out});
}

void dequantize(onnx::GraphProto* g, const std::string& in, const std::string& params, const std::string& out) {
  add_node(g, "DequantizeLinear", {in, params + "_s", params + "_z"}, {out});
}

struct Optimized {
  std::map<std::string, int> ops;  // op type -> count in the optimized graph
  OptimizationReport report;
};

// Runs `m` unoptimized and at level extended; each output must agree within
// `steps[k]` (its quantization step; integer outputs: one unit).
Optimized check_within_steps(const onnx::ModelProto& m, const Feeds& feeds, const std::vector<double>& steps,
                             OptimizationLevel level = OptimizationLevel::Extended) {
  // One file per test: ctest runs the tests of this suite in parallel processes.
  std::string path = testing::TempDir() + "qdq_fusion_" +
                     testing::UnitTest::GetInstance()->current_test_info()->name() + "_optimized.onnx";
  auto ref = load(m, OptimizationLevel::Disable)->run(feeds);
  auto s = load(m, level, path);
  auto got = s->run(feeds);
  EXPECT_EQ(ref.size(), got.size());
  for (size_t k = 0; k < ref.size() && k < got.size(); ++k) {
    const Tensor &a = ref[k].tensor(), &b = got[k].tensor();
    EXPECT_EQ(a.dtype(), b.dtype());
    EXPECT_EQ(a.shape(), b.shape());
    for (int64_t i = 0; i < a.numel(); ++i)
      EXPECT_LE(std::abs(b.float_at(i) - a.float_at(i)), steps[k] * 1.0001) << "output " << k << " at " << i;
  }
  Optimized o;
  o.report = s->optimization_report();
  onnx::ModelProto saved;
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(saved.ParseFromIstream(&f));
  for (const auto& n : saved.graph().node()) ++o.ops[n.op_type()];
  std::remove(path.c_str());
  return o;
}

Feeds float_feed(const std::string& name, const std::vector<int64_t>& dims, uint32_t seed) {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  return {{name, Value(Tensor::from_vector<float>(random_values(n, seed), dims))}};
}

// x -> Q -> DQ -> Conv(DQ(w int8 per channel), bias) [-> Relu] -> Q -> DQ -> y,
// 3 -> 5 channels, 3x3, pads 1, stride 2 (odd sizes on purpose).
struct ConvGraph {
  float x_scale = 0.02f, y_scale = 0.05f;
  int32_t y_zero_point = 0;  // uint8
  bool relu = true;
  std::string bias = "int32";  // "int32" (DQ of int32 at x_scale * w_scale), "float", "none"
  std::vector<float> float_bias = {0.1f, -0.25f, 0.33f, 0.0f, 1.5f};
  bool shared_input = false;  // the DQ of x also feeds a second graph output
  bool conv_output_read_twice = false;
  bool scale_is_input = false;  // x's DequantizeLinear reads its scale from a graph input

  onnx::ModelProto build() const {
    auto m = test::make_model();
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 7, 9});
    *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 5, 4, 5});
    std::vector<float> w_scales = {0.01f, 0.02f, 0.015f, 0.03f, 0.005f};
    add_qparams(g, "xq", x_scale, onnx::TensorProto::UINT8, 128);
    add_qparams(g, "yq", y_scale, onnx::TensorProto::UINT8, y_zero_point);
    *g->add_initializer() = int_tensor("w_q", onnx::TensorProto::INT8, {5, 3, 3, 3}, random_ints(135, 3, -127, 127));
    *g->add_initializer() = float_tensor("w_s", {5}, w_scales);
    *g->add_initializer() = int_tensor("w_z", onnx::TensorProto::INT8, {5}, {0, 0, 0, 0, 0});
    quantize(g, "x", "xq", "x_q");
    if (scale_is_input) {
      *g->add_input() = tensor_info("dyn_s", onnx::TensorProto::FLOAT, {});
      add_node(g, "DequantizeLinear", {"x_q", "dyn_s", "xq_z"}, {"x_dq"});
    } else {
      dequantize(g, "x_q", "xq", "x_dq");
    }
    auto* dqw = add_node(g, "DequantizeLinear", {"w_q", "w_s", "w_z"}, {"w"});
    add_int_attr(dqw, "axis", 0);
    std::vector<std::string> conv_in = {"x_dq", "w"};
    if (bias == "int32") {
      std::vector<float> b_scales(5);
      std::vector<int32_t> b(5);
      for (int c = 0; c < 5; ++c) {
        b_scales[c] = x_scale * w_scales[c];
        b[c] = static_cast<int32_t>(std::nearbyint(float_bias[c] / b_scales[c]));
      }
      *g->add_initializer() = int_tensor("b_q", onnx::TensorProto::INT32, {5}, b);
      *g->add_initializer() = float_tensor("b_s", {5}, b_scales);
      *g->add_initializer() = int_tensor("b_z", onnx::TensorProto::INT32, {5}, {0, 0, 0, 0, 0});
      add_int_attr(add_node(g, "DequantizeLinear", {"b_q", "b_s", "b_z"}, {"b"}), "axis", 0);
      conv_in.push_back("b");
    } else if (bias == "float") {
      *g->add_initializer() = float_tensor("b", {5}, float_bias);
      conv_in.push_back("b");
    }
    auto* conv = add_node(g, "Conv", conv_in, {"c"});
    add_ints_attr(conv, "pads", {1, 1, 1, 1});
    add_ints_attr(conv, "strides", {2, 2});
    std::string out = "c";
    if (relu) add_node(g, "Relu", {"c"}, {"r"}), out = "r";
    quantize(g, out, "yq", "y_q");
    dequantize(g, "y_q", "yq", "y");
    if (shared_input) {
      *g->add_output() = tensor_info("x_again", onnx::TensorProto::FLOAT, {1, 3, 7, 9});
      add_node(g, "Neg", {"x_dq"}, {"x_again"});
    }
    if (conv_output_read_twice) {
      *g->add_output() = tensor_info("c_neg", onnx::TensorProto::FLOAT, {1, 5, 4, 5});
      add_node(g, "Neg", {"c"}, {"c_neg"});
    }
    return m;
  }
};

Feeds conv_feed() { return float_feed("x", {1, 3, 7, 9}, 7); }

TEST(QdqFusion, ConvPerChannelWithInt32BiasAndRelu) {
  ConvGraph c;
  Optimized o = check_within_steps(c.build(), conv_feed(), {c.y_scale});
  EXPECT_EQ(o.report.fusions["DQ+Conv+Relu+Q"], 1);
  EXPECT_EQ(o.ops["QLinearConv"], 1);
  EXPECT_EQ(o.ops["Conv"] + o.ops["Relu"] + o.ops["FusedConv"], 0);
  EXPECT_EQ(o.ops["DequantizeLinear"], 1);  // the output's
  EXPECT_EQ(o.ops["QuantizeLinear"], 1);    // the input's
}

TEST(QdqFusion, ConvWithFloatBiasRequantizedAndNoBias) {
  for (const char* bias : {"float", "none"}) {
    ConvGraph c;
    c.bias = bias;
    c.relu = false;
    c.y_zero_point = 100;
    Optimized o = check_within_steps(c.build(), conv_feed(), {c.y_scale});
    EXPECT_EQ(o.report.fusions["DQ+Conv+Q"], 1) << bias;
    EXPECT_EQ(o.ops["QLinearConv"], 1) << bias;
  }
}

// A Relu before a QuantizeLinear whose zero point is not the type's minimum
// clamps values Q would keep: the group stays float.
TEST(QdqFusion, ReluThatIsNotAClampStays) {
  ConvGraph c;
  c.y_zero_point = 100;
  Optimized o = check_within_steps(c.build(), conv_feed(), {c.y_scale});
  EXPECT_EQ(o.ops["QLinearConv"], 0);
}

// The DequantizeLinear of x has a second reader: the conv still fuses (it
// reads the integer x), and the DequantizeLinear stays for that reader.
TEST(QdqFusion, SharedDequantizeStaysForItsOtherReader) {
  ConvGraph c;
  c.shared_input = true;
  Optimized o = check_within_steps(c.build(), conv_feed(), {c.y_scale, 1e-6});
  EXPECT_EQ(o.ops["QLinearConv"], 1);
  EXPECT_EQ(o.ops["DequantizeLinear"], 2);
  EXPECT_EQ(o.ops["Neg"], 1);
}

TEST(QdqFusion, NegativeCasesLeaveTheGraphAlone) {
  ConvGraph read_twice;
  read_twice.conv_output_read_twice = true;
  ConvGraph dynamic_scale;
  dynamic_scale.scale_is_input = true;
  ConvGraph coarse_bias;  // x_scale * w_scale far above the output step: the int32 bias would move outputs
  coarse_bias.bias = "float";
  coarse_bias.x_scale = 0.5f;
  coarse_bias.y_scale = 0.01f;
  coarse_bias.float_bias = {0.1013f, -0.2611f, 0.3317f, 0.0703f, 1.5119f};
  ConvGraph huge_bias;  // beyond int32 at scale x_scale * w_scale
  huge_bias.bias = "float";
  huge_bias.float_bias = {1e9f, 0, 0, 0, 0};
  for (const ConvGraph* c : {&read_twice, &dynamic_scale, &coarse_bias, &huge_bias}) {
    onnx::ModelProto m = c->build();
    Feeds feeds = conv_feed();
    if (c->scale_is_input) feeds.push_back({"dyn_s", Value(Tensor::scalar<float>(c->x_scale))});
    std::vector<double> steps = {c->y_scale, 1e-5};
    Optimized o = check_within_steps(m, feeds, steps);
    EXPECT_EQ(o.ops["QLinearConv"], 0);
    for (auto& [name, count] : o.report.fusions) EXPECT_NE(name.substr(0, 3), "DQ+") << name;
  }
}

// DQ(a) x DQ(b const, int8 per column) -> MatMul -> Q, whose integer output
// is the graph output (it keeps its name): QLinearMatMul.
TEST(QdqFusion, MatMulBecomesQLinearMatMul) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("a", onnx::TensorProto::FLOAT, {2, 3, 17});
  *g->add_output() = tensor_info("y_q", onnx::TensorProto::INT8, {2, 3, 11});
  add_qparams(g, "aq", 0.03f, onnx::TensorProto::INT8, -3);
  add_qparams(g, "yq", 0.2f, onnx::TensorProto::INT8, 5);
  *g->add_initializer() = int_tensor("b_q", onnx::TensorProto::INT8, {17, 11}, random_ints(187, 9, -127, 127));
  *g->add_initializer() = float_tensor("b_s", {11}, random_values(11, 10, 0.005f, 0.02f));
  *g->add_initializer() = int_tensor("b_z", onnx::TensorProto::INT8, {11}, std::vector<int32_t>(11, 0));
  quantize(g, "a", "aq", "a_q");
  dequantize(g, "a_q", "aq", "a_dq");
  add_int_attr(add_node(g, "DequantizeLinear", {"b_q", "b_s", "b_z"}, {"b"}), "axis", 1);
  add_node(g, "MatMul", {"a_dq", "b"}, {"mm"});
  quantize(g, "mm", "yq", "y_q");
  Optimized o = check_within_steps(m, float_feed("a", {2, 3, 17}, 11), {1});
  EXPECT_EQ(o.report.fusions["DQ+MatMul+Q"], 1);
  EXPECT_EQ(o.ops["QLinearMatMul"], 1);
  EXPECT_EQ(o.ops["MatMul"] + o.ops["DequantizeLinear"], 0);
}

// MaxPool, Transpose, Reshape and Concat between DQ/Q pairs of one
// quantization run on the integer tensors; a Reshape whose Q differs stays.
TEST(QdqFusion, DataMovementAndMaxPoolDropTheirQdqPairs) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 2, 5, 5});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 2, 4, 8});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {1, 32});
  add_qparams(g, "q", 0.04f, onnx::TensorProto::UINT8, 120);
  add_qparams(g, "other", 0.05f, onnx::TensorProto::UINT8, 120);
  *g->add_initializer() = test::int64_tensor("shape", {2}, {1, 32});
  quantize(g, "x", "q", "x_q");
  dequantize(g, "x_q", "q", "x_dq");
  auto* pool = add_node(g, "MaxPool", {"x_dq"}, {"p"});
  add_ints_attr(pool, "kernel_shape", {3, 3});
  add_ints_attr(pool, "pads", {0, 0, 1, 1});
  quantize(g, "p", "q", "p_q");  // [1, 2, 4, 4]
  dequantize(g, "p_q", "q", "p_dq1");
  dequantize(g, "p_q", "q", "p_dq2");
  auto* tr = add_node(g, "Transpose", {"p_dq1"}, {"t"});
  add_ints_attr(tr, "perm", {0, 1, 3, 2});
  quantize(g, "t", "q", "t_q");
  dequantize(g, "t_q", "q", "t_dq");
  add_int_attr(add_node(g, "Concat", {"p_dq2", "t_dq"}, {"cat"}), "axis", 3);
  quantize(g, "cat", "q", "cat_q");
  dequantize(g, "cat_q", "q", "y");
  dequantize(g, "p_q", "q", "p_dq3");
  add_node(g, "Reshape", {"p_dq3", "shape"}, {"r"});
  quantize(g, "r", "other", "r_q");  // a different quantization: stays
  dequantize(g, "r_q", "other", "z");
  Optimized o = check_within_steps(m, float_feed("x", {1, 2, 5, 5}, 12), {0.04, 0.05});
  EXPECT_EQ(o.report.fusions["DQ+MaxPool+Q"], 1);
  EXPECT_EQ(o.report.fusions["DQ+Transpose+Q"], 1);
  EXPECT_EQ(o.report.fusions["DQ+Concat+Q"], 1);
  EXPECT_EQ(o.report.fusions.count("DQ+Reshape+Q"), 0u);
  EXPECT_EQ(o.ops["DequantizeLinear"], 3);  // y's, and the Reshape's pair
  EXPECT_EQ(o.ops["QuantizeLinear"], 2);
}

// A YOLOv8 block's 8-bit ops in QDQ form: x * Sigmoid(x) (SiLU), a Split of the channels
// whose parts keep the input's quantization, and a Concat of differently quantized inputs:
// QLinearSigmoid and QLinearMul (then composed into one LookupTable of x), an integer Split and
// QLinearConcat, every output within a step.
TEST(QdqFusion, SiluSplitAndConcatBecomeIntegerOps) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 4, 3, 5});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {1, 6, 3, 5});
  add_qparams(g, "xq", 0.03f, onnx::TensorProto::UINT8, 128);
  add_qparams(g, "sig", 1.0f / 255, onnx::TensorProto::UINT8, 0);
  add_qparams(g, "silu", 0.02f, onnx::TensorProto::UINT8, 14);
  add_qparams(g, "cat", 0.035f, onnx::TensorProto::UINT8, 100);
  *g->add_initializer() = test::int64_tensor("parts", {2}, {2, 2});
  quantize(g, "x", "xq", "x_q");
  dequantize(g, "x_q", "xq", "x_dq1");
  dequantize(g, "x_q", "xq", "x_dq2");
  add_node(g, "Sigmoid", {"x_dq1"}, {"s"});
  quantize(g, "s", "sig", "s_q");
  dequantize(g, "s_q", "sig", "s_dq");
  add_node(g, "Mul", {"x_dq2", "s_dq"}, {"silu"});
  quantize(g, "silu", "silu", "silu_q");
  dequantize(g, "silu_q", "silu", "silu_dq1");
  dequantize(g, "silu_q", "silu", "silu_dq2");
  auto* split = add_node(g, "Split", {"silu_dq1", "parts"}, {"a", "b"});
  add_int_attr(split, "axis", 1);
  quantize(g, "a", "silu", "a_q");
  quantize(g, "b", "silu", "b_q");
  dequantize(g, "b_q", "silu", "b_dq");
  dequantize(g, "x_q", "xq", "x_dq3");
  add_int_attr(add_node(g, "Concat", {"b_dq", "x_dq3"}, {"c"}), "axis", 1);
  quantize(g, "c", "cat", "c_q");
  dequantize(g, "c_q", "cat", "y");
  *g->add_output() = tensor_info("a_q", onnx::TensorProto::UINT8, {1, 2, 3, 5});
  Optimized o = check_within_steps(m, float_feed("x", {1, 4, 3, 5}, 21), {0.035, 1.0});
  EXPECT_EQ(o.report.fusions["DQ+Sigmoid+Q"], 1);
  EXPECT_EQ(o.report.fusions["DQ+Mul+Q"], 1);
  EXPECT_EQ(o.report.fusions["DQ+Split+Q"], 1);
  EXPECT_EQ(o.report.fusions["DQ+Concat+Q as QLinearConcat"], 1);
  EXPECT_EQ(o.report.fusions["QLinearMul of one 8-bit tensor as LookupTable"], 1);
  EXPECT_EQ(o.ops["LookupTable"] + o.ops["QLinearConcat"] + o.ops["Split"], 3);
  EXPECT_EQ(o.ops["QLinearSigmoid"] + o.ops["QLinearMul"] + o.ops["Sigmoid"] + o.ops["Mul"] + o.ops["Concat"], 0);
}

// A QOperator model's SiLU, QLinearMul(a, QLinearSigmoid(a)), where a comes from a
// com.microsoft op that libonnx cannot type (QLinearAdd of two tensors): the zero points
// give a's type, and the two become one LookupTable, bit-equal to running them. Before,
// only a model's first SiLU (on a typed tensor) became a table.
TEST(QdqFusion, QOperatorSiluOnAnUntypedTensorBecomesLookupTable) {
  auto m = test::make_model();
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x1", onnx::TensorProto::FLOAT, {1, 3, 4, 5});
  *g->add_input() = tensor_info("x2", onnx::TensorProto::FLOAT, {1, 3, 4, 5});
  *g->add_output() = tensor_info("y", onnx::TensorProto::UINT8, {1, 3, 4, 5});
  add_qparams(g, "xq", 0.03f, onnx::TensorProto::UINT8, 120);
  add_qparams(g, "a", 0.05f, onnx::TensorProto::UINT8, 128);
  add_qparams(g, "sig", 1.0f / 256, onnx::TensorProto::UINT8, 0);
  add_qparams(g, "y", 0.02f, onnx::TensorProto::UINT8, 14);
  quantize(g, "x1", "xq", "x1_q");
  quantize(g, "x2", "xq", "x2_q");
  add_node(g, "QLinearAdd", {"x1_q", "xq_s", "xq_z", "x2_q", "xq_s", "xq_z", "a_s", "a_z"}, {"a_q"})
      ->set_domain("com.microsoft");
  add_node(g, "QLinearSigmoid", {"a_q", "a_s", "a_z", "sig_s", "sig_z"}, {"s_q"})->set_domain("com.microsoft");
  add_node(g, "QLinearMul", {"a_q", "a_s", "a_z", "s_q", "sig_s", "sig_z", "y_s", "y_z"}, {"y"})
      ->set_domain("com.microsoft");
  Feeds feeds = float_feed("x1", {1, 3, 4, 5}, 41);
  feeds.push_back(float_feed("x2", {1, 3, 4, 5}, 42)[0]);
  Optimized o = check_within_steps(m, feeds, {0});
  EXPECT_EQ(o.report.fusions["QLinearMul of one 8-bit tensor as LookupTable"], 1);
  EXPECT_EQ(o.ops["LookupTable"], 1);
  EXPECT_EQ(o.ops["QLinearSigmoid"] + o.ops["QLinearMul"], 0);
  EXPECT_EQ(o.ops["QLinearAdd"], 1);
}

// MobileNetV3's HardSwish in QDQ form, x * HardSigmoid(x) with the HardSigmoid requantized,
// a Clip, a Sub of a constant and a Mul by one value per channel: each a function of one 8-bit
// code (and its channel), so LookupTables computed from the nodes themselves, bit-equal to
// running them. A Mul by values along W and a Sub whose constant would widen the rank stay float.
TEST(QdqFusion, ElementwiseFunctionsOfOneQuantizedTensorBecomeLookupTables) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 4, 5});
  for (const char* y : {"hswish_q", "clip_q", "sub_q"})
    *g->add_output() = tensor_info(y, onnx::TensorProto::UINT8, {1, 3, 4, 5});
  *g->add_output() = tensor_info("scaled_q", onnx::TensorProto::INT8, {1, 3, 4, 5});
  *g->add_output() = tensor_info("wide_q", onnx::TensorProto::UINT8, {1, 1, 3, 4, 5});
  *g->add_output() = tensor_info("along_w_q", onnx::TensorProto::UINT8, {1, 3, 4, 5});
  add_qparams(g, "xq", 0.03f, onnx::TensorProto::UINT8, 120);
  add_qparams(g, "hs", 1.0f / 255, onnx::TensorProto::UINT8, 0);
  add_qparams(g, "y", 0.021f, onnx::TensorProto::UINT8, 30);
  add_qparams(g, "s8", 0.02f, onnx::TensorProto::INT8, -3);
  *g->add_initializer() = float_tensor("lo", {}, {-0.5f});
  *g->add_initializer() = float_tensor("hi", {}, {1.25f});
  *g->add_initializer() = float_tensor("c", {}, {0.7f});
  *g->add_initializer() = float_tensor("c5", {1, 1, 1, 1, 1}, {0.7f});
  *g->add_initializer() = float_tensor("three", {3, 1, 1}, {0.5f, -1.0f, 2.0f});
  *g->add_initializer() = float_tensor("five", {5}, {0.5f, -1.0f, 2.0f, 1.5f, 0.25f});
  quantize(g, "x", "xq", "x_q");
  dequantize(g, "x_q", "xq", "x_dq");
  add_node(g, "HardSigmoid", {"x_dq"}, {"hsig"});
  quantize(g, "hsig", "hs", "hsig_q");
  dequantize(g, "hsig_q", "hs", "hsig_dq");
  add_node(g, "Mul", {"x_dq", "hsig_dq"}, {"hswish"});
  quantize(g, "hswish", "y", "hswish_q");
  add_node(g, "Clip", {"x_dq", "lo", "hi"}, {"clip"});
  quantize(g, "clip", "y", "clip_q");
  add_node(g, "Sub", {"c", "x_dq"}, {"sub"});
  quantize(g, "sub", "y", "sub_q");
  add_node(g, "Mul", {"x_dq", "three"}, {"scaled"});
  quantize(g, "scaled", "s8", "scaled_q");
  add_node(g, "Sub", {"x_dq", "c5"}, {"wide"});
  quantize(g, "wide", "y", "wide_q");
  add_node(g, "Mul", {"x_dq", "five"}, {"along_w"});
  quantize(g, "along_w", "y", "along_w_q");
  Optimized o = check_within_steps(m, float_feed("x", {1, 3, 4, 5}, 31), {0, 0, 0, 0, 0, 0});
  EXPECT_EQ(o.report.fusions["DQ+HardSigmoid+Q as LookupTable"], 1);
  EXPECT_EQ(o.report.fusions["DQ+Clip+Q as LookupTable"], 1);
  EXPECT_EQ(o.report.fusions["DQ+Sub+Q as LookupTable"], 1);
  EXPECT_EQ(o.report.fusions["DQ+Mul+Q as LookupTable"], 1);  // per channel
  EXPECT_EQ(o.report.fusions["QLinearMul of one 8-bit tensor as LookupTable"], 1);
  EXPECT_EQ(o.ops["LookupTable"], 4);  // HardSwish (one table), Clip, Sub, the per-channel Mul
  EXPECT_EQ(o.ops["HardSigmoid"] + o.ops["Clip"] + o.ops["QLinearMul"], 0);
  EXPECT_EQ(o.ops["Mul"], 1);  // by values along W
  EXPECT_EQ(o.ops["Sub"], 1);  // the rank-5 constant
}

// DenseNet's pre-activation in QDQ form: Conv -> Q -> DQ -> BatchNormalization -> Relu -> Q ->
// DQ -> Conv. The BatchNormalization and Relu become one table per channel; at level all it
// runs channel-last between the integer convolutions. Every output within a step of the float
// graph (the Relu's own output: exactly the integer convolution's values looked up).
TEST(QdqFusion, BatchNormalizationChainBecomesPerChannelLookupTable) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 4, 5, 6});
  *g->add_output() = tensor_info("bn_q", onnx::TensorProto::UINT8, {1, 4, 5, 6});
  *g->add_output() = tensor_info("conv_q", onnx::TensorProto::UINT8, {1, 3, 5, 6});
  add_qparams(g, "xq", 0.03f, onnx::TensorProto::UINT8, 120);
  add_qparams(g, "bn", 0.02f, onnx::TensorProto::UINT8, 0);
  add_qparams(g, "w", 0.01f, onnx::TensorProto::INT8, 0);
  add_qparams(g, "y", 0.05f, onnx::TensorProto::UINT8, 128);
  *g->add_initializer() = float_tensor("gamma", {4}, {1.5f, -0.5f, 0.8f, 2.0f});
  *g->add_initializer() = float_tensor("beta", {4}, {0.1f, 0.4f, -0.3f, 0.0f});
  *g->add_initializer() = float_tensor("mean", {4}, {0.2f, -0.1f, 0.0f, 0.5f});
  *g->add_initializer() = float_tensor("var", {4}, {1.0f, 0.5f, 2.0f, 0.25f});
  add_qparams(g, "c0", 0.04f, onnx::TensorProto::UINT8, 110);
  *g->add_initializer() = int_tensor("w_q", onnx::TensorProto::INT8, {3, 4, 1, 1}, random_ints(12, 32, -100, 100));
  *g->add_initializer() = int_tensor("w0_q", onnx::TensorProto::INT8, {4, 4, 1, 1}, random_ints(16, 34, -100, 100));
  quantize(g, "x", "xq", "x_q");
  dequantize(g, "x_q", "xq", "x_dq");
  dequantize(g, "w0_q", "w", "w0");
  add_node(g, "Conv", {"x_dq", "w0"}, {"c0"});
  quantize(g, "c0", "c0", "c0_q");
  dequantize(g, "c0_q", "c0", "c0_dq");
  add_node(g, "BatchNormalization", {"c0_dq", "gamma", "beta", "mean", "var"}, {"bn"});
  add_node(g, "Relu", {"bn"}, {"bn_relu"});
  quantize(g, "bn_relu", "bn", "bn_q");
  dequantize(g, "bn_q", "bn", "bn_dq");
  dequantize(g, "w_q", "w", "w");
  add_node(g, "Conv", {"bn_dq", "w"}, {"conv"});
  quantize(g, "conv", "y", "conv_q");
  for (auto level : {OptimizationLevel::Extended, OptimizationLevel::All}) {
    Optimized o = check_within_steps(m, float_feed("x", {1, 4, 5, 6}, 33), {1, 1}, level);
    EXPECT_EQ(o.report.fusions["DQ+BatchNormalization+Relu+Q as LookupTable"], 1);
    EXPECT_EQ(o.ops["LookupTable"], 1);
    EXPECT_EQ(o.ops["BatchNormalization"] + o.ops["Relu"], 0);
    // At level all: into channel-last for the first Conv, back for the two outputs; none between.
    if (level == OptimizationLevel::All) {
      EXPECT_EQ(o.ops["Transpose"], 3);
    }
  }
}

// DQ(a) x DQ(b const, per column) -> MatMul with a float output: the integer
// product scaled to float (com.microsoft MatMulIntegerToFloat).
TEST(QdqFusion, MatMulWithFloatOutputBecomesMatMulIntegerToFloat) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("a", onnx::TensorProto::FLOAT, {3, 19});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {3, 13});
  add_qparams(g, "aq", 0.03f, onnx::TensorProto::UINT8, 131);
  *g->add_initializer() = int_tensor("b_q", onnx::TensorProto::INT8, {19, 13}, random_ints(247, 13, -127, 127));
  *g->add_initializer() = float_tensor("b_s", {13}, random_values(13, 14, 0.005f, 0.02f));
  *g->add_initializer() = int_tensor("b_z", onnx::TensorProto::INT8, {13}, random_ints(13, 15, -3, 3));
  quantize(g, "a", "aq", "a_q");
  dequantize(g, "a_q", "aq", "a_dq");
  add_int_attr(add_node(g, "DequantizeLinear", {"b_q", "b_s", "b_z"}, {"b"}), "axis", 1);
  add_node(g, "MatMul", {"a_dq", "b"}, {"y"});
  Optimized o = check_within_steps(m, float_feed("a", {3, 19}, 16), {1e-4});
  EXPECT_EQ(o.report.fusions["DQ+MatMul"], 1);
  EXPECT_EQ(o.ops["MatMulIntegerToFloat"], 1);
  EXPECT_EQ(o.ops["MatMul"] + o.ops["DequantizeLinear"], 0);
}

// A ResNet tail's ops in QDQ form, each fed by quantized graph inputs (chained,
// one step off before the Gemm is several after it): residual Add,
// GlobalAveragePool + Flatten, and a Gemm with an int32 bias (transB,
// per-channel weights) become com.microsoft QLinearAdd,
// QLinearGlobalAveragePool, an integer Flatten and QGemm.
TEST(QdqFusion, ResidualAddPoolAndGemmBecomeContribOps) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  for (const char* x : {"x1", "x2", "x3"}) *g->add_input() = tensor_info(x, onnx::TensorProto::FLOAT, {2, 4, 3, 5});
  *g->add_input() = tensor_info("x4", onnx::TensorProto::FLOAT, {2, 4});
  *g->add_output() = tensor_info("s_q", onnx::TensorProto::UINT8, {2, 4, 3, 5});
  *g->add_output() = tensor_info("f_q", onnx::TensorProto::UINT8, {2, 4});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 6});
  add_qparams(g, "q1", 0.02f, onnx::TensorProto::UINT8, 128);
  add_qparams(g, "q2", 0.025f, onnx::TensorProto::UINT8, 120);
  add_qparams(g, "sum", 0.04f, onnx::TensorProto::UINT8, 125);
  add_qparams(g, "pool", 0.01f, onnx::TensorProto::UINT8, 110);
  add_qparams(g, "out", 0.003f, onnx::TensorProto::UINT8, 128);
  std::vector<float> w_scales = random_values(6, 17, 0.005f, 0.02f);
  *g->add_initializer() = int_tensor("w_q", onnx::TensorProto::INT8, {6, 4}, random_ints(24, 18, -127, 127));
  *g->add_initializer() = float_tensor("w_s", {6}, w_scales);
  *g->add_initializer() = int_tensor("w_z", onnx::TensorProto::INT8, {6}, std::vector<int32_t>(6, 0));
  std::vector<float> b_scales(6);
  for (int c = 0; c < 6; ++c) b_scales[c] = 0.02f * w_scales[c];
  *g->add_initializer() = int_tensor("b_q", onnx::TensorProto::INT32, {6}, random_ints(6, 19, -3000, 3000));
  *g->add_initializer() = float_tensor("b_s", {6}, b_scales);
  *g->add_initializer() = int_tensor("b_z", onnx::TensorProto::INT32, {6}, std::vector<int32_t>(6, 0));
  quantize(g, "x1", "q1", "x1_q");
  dequantize(g, "x1_q", "q1", "x1_dq");
  quantize(g, "x2", "q2", "x2_q");
  dequantize(g, "x2_q", "q2", "x2_dq");
  add_node(g, "Add", {"x1_dq", "x2_dq"}, {"s"});
  quantize(g, "s", "sum", "s_q");
  quantize(g, "x3", "sum", "x3_q");
  dequantize(g, "x3_q", "sum", "x3_dq");
  add_node(g, "GlobalAveragePool", {"x3_dq"}, {"p"});
  quantize(g, "p", "pool", "p_q");
  dequantize(g, "p_q", "pool", "p_dq");
  add_node(g, "Flatten", {"p_dq"}, {"f"});
  quantize(g, "f", "pool", "f_q");
  quantize(g, "x4", "q1", "x4_q");
  dequantize(g, "x4_q", "q1", "x4_dq");
  add_int_attr(add_node(g, "DequantizeLinear", {"w_q", "w_s", "w_z"}, {"w"}), "axis", 0);
  add_int_attr(add_node(g, "DequantizeLinear", {"b_q", "b_s", "b_z"}, {"b"}), "axis", 0);
  add_int_attr(add_node(g, "Gemm", {"x4_dq", "w", "b"}, {"gemm"}), "transB", 1);
  quantize(g, "gemm", "out", "y_q");
  dequantize(g, "y_q", "out", "y");
  Feeds feeds = float_feed("x1", {2, 4, 3, 5}, 20);
  feeds.push_back(float_feed("x2", {2, 4, 3, 5}, 21)[0]);
  feeds.push_back(float_feed("x3", {2, 4, 3, 5}, 22)[0]);
  feeds.push_back(float_feed("x4", {2, 4}, 23)[0]);
  Optimized o = check_within_steps(m, feeds, {1, 1, 0.003});
  EXPECT_EQ(o.ops["QLinearAdd"], 1);
  EXPECT_EQ(o.ops["QLinearGlobalAveragePool"], 1);
  EXPECT_EQ(o.ops["QGemm"], 1);
  EXPECT_EQ(o.report.fusions["DQ+Flatten+Q"], 1);
  EXPECT_EQ(o.ops["DequantizeLinear"], 1);  // y's
  EXPECT_EQ(o.ops["Add"] + o.ops["GlobalAveragePool"] + o.ops["Gemm"], 0);
}
}  // namespace
}  // namespace onyx
