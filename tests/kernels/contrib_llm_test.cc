// com.microsoft LLM ops: MatMulNBits, GatherBlockQuantized, RotaryEmbedding,
// GroupQueryAttention, on values checked by hand (scripts/contrib_cases/llm.py
// compares them with ONNX Runtime on larger inputs).
#include <cmath>

#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kMs = "com.microsoft";

Node matmul_nbits(std::vector<std::string> inputs, int64_t K, int64_t N, int64_t bits, int64_t block) {
  return make_node("MatMulNBits", std::move(inputs), {"y"},
                   {{"K", attr_int(K)}, {"N", attr_int(N)}, {"bits", attr_int(bits)}, {"block_size", attr_int(block)}}, kMs);
}

Tensor a_1_to_16() {
  std::vector<float> a(16);
  for (int i = 0; i < 16; ++i) a[i] = static_cast<float>(i + 1);
  return Tensor::from_vector<float>(a, {1, 16});
}

TEST(ContribLlm, MatMulNBits4BitDefaultZeroPoint) {
  // Row 0: every code 9 (value 1 after the default zero point 8), scale 0.5 -> 0.5 * sum(1..16) = 68.
  // Row 1: even k code 10 (value 2), odd k code 8 (value 0), scale 0.25 -> 0.5 * (1 + 3 + ... + 15) = 32.
  std::vector<uint8_t> b(16);
  for (int i = 0; i < 8; ++i) b[i] = 0x99, b[8 + i] = 0x8A;
  auto B = Tensor::from_vector<uint8_t>(b, {2, 1, 8});
  auto scales = Tensor::from_vector<float>({0.5f, 0.25f}, {2});
  auto out = run_op(matmul_nbits({"a", "b", "s"}, 16, 2, 4, 16), {a_1_to_16(), B, scales});
  EXPECT_EQ(out[0].shape(), (Shape{1, 2}));
  expect_near(out[0], {68.f, 32.f});
}

TEST(ContribLlm, MatMulNBits8BitZeroPointsAndBias) {
  // 8-bit codes 130 with zero point 128 (value 2) and 126 (value -2), scale 1, bias [1, -1].
  std::vector<uint8_t> b(32, 130);
  auto B = Tensor::from_vector<uint8_t>(b, {2, 1, 16});
  auto scales = Tensor::from_vector<float>({1.f, 1.f}, {2});
  auto zp = Tensor::from_vector<uint8_t>({128, 132}, {2});
  auto bias = Tensor::from_vector<float>({1.f, -1.f}, {2});
  auto out = run_op(matmul_nbits({"a", "b", "s", "zp", "", "bias"}, 16, 2, 8, 16), {a_1_to_16(), B, scales, zp, Tensor(), bias});
  expect_near(out[0], {2 * 136.f + 1, -2 * 136.f - 1});
}

TEST(ContribLlm, MatMulNBitsPartialLastBlock) {
  // K = 20 in blocks of 16: the second block's last 12 codes are padding.
  std::vector<uint8_t> b(16, 0x99);  // [1, 2, 8]: every value 1
  auto B = Tensor::from_vector<uint8_t>(b, {1, 2, 8});
  auto scales = Tensor::from_vector<float>({1.f, 2.f}, {2});
  auto a = Tensor::from_vector<float>(std::vector<float>(20, 1.f), {1, 20});
  auto out = run_op(matmul_nbits({"a", "b", "s"}, 20, 1, 4, 16), {a, B, scales});
  expect_near(out[0], {16.f + 2 * 4.f});
}

TEST(ContribLlm, MatMulNBitsRejectsBadInputs) {
  auto B = Tensor::from_vector<uint8_t>(std::vector<uint8_t>(16, 0x99), {2, 1, 8});
  auto scales = Tensor::from_vector<float>({1.f, 1.f}, {2});
  // A's last dimension is not K.
  EXPECT_THROW(run_op(matmul_nbits({"a", "b", "s"}, 16, 2, 4, 16), {pattern({1, 15}, 1), B, scales}), Error);
  // B too small for N = 3.
  EXPECT_THROW(run_op(matmul_nbits({"a", "b", "s"}, 16, 3, 4, 16), {a_1_to_16(), B, scales}), Error);
  // Unsupported bits and block sizes.
  EXPECT_THROW(run_op(matmul_nbits({"a", "b", "s"}, 16, 2, 3, 16), {a_1_to_16(), B, scales}), Error);
  EXPECT_THROW(run_op(matmul_nbits({"a", "b", "s"}, 16, 2, 4, 8), {a_1_to_16(), B, scales}), Error);
  // Scales of the wrong count.
  EXPECT_THROW(run_op(matmul_nbits({"a", "b", "s"}, 16, 2, 4, 16), {a_1_to_16(), B, Tensor::from_vector<float>({1.f}, {1})}),
               Error);
}

Node gather_bq(int64_t bits, int64_t block, bool zp = false) {
  std::vector<std::string> in = {"d", "i", "s"};
  if (zp) in.push_back("z");
  return make_node("GatherBlockQuantized", in, {"y"},
                   {{"bits", attr_int(bits)}, {"block_size", attr_int(block)}, {"quantize_axis", attr_int(1)}}, kMs);
}

TEST(ContribLlm, GatherBlockQuantizedPackedUint8) {
  // Rows of 32 4-bit codes packed in 16 bytes; default zero point 8. Row 1:
  // first block all code 9 (value 1) scale 2; second block code 6 (value -2) scale 0.5.
  std::vector<uint8_t> d(32, 0x88);
  for (int i = 0; i < 8; ++i) d[16 + i] = 0x99, d[24 + i] = 0x66;
  auto data = Tensor::from_vector<uint8_t>(d, {2, 16});
  auto scales = Tensor::from_vector<float>({1.f, 1.f, 2.f, 0.5f}, {2, 2});
  auto idx = Tensor::from_vector<int64_t>({1, -2}, {2});
  auto out = run_op(gather_bq(4, 16), {data, idx, scales});
  ASSERT_EQ(out[0].shape(), (Shape{2, 32}));
  for (int k = 0; k < 32; ++k) {
    EXPECT_FLOAT_EQ(out[0].float_at(k), k < 16 ? 2.f : -1.f);
    EXPECT_FLOAT_EQ(out[0].float_at(32 + k), 0.f);
  }
}

TEST(ContribLlm, GatherBlockQuantizedInt4AndErrors) {
  Tensor data(DataType::Int4, {1, 16});
  for (int k = 0; k < 16; ++k) data.data<int8_t>()[k] = static_cast<int8_t>(k - 8);
  auto scales = Tensor::from_vector<float>({0.5f}, {1, 1});
  auto idx = Tensor::from_vector<int32_t>({0}, {1});
  auto out = run_op(gather_bq(4, 16), {data, idx, scales});
  for (int k = 0; k < 16; ++k) EXPECT_FLOAT_EQ(out[0].float_at(k), 0.5f * (k - 8));
  EXPECT_THROW(run_op(gather_bq(4, 16), {data, Tensor::from_vector<int32_t>({1}, {1}), scales}), Error);  // index out of range
  EXPECT_THROW(run_op(gather_bq(4, 16), {data, idx, Tensor::from_vector<float>({1.f, 1.f}, {1, 2})}), Error);  // scales shape
  EXPECT_THROW(run_op(gather_bq(4, 15), {data, idx, scales}), Error);  // block size
}

TEST(ContribLlm, RotaryEmbeddingQuarterTurn) {
  // One head [x1, x2] = [1, 2] at position 1 whose angle has cos 0, sin 1: [-2, 1].
  auto x = Tensor::from_vector<float>({1, 2}, {1, 1, 2});
  auto pos = Tensor::from_vector<int64_t>({1}, {1, 1});
  auto c = Tensor::from_vector<float>({1, 0}, {2, 1});
  auto s = Tensor::from_vector<float>({0, 1}, {2, 1});
  auto out = run_op(make_node("RotaryEmbedding", {"x", "p", "c", "s"}, {"y"}, {}, kMs), {x, pos, c, s});
  expect_near(out[0], {-2.f, 1.f});
  // Position 2 is outside the cache.
  EXPECT_THROW(run_op(make_node("RotaryEmbedding", {"x", "p", "c", "s"}, {"y"}, {}, kMs),
                      {x, Tensor::from_vector<int64_t>({2}, {1, 1}), c, s}),
               Error);
}

Node gqa(std::vector<std::string> inputs, int64_t heads, int64_t kv_heads) {
  return make_node("GroupQueryAttention", std::move(inputs), {"y", "pk", "pv"},
                   {{"num_heads", attr_int(heads)}, {"kv_num_heads", attr_int(kv_heads)}}, kMs);
}

TEST(ContribLlm, GroupQueryAttentionPromptIsCausal) {
  // One head of size 2, default scale 1/sqrt(2): token 0 sees only itself;
  // token 1 weighs keys [1, 0], [0, 1] by softmax([0.7071, 0]) = [0.6698, 0.3302].
  auto q = Tensor::from_vector<float>({1, 0, 1, 0}, {1, 2, 2});
  auto k = Tensor::from_vector<float>({1, 0, 0, 1}, {1, 2, 2});
  auto v = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 2, 2});
  auto sl = Tensor::from_vector<int32_t>({1}, {1});
  auto tl = Tensor::from_vector<int32_t>({2}, {});
  auto out = run_op(gqa({"q", "k", "v", "", "", "sl", "tl"}, 1, 1), {q, k, v, Tensor(), Tensor(), sl, tl});
  expect_near(out[0], {1, 2, 1.6604769f, 2.6604769f});
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 2, 2}));
  expect_near(out[1], {1, 0, 0, 1});
}

TEST(ContribLlm, GroupQueryAttentionDecodeFillsCacheAndZeroesTheRest) {
  // Two batches, a fixed cache of 3 rows; batch 0 has 1 past token, batch 1 none.
  auto q = Tensor::from_vector<float>({0, 0, 0, 0}, {2, 1, 2});
  auto k = Tensor::from_vector<float>({5, 5, 6, 6}, {2, 1, 2});
  auto v = Tensor::from_vector<float>({1, 1, 7, 8}, {2, 1, 2});
  Tensor past = Tensor::from_vector<float>({3, 3, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}, {2, 1, 3, 2});
  auto sl = Tensor::from_vector<int32_t>({1, 0}, {2});
  auto tl = Tensor::from_vector<int32_t>({2}, {});
  auto out = run_op(gqa({"q", "k", "v", "pk", "pv", "sl", "tl"}, 1, 1), {q, k, v, past, past, sl, tl});
  // Zero queries weigh keys equally: batch 0 averages past [3, 3] and new [1, 1].
  expect_near(out[0], {2, 2, 7, 8});
  expect_near(out[1], {3, 3, 5, 5, 0, 0, 6, 6, 0, 0, 0, 0});
}

TEST(ContribLlm, GroupQueryAttentionRejectsBadInputs) {
  auto q = pattern({1, 2, 8}, 1), kv = pattern({1, 2, 4}, 2);
  auto sl = Tensor::from_vector<int32_t>({1}, {1});
  auto tl = Tensor::from_vector<int32_t>({2}, {});
  // num_heads not a multiple of kv_num_heads.
  EXPECT_THROW(run_op(gqa({"q", "k", "v", "", "", "sl", "tl"}, 3, 2), {q, kv, kv, Tensor(), Tensor(), sl, tl}), Error);
  // seqlens_k for 2 batches when there is 1; int64 instead of int32.
  EXPECT_THROW(run_op(gqa({"q", "k", "v", "", "", "sl", "tl"}, 2, 1),
                      {q, kv, kv, Tensor(), Tensor(), Tensor::from_vector<int32_t>({1, 1}, {2}), tl}),
               Error);
  EXPECT_THROW(run_op(gqa({"q", "k", "v", "", "", "sl", "tl"}, 2, 1),
                      {q, kv, kv, Tensor(), Tensor(), Tensor::from_vector<int64_t>({1}, {1}), tl}),
               Error);
  // Key of the wrong width; seqlens_k beyond total_sequence_length.
  EXPECT_THROW(run_op(gqa({"q", "k", "v", "", "", "sl", "tl"}, 2, 1), {q, q, q, Tensor(), Tensor(), sl, tl}), Error);
  EXPECT_THROW(run_op(gqa({"q", "k", "v", "", "", "sl", "tl"}, 2, 1),
                      {q, kv, kv, Tensor(), Tensor(), Tensor::from_vector<int32_t>({5}, {1}), tl}),
               Error);
  // do_rotary without the caches.
  Node rot = gqa({"q", "k", "v", "", "", "sl", "tl"}, 2, 1);
  rot.attributes["do_rotary"] = attr_int(1);
  EXPECT_THROW(run_op(rot, {q, kv, kv, Tensor(), Tensor(), sl, tl}), Error);
}

}  // namespace
}  // namespace onyx::test
