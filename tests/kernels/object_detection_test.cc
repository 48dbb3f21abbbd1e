#include <algorithm>
#include <cmath>
#include <limits>

#include "base/thread_pool.h"
#include "op_test_util.h"

namespace onyx::test {
namespace {

TEST(ObjectDetection, NonMaxSuppression) {
  // three boxes (y1, x1, y2, x2): 0 and 1 overlap heavily, 2 is apart
  Tensor boxes = Tensor::from_vector<float>({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11}, {1, 3, 4});
  Tensor scores = Tensor::from_vector<float>({0.9f, 0.95f, 0.3f}, {1, 1, 3});
  auto node = make_node("NonMaxSuppression", {"b", "s", "m", "i", "t"}, {"y"});
  auto y = run_op(node, {boxes, scores, Tensor::scalar<int64_t>(10), Tensor::scalar<float>(0.5f), Tensor::scalar<float>(0.f)}, 11);
  EXPECT_EQ(y[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(to_vector<int64_t>(y[0]), (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
  // score threshold removes box 2; max 1 box per class
  auto y2 = run_op(node, {boxes, scores, Tensor::scalar<int64_t>(1), Tensor::scalar<float>(0.5f), Tensor::scalar<float>(0.5f)}, 11);
  EXPECT_EQ(to_vector<int64_t>(y2[0]), (std::vector<int64_t>{0, 0, 1}));
  // no max_output_boxes_per_class: nothing selected
  auto y3 = run_op(make_node("NonMaxSuppression", {"b", "s"}, {"y"}), {boxes, scores}, 11);
  EXPECT_EQ(y3[0].shape(), (Shape{0, 3}));
}

// Many overlapping boxes (hundreds kept, so the kept set spans several of
// the vector blocks), some without area: the selection equals the greedy
// loop's, box by box.
TEST(ObjectDetection, NonMaxSuppressionManyBoxesMatchesGreedyLoop) {
  const int64_t S = 700;
  std::vector<float> b(S * 4), sc(S);
  uint32_t state = 12345;
  auto next = [&] { return (state = state * 1664525u + 1013904223u) >> 8 & 0xFFFF; };
  for (int64_t i = 0; i < S; ++i) {
    const float y = static_cast<float>(next() % 200), x = static_cast<float>(next() % 200);
    const float h = i % 50 == 0 ? 0.f : static_cast<float>(1 + next() % 30), w = static_cast<float>(1 + next() % 30);
    b[i * 4 + 0] = y, b[i * 4 + 1] = x, b[i * 4 + 2] = y + h, b[i * 4 + 3] = x + w;
    sc[i] = static_cast<float>(next()) / 65536.f;
  }
  const float th = 0.3f;
  auto iou_over = [&](int64_t p, int64_t q) {
    const float* a = &b[p * 4];
    const float* c = &b[q * 4];
    const float iw = std::min(a[3], c[3]) - std::max(a[1], c[1]), ih = std::min(a[2], c[2]) - std::max(a[0], c[0]);
    if (iw <= 0 || ih <= 0) return false;
    const float inter = iw * ih, aa = (a[3] - a[1]) * (a[2] - a[0]), ac = (c[3] - c[1]) * (c[2] - c[0]);
    const float uni = aa + ac - inter;
    if (aa <= 0 || ac <= 0 || uni <= 0) return false;
    return inter / uni > th;
  };
  std::vector<int64_t> order(S);
  for (int64_t i = 0; i < S; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
  std::vector<int64_t> want;
  for (int64_t q : order) {
    bool keep = true;
    for (size_t k = 2; k < want.size() && keep; k += 3) keep = !iou_over(want[k], q);
    if (keep) want.insert(want.end(), {0, 0, q});
  }
  ASSERT_GT(want.size() / 3, 200u);
  auto y = run_op(make_node("NonMaxSuppression", {"b", "s", "m", "i"}, {"y"}),
                  {Tensor::from_vector<float>(b, {1, S, 4}), Tensor::from_vector<float>(sc, {1, 1, S}),
                   Tensor::scalar<int64_t>(S), Tensor::scalar<float>(th)},
                  11);
  EXPECT_EQ(to_vector<int64_t>(y[0]), want);
}

// Many rois split across a pool give the single-threaded result, and a bad
// batch index is still an error naming the roi.
TEST(ObjectDetection, RoiAlignManyRoisOnAPool) {
  const int64_t N = 2, C = 8, H = 20, W = 24, R = 60;
  std::vector<float> xv(N * C * H * W), rv(R * 4);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 7919) % 1000) / 100.f;
  std::vector<int64_t> bv(R);
  for (int64_t r = 0; r < R; ++r) {
    rv[r * 4 + 0] = static_cast<float>(r % 10), rv[r * 4 + 1] = static_cast<float>(r % 7);
    rv[r * 4 + 2] = rv[r * 4 + 0] + 3.5f + static_cast<float>(r % 11);
    rv[r * 4 + 3] = rv[r * 4 + 1] + 2.f + static_cast<float>(r % 5);
    bv[r] = r % N;
  }
  auto node = make_node("RoiAlign", {"x", "r", "b"}, {"y"},
                        {{"output_height", attr_int(7)}, {"output_width", attr_int(7)}});
  const std::vector<Tensor> in = {Tensor::from_vector<float>(xv, {N, C, H, W}), Tensor::from_vector<float>(rv, {R, 4}),
                                  Tensor::from_vector<int64_t>(bv, {R})};
  ThreadPool pool(2);
  auto one = run_op(node, in, 16), two = run_op(node, in, 16, &pool);
  ASSERT_EQ(one[0].shape(), (Shape{R, C, 7, 7}));
  EXPECT_EQ(to_vector<float>(one[0]), to_vector<float>(two[0]));
  bv[R - 1] = 5;
  try {
    run_op(node, {in[0], in[1], Tensor::from_vector<int64_t>(bv, {R})}, 16, &pool);
    FAIL() << "no error for batch index 5";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("of roi 59"), std::string::npos) << e.what();
  }
}

TEST(ObjectDetection, RoiAlignAvgOnConstantAndRamp) {
  // 1x1x4x4 ramp x[h][w] = w; bilinear sampling of a linear ramp is exact
  Tensor x(DataType::Float, {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i) x.data<float>()[i] = static_cast<float>(i % 4);
  Tensor rois = Tensor::from_vector<float>({0, 0, 2, 2}, {1, 4});
  Tensor bi = Tensor::from_vector<int64_t>({0}, {1});
  auto node = make_node("RoiAlign", {"x", "r", "b"}, {"y"},
                        {{"output_height", attr_int(1)}, {"output_width", attr_int(2)}, {"sampling_ratio", attr_int(2)},
                         {"coordinate_transformation_mode", attr_string("output_half_pixel")}});
  auto y = run_op(node, {x, rois, bi}, 16);
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 1, 2}));
  // bins cover x in [0,1] and [1,2]; samples at 0.25,0.75 and 1.25,1.75
  expect_near(y[0], {0.5f, 1.5f});
  // half_pixel shifts the roi by -0.5: samples at -0.25 (clamped to 0), 0.25 / 0.75, 1.25
  auto node2 = make_node("RoiAlign", {"x", "r", "b"}, {"y"},
                         {{"output_height", attr_int(1)}, {"output_width", attr_int(2)}, {"sampling_ratio", attr_int(2)}});
  auto y2 = run_op(node2, {x, rois, bi}, 16);
  expect_near(y2[0], {0.125f, 1.0f});
}

TEST(ObjectDetection, GridSampleBilinearAndNearest) {
  Tensor x = Tensor::from_vector<float>({0, 1, 2, 3}, {1, 1, 2, 2});
  // grid points: the center, and the top-left corner
  Tensor g = Tensor::from_vector<float>({0, 0, -1, -1}, {1, 1, 2, 2});
  auto y = run_op(make_node("GridSample", {"x", "g"}, {"y"}, {{"align_corners", attr_int(1)}}), {x, g}, 16);
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 1, 2}));
  expect_near(y[0], {1.5f, 0.f});
  // align_corners=0, zeros padding: the corner (-1,-1) maps to pixel (-0.5,-0.5): a quarter of x[0][0]
  Tensor x2 = Tensor::from_vector<float>({4, 0, 0, 0}, {1, 1, 2, 2});
  auto y2 = run_op(make_node("GridSample", {"x", "g"}, {"y"}), {x2, g}, 16);
  expect_near(y2[0], {1.f, 1.f});
  auto y3 = run_op(make_node("GridSample", {"x", "g"}, {"y"}, {{"padding_mode", attr_string("border")}}), {x2, g}, 16);
  expect_near(y3[0], {1.f, 4.f});
  auto y4 = run_op(make_node("GridSample", {"x", "g"}, {"y"}, {{"mode", attr_string("nearest")}}), {x, g}, 16);
  // align_corners=0: the center maps to (0.5, 0.5), which rounds half to even to (0, 0)
  expect_near(y4[0], {0.f, 0.f});
  Tensor g2 = Tensor::from_vector<float>({0.6f, 0.6f}, {1, 1, 1, 2});
  expect_near(run_op(make_node("GridSample", {"x", "g"}, {"y"}, {{"mode", attr_string("nearest")}}), {x, g2}, 16)[0], {3.f});
}

// Taps outside a zero-padded input read 0, whatever the input holds where
// the kernel parks their offsets: an infinite pixel must not turn 0 x inf
// into NaN. Two channels share each point's taps.
TEST(ObjectDetection, GridSampleZeroPaddingIgnoresNonFinitePixelsItDoesNotTouch) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector<float>({inf, 1, 2, 3, 8, 1, 2, 3}, {1, 2, 2, 2});
  // far outside (every tap is padding); x = 1, y = -1 with align_corners (the top-right pixel)
  Tensor g = Tensor::from_vector<float>({-5, -5, 1, -1}, {1, 1, 2, 2});
  auto y = run_op(make_node("GridSample", {"x", "g"}, {"y"}, {{"align_corners", attr_int(1)}}), {x, g}, 16);
  ASSERT_EQ(y[0].shape(), (Shape{1, 2, 1, 2}));
  expect_near(y[0], {0.f, 1.f, 0.f, 1.f});
}

// Coordinates that are not finite sample NaN (the ONNX reference's weights are NaN), except
// nearest with zero padding, which reads the padding; far-off finite ones read the padding
// (zeros) or fold back (reflection) without overflowing an index.
TEST(ObjectDetection, GridSampleNonFiniteAndFarCoordinates) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor g = Tensor::from_vector<float>({nan, 0, 0, inf, 1e30f, 0, -1e30f, -1e30f}, {1, 1, 4, 2});
  auto sample = [&](const char* mode, const char* pad) {
    return run_op(make_node("GridSample", {"x", "g"}, {"y"},
                            {{"mode", attr_string(mode)}, {"padding_mode", attr_string(pad)}}),
                  {x, g}, 16)[0];
  };
  for (const char* mode : {"bilinear", "bicubic"}) {
    Tensor y = sample(mode, "zeros");
    EXPECT_TRUE(std::isnan(y.data<float>()[0]) && std::isnan(y.data<float>()[1])) << mode;
    EXPECT_EQ(y.data<float>()[2], 0.0f) << mode;
    EXPECT_EQ(y.data<float>()[3], 0.0f) << mode;
  }
  Tensor nearest = sample("nearest", "zeros");
  EXPECT_EQ(to_vector<float>(nearest), (std::vector<float>{0, 0, 0, 0}));
  Tensor reflected = sample("bilinear", "reflection");
  EXPECT_TRUE(std::isnan(reflected.data<float>()[0]));
  for (int i = 2; i < 4; ++i) {
    float v = reflected.data<float>()[i];
    EXPECT_TRUE(v >= 1.0f && v <= 4.0f) << v;
  }
}

// 2-D bilinear (the vectorized taps) against the general N-D sampler on the
// same image as a depth-1 volume sampled at z = 0, for zero and border
// padding with and without align_corners; points inside, on and past the
// edges, over 3 channels.
TEST(ObjectDetection, GridSampleBilinear2DMatchesDepthOneVolume) {
  const int64_t C = 3, H = 5, W = 7, Ho = 9, Wo = 11;
  std::vector<float> img(C * H * W), g2, g3;
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<float>((i * 37) % 23) - 7.0f;
  for (int64_t i = 0; i < Ho * Wo; ++i) {
    const float gx = -1.3f + 2.6f * static_cast<float>(i % Wo) / (Wo - 1), gy = -1.2f + 2.4f * static_cast<float>(i / Wo) / (Ho - 1);
    g2.insert(g2.end(), {gx, gy});
    g3.insert(g3.end(), {gx, gy, 0.0f});
  }
  for (const char* pad : {"zeros", "border"})
    for (int64_t align : {0, 1}) {
      Node node = make_node("GridSample", {"x", "g"}, {"y"}, {{"padding_mode", attr_string(pad)}, {"align_corners", attr_int(align)}});
      auto y2 = run_op(node, {Tensor::from_vector<float>(img, {1, C, H, W}), Tensor::from_vector<float>(g2, {1, Ho, Wo, 2})}, 16)[0];
      auto y3 = run_op(node, {Tensor::from_vector<float>(img, {1, C, 1, H, W}), Tensor::from_vector<float>(g3, {1, 1, Ho, Wo, 3})}, 20)[0];
      ASSERT_EQ(y2.numel(), C * Ho * Wo);
      ASSERT_EQ(y3.numel(), C * Ho * Wo);
      for (int64_t i = 0; i < y2.numel(); ++i) ASSERT_NEAR(y2.float_at(i), y3.float_at(i), 1e-5) << pad << " align " << align << " at " << i;
    }
}

TEST(ObjectDetection, AffineGridIdentity) {
  Tensor theta = Tensor::from_vector<float>({1, 0, 0, 0, 1, 0}, {1, 2, 3});
  auto y = run_op(make_node("AffineGrid", {"t", "s"}, {"y"}, {{"align_corners", attr_int(1)}}),
                  {theta, Tensor::from_vector<int64_t>({1, 1, 2, 3}, {4})}, 20);
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 3, 2}));
  expect_near(y[0], {-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1});
}

TEST(ObjectDetection, Col2ImSumsOverlaps) {
  // 1-channel 1x3 image, block 1x2, stride 1 -> 2 blocks
  Tensor x = Tensor::from_vector<float>({1, 2, 10, 20}, {1, 2, 2});
  auto y = run_op(make_node("Col2Im", {"x", "i", "b"}, {"y"}),
                  {x, Tensor::from_vector<int64_t>({1, 3}, {2}), Tensor::from_vector<int64_t>({1, 2}, {2})}, 18);
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 1, 3}));
  expect_near(y[0], {1, 12, 20});
}

TEST(ObjectDetection, CenterCropPad) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto y = run_op(make_node("CenterCropPad", {"x", "s"}, {"y"}), {x, Tensor::from_vector<int64_t>({4, 1}, {2})}, 18);
  EXPECT_EQ(y[0].shape(), (Shape{4, 1}));
  expect_near(y[0], {0, 2, 5, 0});
}

TEST(ObjectDetection, Errors) {
  Tensor boxes = Tensor::from_vector<float>({0, 0, 1, 1}, {1, 1, 4});
  EXPECT_THROW(run_op(make_node("NonMaxSuppression", {"b", "s"}, {"y"}), {boxes, Tensor::from_vector<float>({1, 2}, {1, 1, 2})}, 11),
               Error);
  Tensor x(DataType::Float, {1, 1, 2, 2});
  EXPECT_THROW(run_op(make_node("RoiAlign", {"x", "r", "b"}, {"y"}),
                      {x, Tensor::from_vector<float>({0, 0, 1, 1}, {1, 4}), Tensor::from_vector<int64_t>({3}, {1})}, 16),
               Error);
}

}  // namespace
}  // namespace onyx::test
