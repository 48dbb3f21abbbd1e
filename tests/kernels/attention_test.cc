// ai.onnx Attention (opsets 23-25), RotaryEmbedding and TensorScatter, checked
// against values computed by hand from the spec's formulas.
#include <cmath>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Node attention(std::vector<std::string> inputs, std::vector<std::string> outputs,
               std::map<std::string, Attribute> attrs = {}) {
  return make_node("Attention", std::move(inputs), std::move(outputs), std::move(attrs));
}

// Q = [1, 0] against keys [1, 0], [0, 1] with the default scale 1/sqrt(2):
// softmax([0.7071, 0]) = [0.6698, 0.3302], so Y = 0.6698 * [1, 2] + 0.3302 * [3, 4].
const std::vector<float> kY1 = {1.6604769f, 2.6604769f};

TEST(Attention, SingleQueryDefaultScale) {
  auto q = Tensor::from_vector<float>({1, 0}, {1, 1, 1, 2});
  auto k = Tensor::from_vector<float>({1, 0, 0, 1}, {1, 1, 2, 2});
  auto v = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  auto out = run_op(attention({"q", "k", "v"}, {"y"}), {q, k, v}, 23);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 1, 2}));
  expect_near(out[0], kY1);
}

TEST(Attention, CausalMaskAndQkOutput) {
  auto q = Tensor::from_vector<float>({1, 0, 1, 0}, {1, 1, 2, 2});
  auto k = Tensor::from_vector<float>({1, 0, 0, 1}, {1, 1, 2, 2});
  auto v = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  auto out = run_op(attention({"q", "k", "v"}, {"y", "", "", "qk"}, {{"is_causal", attr_int(1)}}), {q, k, v}, 24);
  // Query 0 sees key 0 only; query 1 sees both.
  expect_near(out[0], {1, 2, kY1[0], kY1[1]});
  // Mode 0: the raw scaled Q K^T, before any mask.
  expect_near(out[3], {0.70710678f, 0, 0.70710678f, 0});
  // Mode 3: post-softmax probabilities.
  out = run_op(attention({"q", "k", "v"}, {"y", "", "", "qk"}, {{"is_causal", attr_int(1)}, {"qk_matmul_output_mode", attr_int(3)}}),
               {q, k, v}, 24);
  expect_near(out[3], {1, 0, 0.66976f, 0.33024f}, 1e-4f);
}

TEST(Attention, FullyMaskedRowIsZeroAndShortMaskPads) {
  auto q = Tensor::from_vector<float>({1, 0, 1, 0}, {1, 1, 2, 2});
  auto k = Tensor::from_vector<float>({1, 0, 0, 1}, {1, 1, 2, 2});
  auto v = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  // Row 0: nothing allowed -> zeros (not NaN); row 1: everything allowed.
  Tensor mask(DataType::Bool, {2, 1});
  mask.data<bool>()[0] = false;
  mask.data<bool>()[1] = true;
  auto out = run_op(attention({"q", "k", "v", "m"}, {"y"}), {q, k, v, mask}, 23);
  expect_near(out[0], {0, 0, kY1[0], kY1[1]});
  // A mask shorter than the keys is padded with -inf: key 2 (value 100) is left out.
  auto k3 = Tensor::from_vector<float>({1, 0, 0, 1, 5, 5}, {1, 1, 3, 2});
  auto v3 = Tensor::from_vector<float>({1, 2, 3, 4, 100, 100}, {1, 1, 3, 2});
  Tensor short_mask(DataType::Bool, {2});
  short_mask.data<bool>()[0] = short_mask.data<bool>()[1] = true;
  out = run_op(attention({"q", "k", "v", "m"}, {"y"}), {q, k3, v3, short_mask}, 23);
  expect_near(out[0], {kY1[0], kY1[1], kY1[0], kY1[1]});
  // A float mask is added to the scores.
  auto fmask = Tensor::from_vector<float>({0, -1e9f}, {2});
  out = run_op(attention({"q", "k", "v", "m"}, {"y"}), {q, k, v, fmask}, 23);
  expect_near(out[0], {1, 2, 1, 2});
}

TEST(Attention, GroupedQueryHeads3D) {
  // Two query heads share one KV head: head 0 asks [1, 0], head 1 asks [0, 1].
  auto q = Tensor::from_vector<float>({1, 0, 0, 1}, {1, 1, 4});
  auto k = Tensor::from_vector<float>({1, 0, 0, 1}, {1, 2, 2});
  auto v = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 2, 2});
  auto out = run_op(attention({"q", "k", "v"}, {"y"}, {{"q_num_heads", attr_int(2)}, {"kv_num_heads", attr_int(1)}}),
                    {q, k, v}, 23);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 4}));
  expect_near(out[0], {kY1[0], kY1[1], 2.3395231f, 3.3395231f});
  EXPECT_THROW(run_op(attention({"q", "k", "v"}, {"y"}), {q, k, v}, 23), Error);  // 3-D needs the head counts
}

TEST(Attention, PastKeyValueAndSoftcap) {
  auto q = Tensor::from_vector<float>({1, 0}, {1, 1, 1, 2});
  auto k = Tensor::from_vector<float>({0, 1}, {1, 1, 1, 2});
  auto v = Tensor::from_vector<float>({3, 4}, {1, 1, 1, 2});
  auto pk = Tensor::from_vector<float>({1, 0}, {1, 1, 1, 2});
  auto pv = Tensor::from_vector<float>({1, 2}, {1, 1, 1, 2});
  auto out = run_op(attention({"q", "k", "v", "", "pk", "pv"}, {"y", "present_k", "present_v"}), {q, k, v, Tensor(), pk, pv}, 23);
  expect_near(out[0], kY1);
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 2, 2}));
  expect_near(out[1], {1, 0, 0, 1});
  expect_near(out[2], {1, 2, 3, 4});
  // softcap 0.5: scores 0.5 * tanh([0.7071, 0] / 0.5).
  out = run_op(attention({"q", "k", "v", "", "pk", "pv"}, {"y"}, {{"softcap", attr_float(0.5f)}}), {q, k, v, Tensor(), pk, pv}, 23);
  expect_near(out[0], {1.78148474f, 2.78148474f}, 1e-4f);
}

TEST(Attention, NonpadSeqlenAndSlidingWindow) {
  auto q = Tensor::from_vector<float>({1, 0}, {1, 1, 1, 2});
  auto k = Tensor::from_vector<float>({1, 0, 0, 1, 5, 5}, {1, 1, 3, 2});
  auto v = Tensor::from_vector<float>({1, 2, 3, 4, 100, 100}, {1, 1, 3, 2});
  // Only the first two keys are valid: key 2 is padding.
  auto out = run_op(attention({"q", "k", "v", "", "", "", "n"}, {"y"}), {q, k, v, Tensor(), Tensor(), Tensor(),
                                                                         Tensor::from_vector<int64_t>({2}, {1})}, 24);
  expect_near(out[0], kY1);
  // Causal with nonpad 2 and one query: offset 1, so keys 0 and 1 are visible;
  // a left window of 0 then keeps key 1 only.
  out = run_op(attention({"q", "k", "v", "", "", "", "n"}, {"y"}, {{"is_causal", attr_int(1)}, {"left_window_size", attr_int(0)}}),
               {q, k, v, Tensor(), Tensor(), Tensor(), Tensor::from_vector<int64_t>({2}, {1})}, 25);
  expect_near(out[0], {3, 4});
}

Tensor as_double(const Tensor& t) {
  Tensor d(DataType::Double, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}

// Float inputs take the GEMM core, double ones the per-element reference:
// grouped heads, a KV cache, causal masking and a per-head float mask, in 4-D
// and 3-D layouts, must agree.
TEST(Attention, FloatCoreMatchesDoubleReference) {
  const int64_t B = 2, Hq = 4, Hkv = 2, Sq = 5, P = 3, D = 8, Dv = 6;
  for (bool three_d : {false, true}) {
    for (bool cached : {false, true}) {  // without a cache, K and V are read in place
      const int64_t T = cached ? P + Sq : Sq;
      Shape q_shape = three_d ? Shape{B, Sq, Hq * D} : Shape{B, Hq, Sq, D};
      Shape k_shape = three_d ? Shape{B, Sq, Hkv * D} : Shape{B, Hkv, Sq, D};
      Shape v_shape = three_d ? Shape{B, Sq, Hkv * Dv} : Shape{B, Hkv, Sq, Dv};
      std::vector<Tensor> in;
      in.push_back(pattern(q_shape, 1));
      in.push_back(pattern(k_shape, 2));
      in.push_back(pattern(v_shape, 3));
      in.push_back(pattern({1, Hq, Sq, T}, 6));
      std::vector<std::string> names = {"q", "k", "v", "m"}, outs = {"y"};
      if (cached) {
        in.push_back(pattern({B, Hkv, P, D}, 4));
        in.push_back(pattern({B, Hkv, P, Dv}, 5));
        names.insert(names.end(), {"pk", "pv"});
        outs.push_back("present_k");
      }
      std::map<std::string, Attribute> attrs = {{"is_causal", attr_int(1)}};
      if (three_d) attrs.insert({{"q_num_heads", attr_int(Hq)}, {"kv_num_heads", attr_int(Hkv)}});
      Node node = attention(names, outs, attrs);
      std::vector<Tensor> din;
      for (auto& t : in) din.push_back(as_double(t));
      auto got = run_op(node, in, 23), want = run_op(node, din, 23);
      ASSERT_EQ(got[0].shape(), want[0].shape());
      if (cached) {
        EXPECT_EQ(got[1].shape(), (Shape{B, Hkv, T, D}));
      }
      for (int64_t i = 0; i < got[0].numel(); ++i)
        ASSERT_NEAR(got[0].data<float>()[i], want[0].data<double>()[i], 1e-5)
            << "three_d " << three_d << " cached " << cached << " at " << i;
    }
  }
}

TEST(RotaryEmbedding, HalvesAndInterleaved) {
  auto x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 1, 4});
  auto cos = Tensor::from_vector<float>({0, 1}, {1, 2});
  auto sin = Tensor::from_vector<float>({1, 0}, {1, 2});
  auto pos = Tensor::from_vector<int64_t>({0}, {1, 1});
  // Halves: x1 = [1, 2], x2 = [3, 4]; real = cos*x1 - sin*x2, imag = sin*x1 + cos*x2.
  auto out = run_op(make_node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"}), {x, cos, sin, pos}, 23);
  expect_near(out[0], {-3, 2, 1, 4});
  // Interleaved: x1 = [1, 3], x2 = [2, 4].
  out = run_op(make_node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"}, {{"interleaved", attr_int(1)}}), {x, cos, sin, pos}, 23);
  expect_near(out[0], {-2, 1, 3, 4});
  // 3-D input with num_heads and caches indexed by [batch, seq] (no position ids).
  auto x3 = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 4});
  out = run_op(make_node("RotaryEmbedding", {"x", "c", "s"}, {"y"}, {{"num_heads", attr_int(1)}}),
               {x3, cos.reshaped({1, 1, 2}), sin.reshaped({1, 1, 2})}, 23);
  expect_near(out[0], {-3, 2, 1, 4});
  EXPECT_THROW(run_op(make_node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"}),
                      {x, cos, sin, Tensor::from_vector<int64_t>({5}, {1, 1})}, 23),
               Error);
}

TEST(TensorScatter, LinearAndCircular) {
  auto past = Tensor::from_vector<float>({0, 0, 0, 0}, {1, 4, 1});
  auto upd = Tensor::from_vector<float>({5, 6}, {1, 2, 1});
  auto idx = Tensor::from_vector<int64_t>({3}, {1});
  auto out = run_op(make_node("TensorScatter", {"p", "u", "i"}, {"y"}, {{"mode", attr_string("circular")}}), {past, upd, idx}, 24);
  expect_near(out[0], {6, 0, 0, 5});
  out = run_op(make_node("TensorScatter", {"p", "u", "i"}, {"y"}), {past, upd, Tensor::from_vector<int64_t>({1}, {1})}, 24);
  expect_near(out[0], {0, 5, 6, 0});
  EXPECT_THROW(run_op(make_node("TensorScatter", {"p", "u", "i"}, {"y"}), {past, upd, idx}, 24), Error);
}

TEST(LinearAttention, LinearGatedAndDeltaRules) {
  // One head, d_k = d_v = 1, scale 1: the state is a scalar.
  auto q = Tensor::from_vector<float>({1, 1}, {1, 2, 1});
  auto k = Tensor::from_vector<float>({1, 2}, {1, 2, 1});
  auto v = Tensor::from_vector<float>({3, 4}, {1, 2, 1});
  std::map<std::string, Attribute> attrs = {{"q_num_heads", attr_int(1)}, {"kv_num_heads", attr_int(1)},
                                            {"scale", attr_float(1.f)}, {"update_rule", attr_string("linear")}};
  // linear: S1 = 1 * 3 = 3, S2 = 3 + 2 * 4 = 11.
  auto out = run_op(make_node("LinearAttention", {"q", "k", "v"}, {"y", "s"}, attrs), {q, k, v}, 27);
  expect_near(out[0], {3, 11});
  expect_near(out[1], {11});
  // gated, per-head decay log(0.5) at step 2: S2 = 0.5 * 3 + 8.
  attrs["update_rule"] = attr_string("gated");
  auto g = Tensor::from_vector<float>({0, std::log(0.5f)}, {1, 2, 1});
  out = run_op(make_node("LinearAttention", {"q", "k", "v", "", "g"}, {"y"}, attrs), {q, k, v, Tensor(), g}, 27);
  expect_near(out[0], {3, 9.5f});
  // delta, beta [1, 0.5]: S1 = 3, S2 = 3 + 0.5 * 2 * (4 - 3 * 2) = 1.
  attrs["update_rule"] = attr_string("delta");
  auto beta = Tensor::from_vector<float>({1, 0.5f}, {1, 2, 1});
  out = run_op(make_node("LinearAttention", {"q", "k", "v", "", "", "b"}, {"y"}, attrs), {q, k, v, Tensor(), Tensor(), beta}, 27);
  expect_near(out[0], {3, 1});
  EXPECT_THROW(run_op(make_node("LinearAttention", {"q", "k", "v"}, {"y"}, attrs), {q, k, v}, 27), Error);  // delta needs beta
}

TEST(CausalConvWithState, PastStateBiasAndSilu) {
  auto x = Tensor::from_vector<float>({1, 2, 3}, {1, 1, 3});
  auto w = Tensor::from_vector<float>({1, 2}, {1, 1, 2});
  auto past = Tensor::from_vector<float>({10}, {1, 1, 1});
  // padded [10, 1, 2, 3]: y_t = 1 * p_t + 2 * p_{t+1} + bias 1.
  auto out = run_op(make_node("CausalConvWithState", {"x", "w", "b", "p"}, {"y", "s"}),
                    {x, w, Tensor::from_vector<float>({1}, {1}), past}, 27);
  expect_near(out[0], {13, 6, 9});
  expect_near(out[1], {3});
  out = run_op(make_node("CausalConvWithState", {"x", "w"}, {"y"}, {{"activation", attr_string("silu")}}), {x, w}, 27);
  // no past: [0, 1, 2, 3] -> 2, 5, 8, then x * sigmoid(x).
  expect_near(out[0], {2 / (1 + std::exp(-2.f)), 5 / (1 + std::exp(-5.f)), 8 / (1 + std::exp(-8.f))});
}

}  // namespace
}  // namespace onyx::test
