// The rarer com.microsoft CPU ops (CropAndResize, MaxpoolWithMask,
// UnfoldTensor, DynamicTimeWarping, NGramRepeatBlock, BifurcationDetector,
// WordConvEmbedding, MatMulBnb4) on values worked out by hand, and their
// errors on bad input; scripts/contrib_cases/rare.py compares them with ONNX
// Runtime on larger inputs.
#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kMs = "com.microsoft";
constexpr float kLowest = std::numeric_limits<float>::lowest();

TEST(ContribRare, DynamicTimeWarpingFollowsTheCheapDiagonal) {
  auto cost = Tensor::from_vector<float>({0, 1, 1, 1, 0, 1, 1, 1, 0}, {3, 3});
  auto out = run_op(make_node("DynamicTimeWarping", {"x"}, {"y"}, {}, kMs), {cost});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
}

TEST(ContribRare, DynamicTimeWarpingBreaksTiesAsOrt) {
  // All costs equal: the diagonal and the vertical step win only when strictly
  // cheaper, so the path goes down first, then across the last row.
  auto cost = Tensor::from_vector<float>(std::vector<float>(6, 0.f), {1, 2, 3});
  auto out = run_op(make_node("DynamicTimeWarping", {"x"}, {"y"}, {}, kMs), {cost});
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{0, 1, 1, 1, 0, 0, 1, 2}));
  auto bad = Tensor::from_vector<float>(std::vector<float>(8, 0.f), {2, 2, 2});
  EXPECT_THROW(run_op(make_node("DynamicTimeWarping", {"x"}, {"y"}, {}, kMs), {bad}), Error);
}

TEST(ContribRare, NGramRepeatBlockBansTheRepeatingToken) {
  // Last token 1; the bigram (1, 2) already occurred, so token 2 is banned.
  auto ids = Tensor::from_vector<int64_t>({1, 2, 1}, {1, 3});
  auto scores = Tensor::from_vector<float>({0.5f, 0.25f, 0.75f, 1.f}, {1, 4});
  auto node = make_node("NGramRepeatBlock", {"ids", "scores"}, {"y"}, {{"ngram_size", attr_int(2)}}, kMs);
  auto out = run_op(node, {ids, scores});
  auto y = to_vector<float>(out[0]);
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_EQ(y[1], 0.25f);
  EXPECT_TRUE(std::isinf(y[2]) && y[2] < 0);
  EXPECT_EQ(y[3], 1.f);
  // A token id past the vocabulary is an error, not a write out of bounds.
  auto far = Tensor::from_vector<int64_t>({1, 9, 1}, {1, 3});
  EXPECT_THROW(run_op(node, {far, scores}), Error);
}

TEST(ContribRare, BifurcationDetectorFindsTheUniqueSuffix) {
  auto src = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {6});
  auto cur = Tensor::from_vector<int64_t>({9, 3, 4}, {3});
  auto prev = Tensor::from_vector<int64_t>({0}, {});
  auto node = make_node("BifurcationDetector", {"src", "cur", "prev"}, {"tokens", "idx"},
                        {{"min_ngram_size", attr_int(1)}, {"max_ngram_size", attr_int(3)}}, kMs);
  auto out = run_op(node, {src, cur, prev});
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{9, 3, 4}));
  EXPECT_EQ(to_vector<int64_t>(out[1]), (std::vector<int64_t>{4}));  // [3, 4] occurs once, ending before index 4
  // With predictions: 3, 4 agree with the source after index 2, 9 departs and is kept.
  auto with_pred = make_node("BifurcationDetector", {"src", "cur", "prev", "pred"}, {"tokens", "idx"},
                             {{"min_ngram_size", attr_int(1)}, {"max_ngram_size", attr_int(3)}}, kMs);
  auto pred = Tensor::from_vector<int64_t>({3, 4, 9, 0, 0}, {5});
  auto two = Tensor::from_vector<int64_t>({2}, {});
  out = run_op(with_pred, {src, cur, two, pred});
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{9, 3, 4, 3, 4, 9}));
  EXPECT_EQ(to_vector<int64_t>(out[1]), (std::vector<int64_t>{-1}));
  // pred_tokens must be src_len + 1 - prev long.
  EXPECT_THROW(run_op(with_pred, {src, cur, prev, pred}), Error);
}

TEST(ContribRare, UnfoldTensorWindows) {
  auto x = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5}, {6});
  auto node = make_node("UnfoldTensor", {"x"}, {"y"}, {{"size", attr_int(3)}, {"step", attr_int(2)}}, kMs);
  auto out = run_op(node, {x});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{0, 1, 2, 2, 3, 4}));
  auto short_x = Tensor::from_vector<int64_t>({0, 1}, {2});
  EXPECT_THROW(run_op(node, {short_x}), Error);
}

TEST(ContribRare, CropAndResizeBilinearAndExtrapolation) {
  auto x = Tensor::from_vector<float>({0, 1, 2, 3}, {1, 1, 2, 2});
  // The whole image, and a box reaching past its right edge.
  auto rois = Tensor::from_vector<float>({0, 0, 1, 1, 0, 0.5f, 0, 1.5f}, {2, 4});
  auto bidx = Tensor::from_vector<int32_t>({0, 0}, {2});
  auto crop = Tensor::from_vector<int32_t>({3, 3}, {2});
  auto node =
      make_node("CropAndResize", {"x", "rois", "b", "crop"}, {"y"}, {{"extrapolation_value", attr_float(-1.f)}}, kMs);
  auto out = run_op(node, {x, rois, bidx, crop});
  EXPECT_EQ(out[0].shape(), (Shape{2, 1, 3, 3}));
  // Box 2 is a row at y = 0 with x = 0.5, 1, 1.5 (the last outside).
  expect_near(out[0], {0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3, 0.5f, 1, -1, 0.5f, 1, -1, 0.5f, 1, -1});
  auto far = Tensor::from_vector<int32_t>({0, 1}, {2});
  EXPECT_THROW(run_op(node, {x, rois, far, crop}), Error);
}

TEST(ContribRare, MaxpoolWithMaskStopsAtMaskedPositions) {
  // 2-D: a masked position ends its window's row; position 0 is never masked.
  auto x = Tensor::from_vector<float>({1, 5, 3, 2}, {1, 1, 1, 4});
  auto m = Tensor::from_vector<int32_t>({0, 1, 0, 1}, {1, 1, 1, 4});
  auto node2d = make_node("MaxpoolWithMask", {"x", "m"}, {"y"},
                          {{"kernel_shape", attr_ints({1, 2})}, {"strides", attr_ints({1, 2})}}, kMs);
  auto out = run_op(node2d, {x, m});
  EXPECT_EQ(to_vector<float>(out[0]), (std::vector<float>{5, kLowest}));
  // 1-D: position 0 can be masked.
  auto x1 = Tensor::from_vector<float>({4, 1, 2}, {1, 1, 3});
  auto m1 = Tensor::from_vector<int32_t>({0, 1, 1}, {1, 1, 3});
  auto node1d = make_node("MaxpoolWithMask", {"x", "m"}, {"y"}, {{"kernel_shape", attr_ints({2})}}, kMs);
  out = run_op(node1d, {x1, m1});
  EXPECT_EQ(to_vector<float>(out[0]), (std::vector<float>{kLowest, 2}));
  auto wrong = Tensor::from_vector<int32_t>({1, 1}, {1, 1, 2});
  EXPECT_THROW(run_op(node1d, {x1, wrong}), Error);
}

TEST(ContribRare, WordConvEmbeddingTanhOfTheBestWindow) {
  // Word 0: characters 1, 1 (embedding 0.5), window 1, filter weight 2 ->
  // tanh(1). Word 1 starts with padding: an empty word.
  auto seq = Tensor::from_vector<int32_t>({1, 1, 0, 1}, {2, 2});
  auto w = Tensor::from_vector<float>({2.f}, {1, 1, 1, 1});
  auto b = Tensor::from_vector<float>({0.f}, {1});
  auto c = Tensor::from_vector<float>({0.f, 0.5f}, {2, 1});
  auto node = make_node("WordConvEmbedding", {"s", "w", "b", "c"}, {"y"}, {}, kMs);
  auto out = run_op(node, {seq, w, b, c});
  expect_near(out[0], {std::tanh(1.f), 0.f});
  auto bad = Tensor::from_vector<int32_t>({1, 7, 0, 1}, {2, 2});
  EXPECT_THROW(run_op(node, {bad, w, b, c}), Error);
}

TEST(ContribRare, MatMulBnb4Nf4AndFp4) {
  std::vector<float> a(16);
  for (int i = 0; i < 16; ++i) a[i] = static_cast<float>(i + 1);
  auto A = Tensor::from_vector<float>(a, {1, 16});
  // Row 0: NF4 code 15 (1.0) everywhere, absmax 2 -> 2 * 136. Row 1: code 7 (0) everywhere.
  std::vector<uint8_t> codes(16);
  for (int i = 0; i < 8; ++i) codes[i] = 0xFF, codes[8 + i] = 0x77;
  auto B = Tensor::from_vector<uint8_t>(codes, {16});
  auto absmax = Tensor::from_vector<float>({2.f, 3.f}, {2});
  auto node = [](int64_t quant_type) {
    return make_node(
        "MatMulBnb4", {"a", "b", "m"}, {"y"},
        {{"K", attr_int(16)}, {"N", attr_int(2)}, {"block_size", attr_int(16)}, {"quant_type", attr_int(quant_type)}},
        kMs);
  };
  auto out = run_op(node(1), {A, B, absmax});
  expect_near(out[0], {272.f, 0.f});
  // FP4: code 15 is -0.25, code 7 is 0.25.
  out = run_op(node(0), {A, B, absmax});
  expect_near(out[0], {-0.25f * 2 * 136, 0.25f * 3 * 136});
  EXPECT_THROW(run_op(node(1), {A, B, Tensor::from_vector<float>({2.f}, {1})}), Error);
}

TEST(ContribRare, MoERoutesToTheLikeliestExpert) {
  // Router probabilities [0.25, 0.75]: k = 1 picks expert 1, whose fc1 row [1, 2] gives 3 for x = [1, 1] and
  // whose fc2 column [3, 4] gives [9, 12], weighted by 0.75 (or by 1 once the weights are renormalized).
  auto x = Tensor::from_vector<float>({1.f, 1.f}, {1, 2});
  auto router = Tensor::from_vector<float>({0.f, std::log(3.f)}, {1, 2});
  auto w1 = Tensor::from_vector<float>({5.f, 5.f, 1.f, 2.f}, {2, 1, 2});
  auto w2 = Tensor::from_vector<float>({5.f, 5.f, 3.f, 4.f}, {2, 2, 1});
  auto node = [](int64_t normalize) {
    return make_node("MoE", {"x", "r", "w1", "", "w2"}, {"y"},
                     {{"k", attr_int(1)},
                      {"activation_type", attr_string("identity")},
                      {"normalize_routing_weights", attr_int(normalize)}},
                     kMs);
  };
  expect_near(run_op(node(0), {x, router, w1, Tensor(), w2})[0], {6.75f, 9.f});
  expect_near(run_op(node(1), {x, router, w1, Tensor(), w2})[0], {9.f, 12.f});
  // k larger than the number of experts.
  auto k3 = make_node("MoE", {"x", "r", "w1", "", "w2"}, {"y"}, {{"k", attr_int(3)}}, kMs);
  EXPECT_THROW(run_op(k3, {x, router, w1, Tensor(), w2}), Error);
}

}  // namespace
}  // namespace onyx::test
