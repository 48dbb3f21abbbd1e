// The oneDNN convolution / pooling paths and the blocked-layout ops, checked
// against a direct loop reference (or the portable kernels) on real values.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_pool.h"
#include "conv_test_util.h"
#include "op_test_util.h"

namespace onyx::test {

namespace {

// Symmetric pads, then + z, then Relu when asked.
Tensor ref_conv(const Tensor& x, const Tensor& w, const Tensor* b, int64_t group, int64_t stride, int64_t pad,
                int64_t dil, const Tensor* z, bool relu) {
  ReferenceConv c;
  c.group = group, c.stride = stride, c.dil = dil, c.pads = {pad, pad, pad, pad};
  c.b = b, c.z = z, c.act = relu ? "Relu" : "";
  return reference_conv(x, w, c);
}

Tensor from_blocked(const Tensor& x, int64_t channels) {
  auto out = run_op(make_node("ReorderOutput", {"x"}, {"y"}, {{"channels", attr_int(channels)}}, "com.onyx"), {x});
  return out[0];
}

struct PoolCase {
  std::string op;
  std::map<std::string, Attribute> attrs;
};

// 3-wide windows at stride 1 and 2 (the pooling row that reduces each input
// column once for the outputs that read it): pads 0-2, with and without the
// padding counted, a ceil-mode window past the row's end.
std::vector<PoolCase> three_wide_pool_cases() {
  return {
      {"AveragePool", {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}}},
      {"AveragePool",
       {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({1, 2})}, {"pads", attr_ints({1, 0, 1, 1})},
        {"count_include_pad", attr_int(1)}, {"ceil_mode", attr_int(1)}}},
      {"MaxPool", {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}}},
      {"AveragePool", {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}}},
      {"AveragePool",
       {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}, {"count_include_pad", attr_int(1)}}},
      {"MaxPool", {{"kernel_shape", attr_ints({2, 3})}}},
      {"AveragePool",
       {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({0, 2, 1, 0})}, {"count_include_pad", attr_int(1)}}},
  };
}

}  // namespace

TEST(Nchwc, ReorderRoundTripPadsWithZeros) {
  Tensor x = pattern({2, 5, 3, 2}, 1);
  for (int block : {8, 16}) {
    auto b = run_op(make_node("ReorderInput", {"x"}, {"y"}, {{"block", attr_int(block)}}, "com.onyx"), {x})[0];
    EXPECT_EQ(b.shape(), (Shape{2, 1, 3, 2, block}));
    EXPECT_EQ(b.data<float>()[5], 0.0f);                       // channel 5 of the block is padding
    EXPECT_EQ(b.data<float>()[block + 1], x.data<float>()[6 + 1]);  // pixel 1, channel 1
    expect_close(from_blocked(b, 5), x, 0.0f);
  }
}

TEST(DnnlConv, ConvKernelMatchesReference) {
  struct Case {
    Shape xs, ws;
    int64_t group, stride, pad, dil;
  };
  for (const Case& c : std::vector<Case>{{{1, 3, 17, 15}, {8, 3, 3, 3}, 1, 2, 1, 1},
                                         {{2, 24, 9, 9}, {24, 1, 3, 3}, 24, 1, 1, 1},   // depthwise
                                         {{1, 8, 10, 10}, {12, 4, 3, 3}, 2, 1, 2, 2},   // grouped, dilated
                                         {{1, 40, 7, 7}, {20, 40, 1, 1}, 1, 1, 0, 1}}) {  // 1x1
    Tensor x = pattern(c.xs, 1), w = pattern(c.ws, 2), b = pattern({c.ws[0]}, 3);
    auto y = run_op(make_node("Conv", {"x", "w", "b"}, {"y"},
                              {{"group", attr_int(c.group)},
                               {"strides", attr_ints({c.stride, c.stride})},
                               {"pads", attr_ints({c.pad, c.pad, c.pad, c.pad})},
                               {"dilations", attr_ints({c.dil, c.dil})}}),
                    {x, w, b})[0];
    expect_close(y, ref_conv(x, w, &b, c.group, c.stride, c.pad, c.dil, nullptr, false), 1e-5f);
  }
}

TEST(DnnlConv, FusedConvResidualAndRelu) {
  Tensor x = pattern({1, 16, 8, 8}, 1), w = pattern({16, 16, 3, 3}, 2), b = pattern({16}, 3), z = pattern({1, 16, 8, 8}, 4);
  auto y = run_op(make_node("FusedConv", {"x", "w", "b", "z"}, {"y"},
                            {{"pads", attr_ints({1, 1, 1, 1})}, {"activation", attr_string("Relu")}}, "com.onyx"),
                  {x, w, b, z})[0];
  expect_close(y, ref_conv(x, w, &b, 1, 1, 1, 1, &z, true), 1e-5f);
}

TEST(Nchwc, ConvPlainAndBlockedInputsWithResidual) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build";
  for (int block : {8, 16}) {
    // first layer: plain input, 3 channels, stride 2
    Tensor x = pattern({1, 3, 13, 13}, 1), w1 = pattern({20, 3, 3, 3}, 2), b1 = pattern({20}, 3);
    auto y1 = run_op(make_node("NchwcConv", {"x", "w", "b"}, {"y"},
                               {{"block", attr_int(block)}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}},
                               "com.onyx"),
                     {x, w1, b1})[0];
    EXPECT_EQ(y1.rank(), 5);
    Tensor r1 = ref_conv(x, w1, &b1, 1, 2, 1, 1, nullptr, false);
    expect_close(from_blocked(y1, 20), r1, 1e-5f);
    // blocked input, 3x3 with 128 channels at 7x7 (a Winograd shape), residual and Relu
    Tensor x2 = pattern({1, 128, 7, 7}, 4), w2 = pattern({128, 128, 3, 3}, 5), z = pattern({1, 128, 7, 7}, 6);
    auto y2 = run_op(make_node("NchwcConv", {"x", "w", "", "z"}, {"y"},
                               {{"block", attr_int(block)}, {"pads", attr_ints({1, 1, 1, 1})}, {"activation", attr_string("Relu")}},
                               "com.onyx"),
                     {to_blocked(x2, block), w2, Tensor(), to_blocked(z, block)})[0];
    expect_close(from_blocked(y2, 128), ref_conv(x2, w2, nullptr, 1, 1, 1, 1, &z, true), 1e-4f);
    // depthwise on a blocked input whose channel count is not a multiple of the block, Clip(0, 6)
    Tensor x3 = pattern({1, 24, 6, 6}, 7), w3 = pattern({24, 1, 3, 3}, 8);
    auto y3 = run_op(make_node("NchwcConv", {"x", "w"}, {"y"},
                               {{"block", attr_int(block)}, {"group", attr_int(24)}, {"pads", attr_ints({1, 1, 1, 1})},
                                {"activation", attr_string("Clip")}, {"activation_params", attr_floats({0.0f, 0.5f})}},
                               "com.onyx"),
                     {to_blocked(x3, block), w3})[0];
    Tensor r3 = ref_conv(x3, w3, nullptr, 24, 1, 1, 1, nullptr, false);
    for (int64_t i = 0; i < r3.numel(); ++i) r3.data<float>()[i] = std::min(std::max(r3.data<float>()[i], 0.0f), 0.5f);
    expect_close(from_blocked(y3, 24), r3, 1e-5f);
  }
}

// Dilated 3x3s with "same" padding run as undilated ones over the image's
// phases where the sides divide by the dilation (2 on 14x18, 3 on 21x21, two
// images, bias and Relu); an odd side (15) and a residual take the dilated
// kernel. All against the definition.
TEST(Nchwc, DilatedConvMatchesReference) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build";
  struct Case {
    int64_t dil, H, W;
    bool residual;
  };
  for (int block : {8, 16}) {
    for (const Case& c : {Case{2, 14, 18, false}, Case{3, 21, 21, false}, Case{2, 15, 18, false}, Case{2, 14, 14, true}}) {
      Tensor x = pattern({2, 40, c.H, c.W}, 11), w = pattern({48, 40, 3, 3}, 12), b = pattern({48}, 13);
      Tensor z = pattern({2, 48, c.H, c.W}, 14);
      const std::map<std::string, Attribute> attrs = {{"block", attr_int(block)},
                                                      {"pads", attr_ints({c.dil, c.dil, c.dil, c.dil})},
                                                      {"dilations", attr_ints({c.dil, c.dil})},
                                                      {"activation", attr_string("Relu")}};
      auto y = run_op(make_node("NchwcConv", {"x", "w", "b", c.residual ? "z" : ""}, {"y"}, attrs, "com.onyx"),
                      {to_blocked(x, block), w, b, c.residual ? to_blocked(z, block) : Tensor()})[0];
      Tensor r = ref_conv(x, w, &b, 1, 1, c.dil, c.dil, c.residual ? &z : nullptr, true);
      SCOPED_TRACE("dilation " + std::to_string(c.dil) + " on " + std::to_string(c.H) + "x" + std::to_string(c.W) +
                   ", block " + std::to_string(block));
      expect_close(from_blocked(y, 48), r, 1e-4f);
    }
  }
}

TEST(Nchwc, PoolsMatchPlainKernels) {
  if (!dnnl_available()) GTEST_SKIP() << "no oneDNN in this build";
  Tensor x = pattern({1, 20, 13, 13}, 1);
  std::vector<PoolCase> cases = {
      {"MaxPool", {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"ceil_mode", attr_int(1)}}},
      {"MaxPool", {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}}},
      {"AveragePool", {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}, {"ceil_mode", attr_int(1)}}},
      {"AveragePool",
       {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}, {"count_include_pad", attr_int(1)}}},
      {"GlobalAveragePool", {}},
  };
  for (const PoolCase& c : three_wide_pool_cases()) cases.push_back(c);
  for (auto& c : cases) {
    Tensor expected = run_op(make_node(c.op, {"x"}, {"y"}, c.attrs), {x})[0];
    auto attrs = c.attrs;
    attrs["block"] = attr_int(16);
    Tensor y = run_op(make_node("Nchwc" + c.op, {"x"}, {"y"}, attrs, "com.onyx"), {to_blocked(x, 16)})[0];
    expect_close(from_blocked(y, 20), expected, 1e-5f);
  }
}

// Onyx's own blocked pooling (cpu/nchwc_pool) on x: dilations, asymmetric
// pads, both block sizes, one thread and a pool of two, against the plain
// kernels.
void check_blocked_pool(const Tensor& x) {
  std::vector<PoolCase> cases = {
      {"MaxPool", {{"kernel_shape", attr_ints({3, 2})}, {"dilations", attr_ints({2, 3})}, {"pads", attr_ints({2, 0, 1, 3})}}},
      {"MaxPool", {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"ceil_mode", attr_int(1)}}},
      {"MaxPool", {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 3})}, {"pads", attr_ints({1, 1, 1, 1})}}},
      {"AveragePool", {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 1})}, {"pads", attr_ints({1, 0, 1, 2})}}},
      {"AveragePool",
       {{"kernel_shape", attr_ints({2, 3})}, {"pads", attr_ints({1, 1, 0, 2})}, {"count_include_pad", attr_int(1)}}},
      {"AveragePool", {{"kernel_shape", attr_ints({3, 3})}, {"dilations", attr_ints({1, 2})}, {"pads", attr_ints({1, 2, 1, 2})}}},
      {"GlobalAveragePool", {}},
  };
  for (const PoolCase& c : three_wide_pool_cases()) cases.push_back(c);
  ThreadPool pool(2);
  for (int block : {8, 16})
    for (auto& c : cases) {
      SCOPED_TRACE(c.op + " block " + std::to_string(block) + " input " + shape_to_string(x.shape()));
      Tensor expected = run_op(make_node(c.op, {"x"}, {"y"}, c.attrs), {x})[0];
      BlockedPoolConfig cfg;
      cfg.kind = c.op == "MaxPool" ? BlockedPoolConfig::Max
                 : c.op == "AveragePool" ? BlockedPoolConfig::Average
                                         : BlockedPoolConfig::GlobalAverage;
      if (cfg.kind != BlockedPoolConfig::GlobalAverage) {
        Node n = make_node(c.op, {"x"}, {"y"}, c.attrs);
        cfg.attrs = SpatialAttrs::read(AttributeReader(n));
      }
      cfg.count_include_pad = c.attrs.count("count_include_pad") > 0;
      BlockedPool op(cfg);
      Shape ys = op.output_shape(x.shape());
      ASSERT_EQ(ys, expected.shape());
      Tensor y(DataType::Float, blocked_shape(ys, block));
      Tensor xb = to_blocked(x, block);
      for (ThreadPool* p : {&pool, static_cast<ThreadPool*>(nullptr)}) {  // bands of rows; one band
        SCOPED_TRACE(p ? "2 threads" : "1 thread");
        op.run(xb.data<float>(), x.shape(), block, y.data<float>(), p);
        expect_close(from_blocked(y, x.shape()[1]), expected, 1e-5f);
      }
    }
}

// A narrow input (mostly edge windows, batch 2) and a wide one (mostly
// windows inside the row, pooled four at a time).
TEST(Nchwc, BlockedPoolMatchesPlainKernels) {
  check_blocked_pool(pattern({2, 24, 11, 9}, 3));
  check_blocked_pool(pattern({1, 32, 13, 41}, 5));
}

}  // namespace onyx::test
