// The int8_channels_last pass on a small quantized CNN: at level `all` the
// convolutions run channel-last with Transposes only at the chain's edges, and
// every output equals the unoptimized graph's byte for byte.
#include <gtest/gtest.h>

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

// Scale / zero point constants `p`_s, `p`_z (uint8 zero point).
void qparams(onnx::GraphProto* g, const std::string& p, float scale, int32_t zero_point) {
  *g->add_initializer() = float_tensor(p + "_s", {}, {scale});
  *g->add_initializer() = int_tensor(p + "_z", onnx::TensorProto::UINT8, {}, {zero_point});
}

// y = QLinearConv(x) with int8 weights [M, C / group, k, k], pads k / 2.
void qconv(onnx::GraphProto* g, const std::string& x, const std::string& y, int64_t C, int64_t M, int64_t k,
           int64_t group, int64_t stride, uint32_t seed) {
  const std::string w = y + "_w";
  *g->add_initializer() =
      int_tensor(w, onnx::TensorProto::INT8, {M, C / group, k, k}, random_ints(M * C / group * k * k, seed, -100, 100));
  *g->add_initializer() = float_tensor(w + "_s", {M}, std::vector<float>(M, 0.004f));
  *g->add_initializer() = int_tensor(w + "_z", onnx::TensorProto::INT8, {M}, std::vector<int32_t>(M, 0));
  *g->add_initializer() = int_tensor(y + "_b", onnx::TensorProto::INT32, {M}, random_ints(M, seed + 1, -500, 500));
  qparams(g, y, 0.05f, 128);
  auto* n = add_node(g, "QLinearConv",
                     {x, x + "_s", x + "_z", w, w + "_s", w + "_z", y + "_s", y + "_z", y + "_b"}, {y});
  add_int_attr(n, "group", group);
  add_ints_attr(n, "strides", {stride, stride});
  add_ints_attr(n, "pads", {k / 2, k / 2, k / 2, k / 2});
}

// x (float [1, 3, 15, 13]) -> Q -> conv 3x3 -> MaxPool -> [depthwise 3x3, 1x1]
// -> QLinearAdd -> QLinearGlobalAveragePool -> y; `mid` (the pooled
// activations) is a graph output too, and feeds a float DequantizeLinear.
onnx::ModelProto small_cnn() {
  auto m = test::make_model(13);
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 15, 13});
  qparams(g, "q", 0.03f, 120);
  add_node(g, "QuantizeLinear", {"x", "q_s", "q_z"}, {"q"});
  qconv(g, "q", "c1", 3, 16, 3, 1, 2, 1);
  auto* pool = add_node(g, "MaxPool", {"c1"}, {"mid"});
  add_ints_attr(pool, "kernel_shape", {2, 2});
  add_ints_attr(pool, "strides", {2, 2});
  // MaxPool keeps c1's quantization parameters: alias them for the next convs.
  *g->add_initializer() = float_tensor("mid_s", {}, {0.05f});
  *g->add_initializer() = int_tensor("mid_z", onnx::TensorProto::UINT8, {}, {128});
  qconv(g, "mid", "dw", 16, 16, 3, 16, 1, 3);
  qconv(g, "mid", "pw", 16, 16, 1, 1, 1, 5);
  // An 8-bit Split of the channels and a Concat of its parts swapped (YOLO's C2f): both stay channel-last.
  *g->add_initializer() = test::int64_tensor("halves", {2}, {8, 8});
  add_int_attr(add_node(g, "Split", {"pw", "halves"}, {"half1", "half2"}), "axis", 1);
  add_int_attr(add_node(g, "Concat", {"half2", "half1"}, {"pw_swapped"}), "axis", 1);
  qparams(g, "sum", 0.08f, 128);
  auto* add =
      add_node(g, "QLinearAdd", {"dw", "dw_s", "dw_z", "pw_swapped", "pw_s", "pw_z", "sum_s", "sum_z"}, {"sum"});
  add->set_domain("com.microsoft");
  qparams(g, "y", 0.02f, 128);
  auto* gap = add_node(g, "QLinearGlobalAveragePool", {"sum", "sum_s", "sum_z", "y_s", "y_z"}, {"y"});
  gap->set_domain("com.microsoft");
  add_node(g, "DequantizeLinear", {"mid", "mid_s", "mid_z"}, {"mid_float"});
  for (const char* o : {"y", "mid"}) *g->add_output() = tensor_info(o, onnx::TensorProto::UINT8, {});
  *g->add_output() = tensor_info("mid_float", onnx::TensorProto::FLOAT, {});
  return m;
}

TEST(Int8ChannelsLast, QuantizedCnnRunsChannelLastWithTheSameBytes) {
  const onnx::ModelProto m = small_cnn();
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  std::vector<float> x(3 * 15 * 13);
  for (auto& v : x) v = u(rng);
  Feeds feeds = {{"x", Value(Tensor::from_vector<float>(x, {1, 3, 15, 13}))}};
  const std::string path = testing::TempDir() + "int8_channels_last_optimized.onnx";
  auto want = load(m, OptimizationLevel::Disable)->run(feeds);
  auto got = load(m, OptimizationLevel::All, path)->run(feeds);
  ASSERT_EQ(want.size(), 3u);
  ASSERT_EQ(got.size(), 3u);
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor &a = want[k].tensor(), &b = got[k].tensor();
    ASSERT_EQ(a.shape(), b.shape()) << "output " << k;
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.float_at(i), b.float_at(i)) << "output " << k << " at " << i;
  }
  EXPECT_EQ(want[0].tensor().shape(), (Shape{1, 16, 1, 1}));
  EXPECT_EQ(want[1].tensor().shape(), (Shape{1, 16, 4, 3}));

  onnx::ModelProto saved;
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(saved.ParseFromIstream(&f));
  std::map<std::string, int> ops;
  for (const auto& n : saved.graph().node()) ++ops[n.domain() + ":" + n.op_type()];
  std::remove(path.c_str());
  EXPECT_EQ(ops["com.microsoft:QLinearConv"], 3);
  EXPECT_EQ(ops[":QLinearConv"], 0);
  EXPECT_EQ(ops["com.microsoft:NhwcMaxPool"], 1);
  // In after QuantizeLinear; out for `mid` (an output, read by DequantizeLinear) and for y.
  EXPECT_EQ(ops[":Transpose"], 3);
}

}  // namespace
}  // namespace onyx
