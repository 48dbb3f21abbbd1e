#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor f(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, s); }

TEST(Resize, NearestUpsampleAsymmetric) {
  auto y = run_op(make_node("Resize", {"x", "", "s"}, {"y"},
                            {{"mode", attr_string("nearest")},
                             {"coordinate_transformation_mode", attr_string("asymmetric")}}),
                  {f({1, 2, 3, 4}, {1, 1, 2, 2}), Tensor(), f({1, 1, 2, 2}, {4})}, 13)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  expect_near(y, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

// A huge scale is an error before per-axis tap tables as long as the output are built (that took minutes).
TEST(Resize, OutputTooLargeIsAnError) {
  auto node = make_node("Resize", {"x", "", "s"}, {"y"});
  EXPECT_THROW(run_op(node, {f({1, 2, 3, 4}, {1, 1, 2, 2}), Tensor(), f({1, 1, 1e9f, 1e9f}, {4})}, 13), Error);
  EXPECT_THROW(run_op(node, {f({1, 2, 3, 4}, {1, 1, 2, 2}), Tensor(), f({1, 1, 1e30f, 1}, {4})}, 13), Error);
}

TEST(Resize, LinearHalfPixelAndAlignCorners) {
  auto y = run_op(make_node("Resize", {"x", "", "s"}, {"y"}, {{"mode", attr_string("linear")}}),
                  {f({1, 2, 3, 4}, {1, 4}), Tensor(), f({1, 2}, {2})}, 13)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 8}));
  expect_near(y, {1, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4});
  auto a = run_op(make_node("Resize", {"x", "", "", "sz"}, {"y"},
                            {{"mode", attr_string("linear")},
                             {"coordinate_transformation_mode", attr_string("align_corners")}}),
                  {f({1, 2, 3, 4}, {1, 4}), Tensor(), Tensor(), Tensor::from_vector<int64_t>({1, 7}, {2})}, 13)[0];
  expect_near(a, {1, 1.5, 2, 2.5, 3, 3.5, 4});
}

// Resizing the last two axes (the separable two-pass paths) against the same
// resize with a trailing unit axis (the general tap-product path), over 3
// threads: nearest, linear, cubic and antialiased downscaling; shapes that
// take the rows-first order (9x4, 3x13) and the widen-first order (16x20,
// and 160x90, large enough to be split across the threads).
TEST(Resize, LastTwoAxesMatchGeneralPath) {
  const int64_t C = 3, H = 5, W = 7;
  std::vector<float> v(C * H * W);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 23) * 0.5f - 4.0f;
  ThreadPool three(3);
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (int64_t antialias : {0, 1}) {
      Node n = make_node("Resize", {"x", "", "", "sz"}, {"y"},
                         {{"mode", attr_string(mode)}, {"antialias", attr_int(antialias)}});
      for (auto [oh, ow] : {std::pair<int64_t, int64_t>{9, 4}, {3, 13}, {16, 20}, {160, 90}}) {
        auto fast = run_op(n, {f(v, {1, C, H, W}), Tensor(), Tensor(),
                               Tensor::from_vector<int64_t>({1, C, oh, ow}, {4})}, 18, &three)[0];
        auto general = run_op(n, {f(v, {1, C, H, W, 1}), Tensor(), Tensor(),
                                  Tensor::from_vector<int64_t>({1, C, oh, ow, 1}, {5})}, 18)[0];
        ASSERT_EQ(fast.shape(), (Shape{1, C, oh, ow}));
        ASSERT_EQ(fast.numel(), general.numel());
        for (int64_t i = 0; i < fast.numel(); ++i)
          ASSERT_NEAR(fast.float_at(i), general.float_at(i), 1e-5) << mode << " antialias " << antialias << " at " << i;
      }
    }
  }
}

TEST(Resize, CropAndResizeExtrapolation) {
  auto y = run_op(make_node("Resize", {"x", "roi", "", "sz"}, {"y"},
                            {{"mode", attr_string("linear")},
                             {"coordinate_transformation_mode", attr_string("tf_crop_and_resize")},
                             {"extrapolation_value", attr_float(7)}}),
                  {f({10, 20, 30, 40}, {1, 4}), f({0, 0.5f, 1, 1.5f}, {4}), Tensor(),
                   Tensor::from_vector<int64_t>({1, 3}, {2})},
                  13)[0];
  expect_near(y, {25, 40, 7});
}

TEST(Resize, UpsampleOpset7And9) {
  auto y = run_op(make_node("Upsample", {"x"}, {"y"}, {{"scales", attr_floats({1, 2})}}), {f({1, 2}, {1, 2})}, 7)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 4}));
  expect_near(y, {1, 1, 2, 2});
  auto z = run_op(make_node("Upsample", {"x", "s"}, {"y"}, {{"mode", attr_string("linear")}}),
                  {f({1, 3}, {1, 2}), f({1, 2}, {2})}, 9)[0];
  expect_near(z, {1, 2, 3, 3});
}

// Upsample-1 (experimental): height_scale / width_scale of an NCHW image.
TEST(Resize, UpsampleOpset1) {
  Node node = make_node("Upsample", {"x"}, {"y"}, {{"height_scale", attr_float(2)}, {"width_scale", attr_float(3)}});
  auto y = run_op(node, {f({1, 2}, {1, 1, 1, 2})}, 1)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 6}));
  expect_near(y, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
  auto z = run_op(make_node("Upsample", {"x"}, {"y"},
                            {{"height_scale", attr_float(1)}, {"width_scale", attr_float(2)}, {"mode", attr_string("bilinear")}}),
                  {f({1, 3}, {1, 1, 1, 2})}, 1)[0];
  expect_near(z, {1, 2, 3, 3});
  EXPECT_THROW(run_op(make_node("Upsample", {"x"}, {"y"}, {{"height_scale", attr_float(2)}}), {f({1, 2}, {1, 1, 1, 2})}, 1),
               Error);
}

TEST(Resize, IntegerNearest) {
  auto x = Tensor::from_vector<uint8_t>({5, 9}, {1, 2});
  auto y = run_op(make_node("Resize", {"x", "", "s"}, {"y"}), {x, Tensor(), f({1, 1.5f}, {2})}, 13)[0];
  EXPECT_EQ(y.dtype(), DataType::UInt8);
  // half_pixel: x_ori = -1/6, 0.5 (a tie, rounded down), 7/6
  EXPECT_EQ(to_vector<uint8_t>(y), (std::vector<uint8_t>{5, 5, 9}));
}

// x [N, C, H, W] in the blocked layout [N, ceil(C / B), H, W, B], padding lanes zero.
Tensor to_blocked(const Tensor& x, int64_t B) {
  const int64_t N = x.dim(0), C = x.dim(1), S = x.dim(2) * x.dim(3), Cb = (C + B - 1) / B;
  Tensor y(DataType::Float, {N, Cb, x.dim(2), x.dim(3), B});
  std::fill_n(y.data<float>(), y.numel(), 0.f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s)
        y.data<float>()[((n * Cb + c / B) * S + s) * B + c % B] = x.data<float>()[(n * C + c) * S + s];
  return y;
}

// NchwcResize against Resize of the plain tensor, over 3 threads, blocked and
// straight to NCHW: 21 channels (a partial block) in blocks of 16 and 8;
// nearest, linear, cubic and antialiased; 2x (blocked rows), 4x (to NCHW via
// the plain resize), a downscale, and a crop with extrapolated pixels.
TEST(Resize, NchwcResizeMatchesPlain) {
  const int64_t N = 2, C = 21, H = 24, W = 20;  // 2x: enough rows to split across the threads
  const Tensor x = pattern({N, C, H, W}, 3);
  ThreadPool three(3);
  struct Case {
    const char* mode;
    const char* coord;
    int64_t antialias, oh, ow;
  };
  for (const Case& k : {Case{"nearest", "asymmetric", 0, 48, 40}, Case{"linear", "half_pixel", 0, 48, 40},
                        Case{"linear", "half_pixel", 0, 96, 80}, Case{"cubic", "half_pixel", 0, 31, 53},
                        Case{"cubic", "half_pixel", 1, 7, 9}, Case{"linear", "tf_crop_and_resize", 0, 33, 27}}) {
    const std::map<std::string, Attribute> attrs = {{"mode", attr_string(k.mode)},
                                                    {"coordinate_transformation_mode", attr_string(k.coord)},
                                                    {"antialias", attr_int(k.antialias)},
                                                    {"extrapolation_value", attr_float(-3.5f)}};
    const Tensor roi = f({0, 0, -0.25f, -0.3f, 1, 1, 1.2f, 0.9f}, {8});  // beyond both axes
    const Tensor sizes = Tensor::from_vector<int64_t>({N, C, k.oh, k.ow}, {4});
    const Tensor plain = run_op(make_node("Resize", {"x", "roi", "", "sz"}, {"y"}, attrs), {x, roi, Tensor(), sizes},
                                19, &three)[0];
    for (int64_t B : {16, 8}) {
      for (int64_t nchw_output : {0, 1}) {
        auto battrs = attrs;
        battrs["channels"] = attr_int(C);
        battrs["nchw_output"] = attr_int(nchw_output);
        const Tensor y = run_op(make_node("NchwcResize", {"x", "roi", "", "sz"}, {"y"}, battrs, "com.onyx"),
                                {to_blocked(x, B), roi, Tensor(), sizes}, 19, &three)[0];
        const Tensor want = nchw_output ? plain : to_blocked(plain, B);
        ASSERT_EQ(y.shape(), want.shape()) << k.mode << " B " << B;
        for (int64_t i = 0; i < y.numel(); ++i)
          ASSERT_NEAR(y.float_at(i), want.float_at(i), 1e-5)
              << k.mode << " " << k.coord << " to " << k.oh << "x" << k.ow << " B " << B << " nchw_output "
              << nchw_output << " at " << i;
      }
    }
  }
}

TEST(Resize, BadScales) {
  EXPECT_THROW(run_op(make_node("Resize", {"x", "", "s"}, {"y"}), {f({1, 2}, {1, 2}), Tensor(), f({2}, {1})}, 13),
               onyx::Error);
}

}  // namespace
}  // namespace onyx::test
