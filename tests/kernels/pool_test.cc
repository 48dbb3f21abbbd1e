#include <gtest/gtest.h>

#include "op_test_util.h"

namespace onyx::test {

TEST(MaxPool, IndicesAndPadding) {
  Tensor x = Tensor::from_vector<float>({1, 5, 3, 4, 2, 9, 7, 8, 6}, {1, 1, 3, 3});
  auto out = run_op(make_node("MaxPool", {"x"}, {"y", "i"},
                              {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})},
                               {"pads", attr_ints({0, 0, 1, 1})}}),
                    {x}, 12);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 2, 2}));
  expect_near(out[0], {5, 9, 8, 6});
  EXPECT_EQ(to_vector<int64_t>(out[1]), (std::vector<int64_t>{1, 5, 7, 8}));
}

TEST(MaxPool, Uint8CeilMode) {
  Tensor x = Tensor::from_vector<uint8_t>({1, 2, 3, 4, 5}, {1, 1, 5});
  auto out = run_op(make_node("MaxPool", {"x"}, {"y"},
                              {{"kernel_shape", attr_ints({2})}, {"strides", attr_ints({2})}, {"ceil_mode", attr_int(1)}}),
                    {x}, 12);
  EXPECT_EQ(to_vector<uint8_t>(out[0]), (std::vector<uint8_t>{2, 4, 5}));
}

// With ceil_mode a window larger than the input still gives one output (ONNX's
// ceil((in + pads - kernel) / stride + 1); Hugging Face's EfficientNet pools
// 7x7 with a kernel of 1280): the max, and the mean of the elements it covers.
// A kernel of 2^40 under SAME padding: every window holds the whole input and
// is mostly padding, which is skipped (looping over it took hours).
TEST(Pool1d, HugeKernelUnderSamePaddingCoversTheInput) {
  Tensor x = Tensor::from_vector<float>({1, -2, 3}, {1, 1, 3});
  auto attrs = std::map<std::string, Attribute>{{"kernel_shape", attr_ints({int64_t{1} << 40})},
                                                {"auto_pad", attr_string("SAME_UPPER")}};
  expect_near(run_op(make_node("MaxPool", {"x"}, {"y"}, attrs), {x}, 12)[0], {3, 3, 3});
  attrs["p"] = attr_int(1);
  expect_near(run_op(make_node("LpPool", {"x"}, {"y"}, attrs), {x}, 18)[0], {6, 6, 6});
}

TEST(Pool2d, CeilModeWindowLargerThanInput) {
  Tensor x = Tensor::from_vector<float>({1, 5, 3, 7}, {1, 1, 2, 2});
  for (const char* op : {"MaxPool", "AveragePool"}) {
    auto node = make_node(op, {"x"}, {"y"},
                          {{"kernel_shape", attr_ints({5, 5})}, {"strides", attr_ints({5, 5})},
                           {"ceil_mode", attr_int(1)}});
    auto out = run_op(node, {x}, 19);
    EXPECT_EQ(out[0].shape(), (Shape{1, 1, 1, 1})) << op;
    expect_near(out[0], {std::string(op) == "MaxPool" ? 7.0f : 4.0f});
  }
  // Without ceil_mode there is no whole window: a clear error.
  auto floor_node = make_node("MaxPool", {"x"}, {"y"}, {{"kernel_shape", attr_ints({5, 5})}});
  EXPECT_THROW(run_op(floor_node, {x}, 19), Error);
}

namespace {

// A pooling case of the window-reference tests below, as its node's attributes.
struct PoolCase {
  std::vector<int64_t> kernel, strides, dilations, pads;
  int64_t ceil, include_pad;
};

Node pool_node(const char* op, const PoolCase& c) {
  return make_node(op, {"x"}, {"y"},
                   {{"kernel_shape", attr_ints(c.kernel)}, {"strides", attr_ints(c.strides)},
                    {"dilations", attr_ints(c.dilations)}, {"pads", attr_ints(c.pads)},
                    {"ceil_mode", attr_int(c.ceil)}, {"count_include_pad", attr_int(c.include_pad)}});
}

}  // namespace

// 2-D pools against a window-by-window reference: strides, dilations,
// asymmetric pads, ceil mode, both average divisors; over 3 threads in
// float (the blocked kernels between reorders where the CPU has AVX-512,
// else the per-axis passes) and in double (the per-axis passes).
TEST(Pool2d, AxisPassesMatchWindowReference) {
  const PoolCase cases[] = {{{3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 0}, {{3, 2}, {1, 2}, {2, 1}, {2, 0, 1, 1}, 1, 1},
                        {{2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, 1, 0}, {{5, 5}, {3, 1}, {1, 2}, {2, 4, 2, 4}, 0, 1}};
  const int64_t C = 40, H = 11, W = 13;  // small planes: pooled several at once
  std::vector<double> v(C * H * W);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7919) % 101) - 50.0;
  ThreadPool three(3);
  for (const PoolCase& c : cases) {
    for (const char* op : {"MaxPool", "AveragePool"}) {
      const Node n = pool_node(op, c);
      std::vector<float> vf(v.begin(), v.end());
      auto yf = run_op(n, {Tensor::from_vector<float>(vf, {1, C, H, W})}, 19, &three)[0];
      auto yd = run_op(n, {Tensor::from_vector<double>(v, {1, C, H, W})}, 19)[0];
      const int64_t OH = yf.dim(2), OW = yf.dim(3);
      const bool is_max = std::string(op) == "MaxPool";
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double best = -1e30, sum = 0;
            int64_t inside = 0, padded = 0;
            for (int64_t i = 0; i < c.kernel[0]; ++i)
              for (int64_t j = 0; j < c.kernel[1]; ++j) {
                int64_t h = oh * c.strides[0] - c.pads[0] + i * c.dilations[0];
                int64_t w = ow * c.strides[1] - c.pads[1] + j * c.dilations[1];
                if (h >= -c.pads[0] && h < H + c.pads[2] && w >= -c.pads[1] && w < W + c.pads[3]) ++padded;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                ++inside;
                best = std::max(best, v[(ch * H + h) * W + w]);
                sum += v[(ch * H + h) * W + w];
              }
            const int64_t div = c.include_pad ? padded : inside;
            const double want = is_max ? best : (div ? sum / div : 0.0);
            const int64_t at = (ch * OH + oh) * OW + ow;
            ASSERT_NEAR(yf.float_at(at), want, 1e-4) << op << " case k" << c.kernel[0] << " at " << at;
            ASSERT_NEAR(yd.float_at(at), want, 1e-9) << op << " (double) case k" << c.kernel[0] << " at " << at;
          }
    }
  }
}

namespace {

// 3-D pools of [1, C, D, H, W] over 3 threads (and in float16 on one)
// against a window-by-window reference.
void expect_pool3d_matches_window_reference(const std::vector<PoolCase>& cases, int64_t C, int64_t D, int64_t H,
                                            int64_t W) {
  std::vector<float> v(C * D * H * W);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 101) - 50.f;
  ThreadPool three(3);
  for (const PoolCase& c : cases) {
    for (const char* op : {"MaxPool", "AveragePool"}) {
      const Node n = pool_node(op, c);
      const Tensor y = run_op(n, {Tensor::from_vector<float>(v, {1, C, D, H, W})}, 19, &three)[0];
      // Float16 accumulates in float and converts at the end (the values are exact in half)
      const std::vector<Float16> vh(v.begin(), v.end());
      const Tensor yh = run_op(n, {Tensor::from_vector<Float16>(vh, {1, C, D, H, W})}, 19)[0];
      const int64_t OD = y.dim(2), OH = y.dim(3), OW = y.dim(4), in[3] = {D, H, W};
      const bool is_max = std::string(op) == "MaxPool";
      for (int64_t at = 0; at < y.numel(); ++at) {
        const int64_t o[3] = {at / (OH * OW) % OD, at / OW % OH, at % OW}, ch = at / (OD * OH * OW);
        double best = -1e30, sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t t = 0; t < c.kernel[0] * c.kernel[1] * c.kernel[2]; ++t) {
          const int64_t tap[3] = {t / (c.kernel[1] * c.kernel[2]), t / c.kernel[2] % c.kernel[1], t % c.kernel[2]};
          int64_t p[3];
          bool in_pad = true, in_input = true;
          for (int d = 0; d < 3; ++d) {
            p[d] = o[d] * c.strides[d] - c.pads[d] + tap[d] * c.dilations[d];
            in_pad = in_pad && p[d] >= -c.pads[d] && p[d] < in[d] + c.pads[d + 3];
            in_input = in_input && p[d] >= 0 && p[d] < in[d];
          }
          padded += in_pad;
          if (!in_input) continue;
          ++inside;
          const float x = v[((ch * D + p[0]) * H + p[1]) * W + p[2]];
          best = std::max<double>(best, x);
          sum += x;
        }
        const int64_t div = c.include_pad ? padded : inside;
        const double want = is_max ? best : (div ? sum / div : 0.0);
        ASSERT_NEAR(y.float_at(at), want, 1e-4) << op << " case k" << c.kernel[0] << c.kernel[1] << c.kernel[2]
                                                << " at " << at << " of " << C << "x" << D << "x" << H << "x" << W;
        ASSERT_NEAR(yh.float_at(at), want, 2e-2) << op << " (half) at " << at;
      }
    }
  }
}

}  // namespace

// The per-axis 3-D passes (video models' MaxPool3d / AvgPool3d) against a
// window-by-window reference: a depth stride and dilation, pads on every
// axis, ceil mode, both average divisors. Then windows that are the whole
// input (S3D's AvgPool3d (2,7,7) over 2x7x7), reduced as a global pool:
// exactly, and padded where the padding is not counted (so only the input
// is reduced), but not where it is, nor where the one window leaves some of
// the input out.
TEST(Pool3d, AxisPassesMatchWindowReference) {
  expect_pool3d_matches_window_reference({{{3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 0, 0},
                                          {{1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1, 0, 1, 1}, 0, 1},
                                          {{2, 2, 3}, {2, 1, 2}, {2, 1, 1}, {1, 0, 2, 0, 1, 1}, 1, 1},
                                          {{2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, 1, 0},
                                          {{5, 6, 7}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, 0, 0},
                                          {{7, 8, 9}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 0, 0},
                                          {{7, 8, 9}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 0, 1},
                                          {{4, 5, 6}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, 0, 0}},  // one window, not whole
                                         40, 5, 6, 7);  // small planes: pooled several at once
}

// Rows of 50: a strided H pass that reads the input runs first and takes
// each output row's taps together; also H strides with W strides of 1 and
// 3 (H first or W first by which shrinks the rows more), and a dilated H.
TEST(Pool3d, WideRowsMatchWindowReference) {
  expect_pool3d_matches_window_reference({{{1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1, 0, 1, 1}, 0, 1},
                                          {{3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 0, 1, 0, 1, 0}, 1, 0},
                                          {{1, 3, 2}, {1, 2, 1}, {1, 2, 1}, {0, 2, 0, 0, 1, 1}, 0, 0},
                                          {{2, 2, 3}, {1, 2, 3}, {1, 1, 1}, {0, 0, 1, 1, 1, 1}, 1, 1}},
                                         3, 3, 9, 50);
}

TEST(AveragePool, CountIncludePad) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  auto attrs = std::map<std::string, Attribute>{{"kernel_shape", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 0, 0})}};
  auto a = run_op(make_node("AveragePool", {"x"}, {"y"}, attrs), {x}, 11);
  expect_near(a[0], {1, 1.5, 2, 2.5});
  attrs["count_include_pad"] = attr_int(1);
  auto b = run_op(make_node("AveragePool", {"x"}, {"y"}, attrs), {x}, 11);
  expect_near(b[0], {0.25, 0.75, 1, 2.5});
}

// 1-D pools (run as rows of height 1) against the plain window loop: strides,
// dilations, pads at both ends, with and without counting the padding.
TEST(Pool1d, MaxAndAverageMatchTheWindowLoop) {
  const int64_t NC = 6, W = 23;
  std::vector<float> v(NC * W);
  for (int64_t i = 0; i < NC * W; ++i) v[i] = static_cast<float>((i * 37) % 19) - 9.f;
  struct Case { int64_t k, s, d, pb, pe; bool include_pad; };
  for (const Case c : {Case{3, 1, 1, 1, 1, false}, Case{4, 2, 1, 0, 2, true}, Case{3, 3, 2, 2, 0, false},
                       Case{10, 10, 1, 0, 0, false}}) {
    const int64_t OW = (W + c.pb + c.pe - (c.k - 1) * c.d - 1) / c.s + 1;
    std::map<std::string, Attribute> attrs{{"kernel_shape", attr_ints({c.k})}, {"strides", attr_ints({c.s})},
                                           {"dilations", attr_ints({c.d})}, {"pads", attr_ints({c.pb, c.pe})}};
    auto mx = run_op(make_node("MaxPool", {"x"}, {"y"}, attrs), {Tensor::from_vector<float>(v, {2, 3, W})}, 12);
    attrs.erase("dilations");  // AveragePool takes dilations from opset 19 only: averages for d = 1
    attrs["count_include_pad"] = attr_int(c.include_pad ? 1 : 0);
    std::vector<Tensor> av;
    if (c.d == 1)
      av = run_op(make_node("AveragePool", {"x"}, {"y"}, attrs), {Tensor::from_vector<float>(v, {2, 3, W})}, 11);
    ASSERT_EQ(mx[0].shape(), (Shape{2, 3, OW}));
    for (int64_t ch = 0; ch < NC; ++ch)
      for (int64_t o = 0; o < OW; ++o) {
        float best = -1e30f, sum = 0.f;
        int64_t inside = 0, padded = 0;
        for (int64_t j = 0; j < c.k; ++j) {
          const int64_t w = o * c.s - c.pb + j * c.d;
          if (w >= -c.pb && w < W + c.pe) ++padded;
          if (w < 0 || w >= W) continue;
          ++inside;
          best = std::max(best, v[ch * W + w]);
          sum += v[ch * W + w];
        }
        ASSERT_EQ(mx[0].float_at(ch * OW + o), best) << "k" << c.k << " at " << ch << "," << o;
        if (!av.empty()) {
          ASSERT_NEAR(av[0].float_at(ch * OW + o), sum / static_cast<float>(c.include_pad ? padded : inside), 1e-5)
              << "k" << c.k << " at " << ch << "," << o;
        }
      }
  }
}

TEST(GlobalPools, AverageMaxLp) {
  Tensor x = Tensor::from_vector<float>({3, 4, 0, 0, 1, 2, 3, 6}, {1, 2, 4});
  expect_near(run_op(make_node("GlobalAveragePool", {"x"}, {"y"}), {x})[0], {1.75, 3});
  expect_near(run_op(make_node("GlobalMaxPool", {"x"}, {"y"}), {x})[0], {4, 6});
  auto lp = run_op(make_node("GlobalLpPool", {"x"}, {"y"}), {x})[0];
  EXPECT_EQ(lp.shape(), (Shape{1, 2, 1}));
  EXPECT_NEAR(lp.float_at(0), 5.0, 1e-5);
}

TEST(MaxUnpool, ScattersAndChecksIndices) {
  Tensor x = Tensor::from_vector<float>({5, 6}, {1, 1, 1, 2});
  Tensor i = Tensor::from_vector<int64_t>({1, 2}, {1, 1, 1, 2});
  auto out = run_op(make_node("MaxUnpool", {"x", "i"}, {"y"},
                              {{"kernel_shape", attr_ints({1, 2})}, {"strides", attr_ints({1, 2})}}),
                    {x, i}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 1, 4}));
  expect_near(out[0], {0, 5, 6, 0});
  Tensor bad = Tensor::from_vector<int64_t>({1, 9}, {1, 1, 1, 2});
  EXPECT_THROW(run_op(make_node("MaxUnpool", {"x", "i"}, {"y"},
                                {{"kernel_shape", attr_ints({1, 2})}, {"strides", attr_ints({1, 2})}}),
                      {x, bad}, 11),
               onyx::Error);
}

TEST(MaxPool, KernelLargerThanInputThrows) {
  Tensor x = Tensor::zeros(DataType::Float, {1, 1, 2, 2});
  EXPECT_THROW(run_op(make_node("MaxPool", {"x"}, {"y"}, {{"kernel_shape", attr_ints({3, 3})}}), {x}), onyx::Error);
}

}  // namespace onyx::test
