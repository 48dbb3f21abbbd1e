// NchwcPointwiseDepthwise: the band-by-band fused 1x1 + depthwise kernel and
// the op's unfused path, against a direct loop reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "base/openmp_team.h"
#include "base/thread_pool.h"
#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_pointwise_depthwise.h"
#include "conv_test_util.h"
#include "op_test_util.h"

namespace onyx::test {

namespace {

struct Case {
  int64_t N, C, M, H, W, K, stride, dil;
  std::vector<int64_t> pads;  // [top, left, bottom, right]
  const char* pw_act;         // "", "Relu", "Clip" (0, 6) or "HardSwish"
  const char* dw_act;
  bool pw_bias, dw_bias;
  int threads;
};

std::vector<float> act_params(const std::string& act) {
  return act == "Clip" ? std::vector<float>{0.0f, 6.0f} : std::vector<float>{};
}

// act(1x1 conv), then act(depthwise conv).
Tensor reference(const Case& c, const Tensor& x, const Tensor& w1, const Tensor* b1, const Tensor& w2,
                 const Tensor* b2) {
  ReferenceConv pw;
  pw.b = b1, pw.act = c.pw_act, pw.act_params = act_params(c.pw_act);
  ReferenceConv dw;
  dw.group = c.M, dw.stride = c.stride, dw.dil = c.dil, dw.pads = c.pads;
  dw.b = b2, dw.act = c.dw_act, dw.act_params = act_params(c.dw_act);
  return reference_conv(reference_conv(x, w1, pw), w2, dw);
}

Tensor from_blocked(const Tensor& x, int64_t channels) {
  Shape plain = {x.dim(0), channels, x.dim(2), x.dim(3)};
  Tensor y(DataType::Float, plain);
  reorder_from_blocked(x.data<float>(), plain, 16, y.data<float>(), nullptr);
  return y;
}

std::string describe(const Case& c) {
  return std::to_string(c.C) + "->" + std::to_string(c.M) + " @" + std::to_string(c.H) + "x" + std::to_string(c.W) +
         " k" + std::to_string(c.K) + " s" + std::to_string(c.stride) + " d" + std::to_string(c.dil) + " threads " +
         std::to_string(c.threads);
}

const std::vector<Case> kCases = {
    // MobileNetV2's first expansion, stride 2
    {1, 16, 96, 23, 23, 3, 2, 1, {1, 1, 1, 1}, "Clip", "Clip", true, true, 1},
    // partial channel blocks, two images, three row ranges per tile
    {2, 24, 40, 9, 13, 3, 1, 1, {1, 1, 1, 1}, "Relu", "", false, true, 2},
    // 5x5 dilated, HardSwish, three threads
    {1, 8, 20, 12, 12, 5, 1, 2, {4, 4, 4, 4}, "HardSwish", "HardSwish", true, false, 3},
    // wide rows: bands of one output row, so every band reuses rows of the last
    {1, 16, 64, 20, 200, 3, 1, 1, {1, 1, 1, 1}, "Clip", "Clip", true, true, 1},
    // TensorFlow-style asymmetric padding (bottom / right only), stride 2
    {1, 32, 48, 14, 15, 3, 2, 1, {0, 0, 1, 1}, "Relu", "Relu", true, true, 2},
    // tiles of 4, 3 and 3 blocks, two images: the threads' shares cut inside tiles and images
    {2, 16, 160, 9, 9, 3, 1, 1, {1, 1, 1, 1}, "Relu", "Relu", true, true, 4},
    {1, 16, 160, 7, 8, 3, 2, 1, {1, 1, 1, 1}, "Clip", "", true, false, 7},
    // fewer output rows than threads
    {1, 8, 16, 2, 5, 3, 1, 1, {1, 1, 1, 1}, "", "", false, false, 5},
};

}  // namespace

TEST(PointwiseDepthwise, FusedKernelMatchesReference) {
  if (!nchwc_direct_available()) GTEST_SKIP() << "the fused kernel needs AVX-512";
  for (const Case& c : kCases) {
    Tensor x = pattern({c.N, c.C, c.H, c.W}, 1), w1 = pattern({c.M, c.C, 1, 1}, 2), b1 = pattern({c.M}, 3);
    Tensor w2 = pattern({c.M, 1, c.K, c.K}, 4), b2 = pattern({c.M}, 5);
    DnnlConvConfig pw, dw;
    pw.attrs.kernel = {1, 1};
    pw.activation = c.pw_act;
    pw.activation_params = act_params(c.pw_act);
    dw.group = c.M;
    dw.attrs.kernel = {c.K, c.K};
    dw.attrs.strides = {c.stride, c.stride};
    dw.attrs.dilations = {c.dil, c.dil};
    dw.attrs.pads = c.pads;
    dw.activation = c.dw_act;
    dw.activation_params = act_params(c.dw_act);
    auto fused = NchwcPointwiseDepthwise::create(pw, w1, c.pw_bias ? &b1 : nullptr, dw, w2, c.dw_bias ? &b2 : nullptr);
    ASSERT_NE(fused, nullptr) << describe(c);
    Tensor xb = to_blocked(x, 16);
    Tensor y(DataType::Float, fused->output_shape(xb.shape()));
    ThreadPool pool(c.threads);
    fused->run(xb.data<float>(), xb.shape(), y.data<float>(), &pool);
    Tensor want = reference(c, x, w1, c.pw_bias ? &b1 : nullptr, w2, c.dw_bias ? &b2 : nullptr);
    expect_close(from_blocked(y, c.M), want, 1e-5f, describe(c));
    // lanes past M in the last block are zero
    if (c.M % 16) {
      for (int64_t i = c.M % 16; i < 16; ++i) EXPECT_EQ(y.data<float>()[(y.dim(1) - 1) * y.dim(2) * y.dim(3) * 16 + i], 0.0f);
    }
  }
}

// The op on a pool of its own threads, beside oneDNN's OpenMP ones, takes
// the unfused path (one convolution after the other, see pays_for), from a
// blocked or a plain input.
TEST(PointwiseDepthwise, OpMatchesReferenceUnfused) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build";
  for (const Case& c : kCases) {
    Tensor x = pattern({c.N, c.C, c.H, c.W}, 1), w1 = pattern({c.M, c.C, 1, 1}, 2), b1 = pattern({c.M}, 3);
    Tensor w2 = pattern({c.M, 1, c.K, c.K}, 4), b2 = pattern({c.M}, 5);
    std::map<std::string, Attribute> attrs = {{"block", attr_int(16)},
                                              {"group", attr_int(c.M)},
                                              {"kernel_shape", attr_ints({c.K, c.K})},
                                              {"strides", attr_ints({c.stride, c.stride})},
                                              {"dilations", attr_ints({c.dil, c.dil})},
                                              {"pads", attr_ints(c.pads)}};
    if (*c.pw_act) attrs["pointwise_activation"] = attr_string(c.pw_act);
    if (*c.pw_act) attrs["pointwise_activation_params"] = attr_floats(act_params(c.pw_act));
    if (*c.dw_act) attrs["activation"] = attr_string(c.dw_act);
    if (*c.dw_act) attrs["activation_params"] = attr_floats(act_params(c.dw_act));
    Node node = make_node("NchwcPointwiseDepthwise", {"x", "w1", c.pw_bias ? "b1" : "", "w2", c.dw_bias ? "b2" : ""},
                          {"y"}, attrs, "com.onyx");
    Tensor want = reference(c, x, w1, c.pw_bias ? &b1 : nullptr, w2, c.dw_bias ? &b2 : nullptr);
    for (bool blocked : {true, false}) {
      std::vector<Tensor> inputs = {blocked ? to_blocked(x, 16) : x, w1, c.pw_bias ? b1 : Tensor(), w2,
                                    c.dw_bias ? b2 : Tensor()};
      ThreadPool own_pool(2);
      Tensor y = run_op(node, inputs, 17, &own_pool)[0];
      expect_close(from_blocked(y, c.M), want, 1e-5f, describe(c) + (blocked ? " blocked" : " plain"));
    }
  }
}

TEST(PointwiseDepthwise, OpRejectsMismatchedWeights) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build";
  Node node = make_node("NchwcPointwiseDepthwise", {"x", "w1", "", "w2", ""}, {"y"},
                        {{"block", attr_int(16)}, {"group", attr_int(32)}, {"kernel_shape", attr_ints({3, 3})}},
                        "com.onyx");
  Tensor x = to_blocked(pattern({1, 16, 8, 8}, 1), 16);
  try {
    run_op(node, {x, pattern({32, 16, 1, 1}, 2), Tensor(), pattern({24, 1, 3, 3}, 3), Tensor()});
    FAIL() << "mismatched depthwise weights were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a 1x1 and a depthwise convolution"), std::string::npos) << e.what();
  }
}

// When the op runs the fused kernel: on one thread unless the 1x1 weights are
// streamed over few pixels or the depthwise is dilated; with more threads
// only on oneDNN's OpenMP team, never on a pool of the application's own.
TEST(PointwiseDepthwise, FusesWhereItMeasuredFaster) {
  if (!nchwc_direct_available()) GTEST_SKIP() << "the fused kernel needs AVX-512";
  if (std::getenv("ONYX_FUSE_POINTWISE_DEPTHWISE")) GTEST_SKIP() << "ONYX_FUSE_POINTWISE_DEPTHWISE overrides the policy";
  auto make = [](int64_t C, int64_t M, int64_t dil) {
    DnnlConvConfig pw, dw;
    pw.attrs.kernel = {1, 1};
    dw.group = M;
    dw.attrs.kernel = {3, 3};
    dw.attrs.dilations = {dil, dil};
    dw.attrs.pads = {dil, dil, dil, dil};
    return NchwcPointwiseDepthwise::create(pw, pattern({M, C, 1, 1}, 1), nullptr, dw, pattern({M, 1, 3, 3}, 2),
                                           nullptr);
  };
  auto expansion = make(24, 144, 1), wide = make(192, 1152, 1), dilated = make(24, 144, 2);
  ASSERT_TRUE(expansion && wide && dilated);
  const Shape at56 = {1, 2, 56, 56, 16}, at7 = {1, 12, 7, 7, 16};
  EXPECT_TRUE(expansion->pays_for(at56, nullptr));
  EXPECT_TRUE(expansion->pays_for({1, 2, 7, 7, 16}, nullptr));
  EXPECT_FALSE(wide->pays_for(at7, nullptr));  // 192 x 1152 weights over 49 pixels
  EXPECT_TRUE(wide->pays_for({1, 12, 14, 14, 16}, nullptr));
  EXPECT_FALSE(dilated->pays_for(at56, nullptr));
  ThreadPool own_threads(2);  // not an OpenMP team
  EXPECT_FALSE(expansion->pays_for(at56, &own_threads));
  if (openmp_available()) {
    ThreadPoolOptions team;
    team.num_threads = 2;
    team.use_openmp_team = true;
    ThreadPool on_team(team);
    EXPECT_TRUE(on_team.uses_openmp_team());
    EXPECT_TRUE(expansion->pays_for(at56, &on_team));
    EXPECT_TRUE(wide->pays_for(at7, &on_team));
  }
}

}  // namespace onyx::test
