// ORT's transformer contrib ops (com.microsoft SkipLayerNormalization,
// SkipSimplifiedLayerNormalization, EmbedLayerNormalization, Attention,
// MultiHeadAttention; default-domain SimplifiedLayerNormalization) on small
// hand-checked cases, plus bad inputs. scripts/contrib_cases/transformer.py
// compares them with onnxruntime on larger random cases.
#include <cmath>

#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kMs = "com.microsoft";

Tensor F(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(std::move(v), std::move(s)); }
Tensor I(std::vector<int32_t> v, Shape s) { return Tensor::from_vector<int32_t>(std::move(v), std::move(s)); }

Node ms_node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
             std::map<std::string, Attribute> attrs = {}) {
  return make_node(op, std::move(in), std::move(out), std::move(attrs), kMs);
}

// softmax([1/sqrt 2, 0]) = [0.6698, 0.3302]
constexpr float kP0 = 0.66976155f, kP1 = 0.33023845f;

TEST(ContribSkipLayerNorm, AddsSkipAndBiasAndGivesStatistics) {
  // input + skip + bias = [3, 3, 3, 5]: mean 3.5, variance 0.75.
  auto out = run_op(ms_node("SkipLayerNormalization", {"x", "s", "g", "b", "bias"}, {"y", "mean", "inv", "sum"}),
                    {F({1, 2, 3, 4}, {1, 1, 4}), F({1, 0, -1, 0}, {1, 1, 4}), F({1, 1, 1, 2}, {4}),
                     F({0, 0, 0, 0.5f}, {4}), F({1, 1, 1, 1}, {4})});
  expect_near(out[0], {-0.57735027f, -0.57735027f, -0.57735027f, 2 * 1.7320508f + 0.5f});
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 1}));
  expect_near(out[1], {3.5f});
  expect_near(out[2], {1.1547005f});
  expect_near(out[3], {3, 3, 3, 5});
}

TEST(ContribSkipLayerNorm, SkipBroadcastsOverTheBatch) {
  auto x = F({1, 2, 3, 4}, {2, 1, 2});
  auto out = run_op(ms_node("SkipLayerNormalization", {"x", "s", "g"}, {"y"}), {x, F({0, 1}, {1, 2}), F({1, 1}, {2})});
  // Rows [1, 3] and [3, 5]: each normalizes to [-1, 1].
  expect_near(out[0], {-1, 1, -1, 1});
}

TEST(ContribSkipLayerNorm, SimplifiedIsRmsNorm) {
  // [3, 4]: mean square 12.5, 1 / sqrt(12.5) = 0.2828427.
  auto out = run_op(ms_node("SkipSimplifiedLayerNormalization", {"x", "s", "g"}, {"y", "mean", "inv"}),
                    {F({2, 4}, {1, 1, 2}), F({1, 0}, {1, 1, 2}), F({1, 2}, {2})});
  expect_near(out[0], {0.8485281f, 2.2627417f});
  expect_near(out[1], {0});
  expect_near(out[2], {0.2828427f});
}

// float16 and bfloat16 compute in float, as in onnxruntime (which casts around the op):
// the normalized output and the sum come back in the input's type, mean and
// inv_std_var stay float.
TEST(ContribSkipLayerNorm, HalfTypesComputeInFloat) {
  auto half = [](std::vector<float> v, Shape s) {
    return Tensor::from_vector<Float16>(std::vector<Float16>(v.begin(), v.end()), std::move(s));
  };
  auto out = run_op(ms_node("SkipLayerNormalization", {"x", "s", "g", "b", "bias"}, {"y", "mean", "inv", "sum"}),
                    {half({1, 2, 3, 4}, {1, 1, 4}), half({1, 0, -1, 0}, {1, 1, 4}), half({1, 1, 1, 2}, {4}),
                     half({0, 0, 0, 0.5f}, {4}), half({1, 1, 1, 1}, {4})});
  ASSERT_EQ(out[0].dtype(), DataType::Float16);
  expect_near(out[0], {-0.57735027f, -0.57735027f, -0.57735027f, 2 * 1.7320508f + 0.5f}, 1e-3f);
  ASSERT_EQ(out[1].dtype(), DataType::Float);
  expect_near(out[1], {3.5f});
  ASSERT_EQ(out[2].dtype(), DataType::Float);
  expect_near(out[2], {1.1547005f});
  ASSERT_EQ(out[3].dtype(), DataType::Float16);
  expect_near(out[3], {3, 3, 3, 5});

  auto bf16 = [](std::vector<float> v, Shape s) {
    return Tensor::from_vector<BFloat16>(std::vector<BFloat16>(v.begin(), v.end()), std::move(s));
  };
  auto rms = run_op(ms_node("SkipSimplifiedLayerNormalization", {"x", "s", "g"}, {"y", "mean", "inv"}),
                    {bf16({2, 4}, {1, 1, 2}), bf16({1, 0}, {1, 1, 2}), bf16({1, 2}, {2})});
  ASSERT_EQ(rms[0].dtype(), DataType::BFloat16);
  expect_near(rms[0], {0.8485281f, 2.2627417f}, 1e-2f);
  ASSERT_EQ(rms[2].dtype(), DataType::Float);
  expect_near(rms[2], {0.2828427f});
}

TEST(ContribSkipLayerNorm, BadShapesAreErrors) {
  auto node = ms_node("SkipLayerNormalization", {"x", "s", "g"}, {"y"});
  auto x = F({1, 2, 3, 4}, {1, 2, 2});
  EXPECT_THROW(run_op(node, {x, F({1, 2}, {1, 1, 2}), F({1, 1}, {2})}), onyx::Error);     // skip rows
  EXPECT_THROW(run_op(node, {x, x, F({1, 1, 1}, {3})}), onyx::Error);                       // gamma size
  EXPECT_THROW(run_op(node, {F({1, 2}, {2}), F({1, 2}, {2}), F({1, 1}, {2})}), onyx::Error);  // 1-D input
}

TEST(ContribSimplifiedLayerNorm, DefaultDomainRmsNormWithInvStd) {
  auto out = run_op(make_node("SimplifiedLayerNormalization", {"x", "g"}, {"y", "inv"}, {{"epsilon", attr_float(0)}}),
                    {F({3, 4, 0, 2}, {2, 2}), F({1, 2}, {2})});
  expect_near(out[0], {0.8485281f, 2.2627417f, 0, 2.8284271f});
  EXPECT_EQ(out[1].shape(), (Shape{2, 1}));
  expect_near(out[1], {0.2828427f, 0.70710678f});
}

// word [[0, 0], [1, 3]], position [[0, 1], [2, 0]]: token 0 (id 1) sums to
// [1, 4] and token 1 (id 0) to [2, 0]; each normalizes to +-1.
std::vector<Tensor> embed_inputs(Tensor ids) {
  return {ids, Tensor(), F({0, 0, 1, 3}, {2, 2}), F({0, 1, 2, 0}, {2, 2}), Tensor(), F({1, 1}, {2}),
          F({0, 0.5f}, {2}), I({1, 0}, {1, 2})};
}

TEST(ContribEmbedLayerNorm, SumsEmbeddingsAndCountsTheMask) {
  auto node = ms_node("EmbedLayerNormalization", {"ids", "", "w", "p", "", "g", "b", "m"}, {"y", "mask_index", "sum"});
  auto out = run_op(node, embed_inputs(I({1, 0}, {1, 2})));
  expect_near(out[0], {-1, 1.5f, 1, -0.5f});
  EXPECT_EQ(out[1].dtype(), DataType::Int32);
  EXPECT_EQ(to_vector<int32_t>(out[1]), (std::vector<int32_t>{1}));
  expect_near(out[2], {1, 4, 2, 0});
}

TEST(ContribEmbedLayerNorm, BadIdsAreErrors) {
  auto node = ms_node("EmbedLayerNormalization", {"ids", "", "w", "p", "", "g", "b", "m"}, {"y", "mask_index"});
  EXPECT_THROW(run_op(node, embed_inputs(I({1, 2}, {1, 2}))), onyx::Error);  // id 2 of a 2-row table
  EXPECT_THROW(run_op(node, embed_inputs(I({1, -1}, {1, 2}))), onyx::Error);
  auto wrong_type = embed_inputs(I({1, 0}, {1, 2}));
  wrong_type[0] = Tensor::from_vector<int64_t>({1, 0}, {1, 2});
  EXPECT_THROW(run_op(node, wrong_type), onyx::Error);
}

// Attention with W = [I I I] (so Q = K = V = input) over tokens [1, 0], [0, 1].
std::vector<Tensor> identity_attention(Tensor mask = Tensor()) {
  return {F({1, 0, 0, 1}, {1, 2, 2}), F({1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1}, {2, 6}), Tensor(), mask};
}

TEST(ContribAttention, SelfAttentionMasksAndCausal) {
  auto attrs = std::map<std::string, Attribute>{{"num_heads", attr_int(1)}};
  auto out = run_op(ms_node("Attention", {"x", "w"}, {"y"}, attrs), identity_attention());
  expect_near(out[0], {kP0, kP1, kP1, kP0});
  // mask_index [1]: only key 0 is visible.
  out = run_op(ms_node("Attention", {"x", "w", "", "m"}, {"y"}, attrs), identity_attention(I({1}, {1})));
  expect_near(out[0], {1, 0, 1, 0});
  // The same as a raw 2-D mask, and as end/start positions [2, 1] (key 1 only).
  out = run_op(ms_node("Attention", {"x", "w", "", "m"}, {"y"}, attrs), identity_attention(I({1, 0}, {1, 2})));
  expect_near(out[0], {1, 0, 1, 0});
  out = run_op(ms_node("Attention", {"x", "w", "", "m"}, {"y"}, attrs), identity_attention(I({2, 1}, {2})));
  expect_near(out[0], {0, 1, 0, 1});
  // A [1, 1] mask that does not cover the 2 keys is ORT's "dummy" mask: no mask at all.
  out = run_op(ms_node("Attention", {"x", "w", "", "m"}, {"y"}, attrs), identity_attention(I({0}, {1, 1})));
  expect_near(out[0], {kP0, kP1, kP1, kP0});
  attrs["unidirectional"] = attr_int(1);
  out = run_op(ms_node("Attention", {"x", "w"}, {"y", "present"}, attrs), identity_attention());
  expect_near(out[0], {1, 0, kP1, kP0});
  EXPECT_EQ(out[1].shape(), (Shape{2, 1, 1, 2, 2}));
  expect_near(out[1], {1, 0, 0, 1, 1, 0, 0, 1});
}

TEST(ContribAttention, BadInputsAreErrors) {
  auto attrs = std::map<std::string, Attribute>{{"num_heads", attr_int(1)}};
  auto node = ms_node("Attention", {"x", "w", "", "m"}, {"y"}, attrs);
  EXPECT_THROW(run_op(node, identity_attention(I({1, 1, 1, 1}, {1, 1, 2, 2}))), onyx::Error);  // 4-D mask
  EXPECT_THROW(run_op(node, identity_attention(I({1, 1, 1}, {1, 3}))), onyx::Error);           // mask length
  EXPECT_THROW(run_op(node, identity_attention(I({1, 1}, {2, 1}))), onyx::Error);              // batch 2 of 1
  auto bad_w = identity_attention();
  bad_w[1] = F({1, 0, 1, 0, 1}, {1, 5});
  EXPECT_THROW(run_op(ms_node("Attention", {"x", "w"}, {"y"}, attrs), bad_w), onyx::Error);
  EXPECT_THROW(run_op(ms_node("Attention", {"x", "w"}, {"y"}, {{"num_heads", attr_int(4)}}), identity_attention()),
               onyx::Error);  // hidden 2 over 4 heads
  EXPECT_THROW(run_op(ms_node("Attention", {"x", "w"}, {"y"}, {{"num_heads", attr_int(1)}, {"do_rotary", attr_int(1)}}),
                      identity_attention()),
               onyx::Error);
}

Tensor U8(std::vector<uint8_t> v, Shape s) { return Tensor::from_vector<uint8_t>(std::move(v), std::move(s)); }
Tensor S8(std::vector<int8_t> v, Shape s) { return Tensor::from_vector<int8_t>(std::move(v), std::move(s)); }

TEST(ContribQAttention, DequantizesIntoTheFloatAttention) {
  // Input (x - 128) * 0.5 = [1, 0], [0, 1]; weights (w - 10) * 1 = [I I I]: the identity attention above.
  std::vector<Tensor> in = {U8({130, 128, 128, 130}, {1, 2, 2}),
                            U8({11, 10, 11, 10, 11, 10, 10, 11, 10, 11, 10, 11}, {2, 6}),
                            F(std::vector<float>(6, 0.f), {6}),
                            F({0.5f}, {}),
                            F({1}, {}),
                            Tensor(),
                            U8({128}, {}),
                            U8({10}, {})};
  auto node = ms_node("QAttention", {"x", "w", "b", "xs", "ws", "", "xz", "wz"}, {"y"}, {{"num_heads", attr_int(1)}});
  expect_near(run_op(node, in)[0], {kP0, kP1, kP1, kP0});
  auto int8_input = in;
  int8_input[0] = S8({2, 0, 0, 2}, {1, 2, 2});
  int8_input[6] = S8({0}, {});
  EXPECT_THROW(run_op(node, int8_input), onyx::Error);  // ORT's CPU kernel has uint8 input only
  auto wrong_zero_point = in;
  wrong_zero_point[7] = S8({10}, {});
  EXPECT_THROW(run_op(node, wrong_zero_point), onyx::Error);  // zero point type differs from the weights'
  auto per_feature_input_scale = in;
  per_feature_input_scale[3] = F({0.5f, 0.5f}, {2});
  EXPECT_THROW(run_op(node, per_feature_input_scale), onyx::Error);
}

TEST(ContribQEmbedLayerNorm, DequantizesTheTables) {
  // The float embed case above, stored as (q - 5) for the tables, (q - 1) for gamma, q * 0.5 for beta.
  auto node = ms_node("QEmbedLayerNormalization",
                      {"ids", "", "w", "p", "", "g", "b", "m", "ws", "ps", "", "gs", "bs", "wz", "pz", "", "gz", "bz"},
                      {"y", "mask_index"});
  Tensor one = F({1}, {}), five = U8({5}, {});
  auto out = run_op(node, {I({1, 0}, {1, 2}), Tensor(), U8({5, 5, 6, 8}, {2, 2}), U8({5, 6, 7, 5}, {2, 2}), Tensor(),
                           U8({2, 2}, {2}), U8({0, 1}, {2}), I({1, 0}, {1, 2}), one, one, Tensor(), one, F({0.5f}, {}),
                           five, five, Tensor(), U8({1}, {}), U8({0}, {})});
  expect_near(out[0], {-1, 1.5f, 1, -0.5f});
  EXPECT_EQ(to_vector<int32_t>(out[1]), (std::vector<int32_t>{1}));
}

TEST(ContribMultiHeadAttention, SingleQuery) {
  auto out = run_op(ms_node("MultiHeadAttention", {"q", "k", "v"}, {"y"}, {{"num_heads", attr_int(1)}}),
                    {F({1, 0}, {1, 1, 2}), F({1, 0, 0, 1}, {1, 2, 2}), F({1, 2, 3, 4}, {1, 2, 2})});
  expect_near(out[0], {kP0 * 1 + kP1 * 3, kP0 * 2 + kP1 * 4});
}

// [B, L, N, D] views of a packed [B, L, N, parts, D] tensor, unpacked to [B, L, N * D].
Tensor unpack(const Tensor& packed, int64_t part) {
  const int64_t B = packed.dim(0), L = packed.dim(1), N = packed.dim(2), parts = packed.dim(3), D = packed.dim(4);
  Tensor out(DataType::Float, {B, L, N * D});
  for (int64_t r = 0; r < B * L * N; ++r)
    for (int64_t d = 0; d < D; ++d) out.data<float>()[r * D + d] = packed.data<float>()[(r * parts + part) * D + d];
  return out;
}

TEST(ContribMultiHeadAttention, PackedFormsMatchSeparateInputs) {
  auto attrs = std::map<std::string, Attribute>{{"num_heads", attr_int(3)}};
  Tensor qkv = pattern({2, 4, 3, 3, 5}, 1), bias = pattern({45}, 2), mask = I({4, 2}, {2});
  auto separate = run_op(ms_node("MultiHeadAttention", {"q", "k", "v", "b", "m"}, {"y"}, attrs),
                         {unpack(qkv, 0), unpack(qkv, 1), unpack(qkv, 2), bias, mask});
  auto packed = run_op(ms_node("MultiHeadAttention", {"q", "", "", "b", "m"}, {"y"}, attrs),
                       {qkv, Tensor(), Tensor(), bias, mask});
  expect_near(packed[0], to_vector<float>(separate[0]));

  Tensor q = pattern({2, 3, 15}, 3), kv = pattern({2, 6, 3, 2, 5}, 4);
  separate = run_op(ms_node("MultiHeadAttention", {"q", "k", "v"}, {"y"}, attrs), {q, unpack(kv, 0), unpack(kv, 1)});
  packed = run_op(ms_node("MultiHeadAttention", {"q", "k"}, {"y"}, attrs), {q, kv});
  expect_near(packed[0], to_vector<float>(separate[0]));
}

TEST(ContribMultiHeadAttention, BadInputsAreErrors) {
  auto attrs = std::map<std::string, Attribute>{{"num_heads", attr_int(2)}};
  Tensor q = pattern({1, 2, 4}, 1), k = pattern({1, 3, 4}, 2), v = pattern({1, 3, 4}, 3);
  EXPECT_THROW(run_op(ms_node("MultiHeadAttention", {"q"}, {"y"}, attrs), {q}), onyx::Error);  // no key
  EXPECT_THROW(run_op(ms_node("MultiHeadAttention", {"q", "k", "v"}, {"y"}, attrs), {q, pattern({1, 3, 6}, 2), v}),
               onyx::Error);  // key hidden size
  EXPECT_THROW(run_op(ms_node("MultiHeadAttention", {"q", "k", "v", "", "m"}, {"y"}, attrs), {q, k, v, Tensor(), I({1, 1}, {1, 2})}),
               onyx::Error);  // mask covers 2 of 3 keys
  EXPECT_THROW(run_op(ms_node("MultiHeadAttention", {"q", "k", "v", "", "", "", "pk"}, {"y"}, attrs),
                      {q, k, v, Tensor(), Tensor(), Tensor(), pattern({1, 2, 1, 2}, 4)}),
               onyx::Error);  // past_key without past_value
  EXPECT_THROW(run_op(ms_node("MultiHeadAttention", {"q", "k", "v"}, {"y"}, attrs), {q, pattern({1, 2, 3, 2}, 2), v}),
               onyx::Error);  // 4-D key with 3-D value
}

}  // namespace
}  // namespace onyx::test
