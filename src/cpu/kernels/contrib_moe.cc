// com.microsoft MoE (mixture of experts) as ONNX Runtime's CPU provider runs
// it: each token goes to the k experts its router logits rank highest (by
// softmax probability), each expert is two fully connected layers with an
// activation between, and the token's output is the probability-weighted sum
// of its experts' outputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/float_values.h"
#include "cpu/gemm.h"

namespace onyx {
namespace {

const char* const kMsDomain = "com.microsoft";

enum class MoeActivation { Relu, Gelu, Silu, Identity, SwiGlu };

struct MoeAttrs {
  int64_t k = 1;
  MoeActivation activation = MoeActivation::Relu;
  bool normalize = false;
  float alpha = 1.f, beta = 0.f, limit = std::numeric_limits<float>::infinity();  // SwiGLU's
};

// The activations as ORT's CPU MoE writes them (GELU in its tanh form).
float moe_activate(float x, MoeActivation a) {
  switch (a) {
    case MoeActivation::Relu:
      return std::max(0.f, x);
    case MoeActivation::Gelu:
      return 0.5f * x * (1.f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
    case MoeActivation::Silu:
      return x * (1.f / (1.f + std::exp(-x)));
    default:
      return x;
  }
}

// Interleaved SwiGLU (the only layout ORT's CPU kernel takes): pairs (gate,
// linear), the gate clipped from above and the linear part on both sides at
// `limit`, then gate * sigmoid(alpha * gate) * (linear + beta).
void moe_swiglu(const float* in, float* out, int64_t n, const MoeAttrs& a) {
  for (int64_t i = 0; i < n; ++i) {
    const float gate = std::min(in[2 * i], a.limit);
    const float linear = std::clamp(in[2 * i + 1], -a.limit, a.limit);
    const float z = a.alpha * gate;
    const float sig = z > 0 ? 1.f / (1.f + std::exp(-z)) : std::exp(z) / (1.f + std::exp(z));
    out[i] = gate * sig * (linear + a.beta);
  }
}

// float16 models: ORT keeps each layer's result in half precision (after the
// GEMM, after the bias, after the activation); rounding at the same points
// keeps Onyx near its numbers.
void round_to_half(std::vector<float>& v, size_t n, bool half) {
  if (!half) return;
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(Float16(v[i]));
}

struct MoeShapes {
  int64_t rows, hidden, experts, inter, fc1_out;
};

MoeShapes check_moe_inputs(KernelContext& ctx, const MoeAttrs& a) {
  const Tensor& X = ctx.input(0);
  const Tensor& router = ctx.input(1);
  const Tensor& W1 = ctx.input(2);
  const Tensor& W2 = ctx.input(4);
  auto fail_if = [](bool bad, const std::string& what) {
    if (bad) kernel_fail("MoE: " + what);
  };
  fail_if(ctx.has_input(6) || ctx.has_input(7), "fc3 (a third expert layer) is not implemented on the CPU, as in ORT");
  fail_if(X.dtype() != DataType::Float && X.dtype() != DataType::Float16,
          "input must be float or float16, got " + dtype_name(X.dtype()));
  for (size_t i : {1, 2, 3, 4, 5})
    if (ctx.has_input(i))
      fail_if(ctx.input(i).dtype() != X.dtype(), "input " + std::to_string(i) + " must have the input's type " +
                                                     dtype_name(X.dtype()) + ", got " +
                                                     dtype_name(ctx.input(i).dtype()));
  fail_if(X.rank() != 2 && X.rank() != 3, "input must be 2-D or 3-D, got " + shape_to_string(X.shape()));
  fail_if(W1.rank() != 3 || W2.rank() != 3, "fc1_experts_weights and fc2_experts_weights must be 3-D, got " +
                                                shape_to_string(W1.shape()) + " and " + shape_to_string(W2.shape()));
  MoeShapes s;
  s.hidden = X.dim(-1);
  s.rows = s.hidden == 0 ? 0 : X.numel() / s.hidden;
  fail_if(router.rank() != 2 || router.dim(0) != s.rows,
          "router_probs must be [" + std::to_string(s.rows) + ", experts], got " + shape_to_string(router.shape()));
  s.experts = router.dim(1);
  fail_if(
      s.hidden <= 0 || (W2.dim(1) * W2.dim(2)) % s.hidden != 0,
      "fc2_experts_weights " + shape_to_string(W2.shape()) + " does not fit hidden size " + std::to_string(s.hidden));
  s.inter = W2.dim(1) * W2.dim(2) / s.hidden;
  s.fc1_out = a.activation == MoeActivation::SwiGlu ? 2 * s.inter : s.inter;
  // Either [E, out, in] per layer, or the older [E, in, out]; ORT's CPU GEMMs
  // read the buffer as [out, in] either way.
  auto fits = [&](const Tensor& w, int64_t out, int64_t in) {
    return w.dim(0) == s.experts && ((w.dim(1) == out && w.dim(2) == in) || (w.dim(1) == in && w.dim(2) == out));
  };
  fail_if(!fits(W1, s.fc1_out, s.hidden), "fc1_experts_weights must be [" + std::to_string(s.experts) + ", " +
                                              std::to_string(s.fc1_out) + ", " + std::to_string(s.hidden) + "], got " +
                                              shape_to_string(W1.shape()));
  fail_if(!fits(W2, s.hidden, s.inter), "fc2_experts_weights must be [" + std::to_string(s.experts) + ", " +
                                            std::to_string(s.hidden) + ", " + std::to_string(s.inter) + "], got " +
                                            shape_to_string(W2.shape()));
  if (ctx.has_input(3))
    fail_if(ctx.input(3).shape() != Shape{s.experts, s.fc1_out},
            "fc1_experts_bias must be [" + std::to_string(s.experts) + ", " + std::to_string(s.fc1_out) + "], got " +
                shape_to_string(ctx.input(3).shape()));
  if (ctx.has_input(5))
    fail_if(ctx.input(5).shape() != Shape{s.experts, s.hidden},
            "fc2_experts_bias must be [" + std::to_string(s.experts) + ", " + std::to_string(s.hidden) + "], got " +
                shape_to_string(ctx.input(5).shape()));
  fail_if(a.k > s.experts, "k = " + std::to_string(a.k) + " exceeds the " + std::to_string(s.experts) + " experts");
  return s;
}

struct Route {
  int64_t token;
  float weight;
};

// Each token's k experts and weights, gathered per expert in token order.
// The softmax is ORT's (max-subtracted, summed in order); ties in probability
// go to the higher expert index, as ORT's sort of (probability, index) pairs
// in descending order does.
std::vector<std::vector<Route>> route_tokens(const std::vector<float>& logits, const MoeShapes& s, const MoeAttrs& a) {
  std::vector<std::vector<Route>> routes(static_cast<size_t>(s.experts));
  std::vector<float> p(static_cast<size_t>(s.experts));
  std::vector<std::pair<float, int64_t>> ranked(p.size());
  for (int64_t t = 0; t < s.rows; ++t) {
    const float* l = logits.data() + t * s.experts;
    const float top = *std::max_element(l, l + s.experts);
    float sum = 0.f;
    for (int64_t e = 0; e < s.experts; ++e) sum += p[e] = std::exp(l[e] - top);
    for (int64_t e = 0; e < s.experts; ++e) ranked[e] = {p[e] / sum, e};
    std::partial_sort(ranked.begin(), ranked.begin() + a.k, ranked.end(), std::greater<>());
    float chosen = 0.f;
    for (int64_t j = 0; j < a.k; ++j) chosen += ranked[j].first;
    for (int64_t j = 0; j < a.k; ++j) {
      const float w = a.normalize ? ranked[j].first / chosen : ranked[j].first;
      if (w > 0.f) routes[ranked[j].second].push_back({t, w});  // ORT skips zero weights
    }
  }
  return routes;
}

void run_moe(KernelContext& ctx, const MoeAttrs& a) {
  const MoeShapes s = check_moe_inputs(ctx, a);
  const Tensor& X = ctx.input(0);
  const bool half = X.dtype() == DataType::Float16;
  const std::vector<float> x = load_floats<float>(X), w1 = load_floats<float>(ctx.input(2)),
                           w2 = load_floats<float>(ctx.input(4));
  const std::vector<float> b1 = ctx.has_input(3) ? load_floats<float>(ctx.input(3)) : std::vector<float>();
  const std::vector<float> b2 = ctx.has_input(5) ? load_floats<float>(ctx.input(5)) : std::vector<float>();
  const auto routes = route_tokens(load_floats<float>(ctx.input(1)), s, a);
  std::vector<float> y(static_cast<size_t>(s.rows * s.hidden), 0.f);
  std::vector<float> in, h1, h2, act;
  for (int64_t e = 0; e < s.experts; ++e) {
    const auto& r = routes[e];
    const int64_t n = static_cast<int64_t>(r.size());
    if (n == 0) continue;
    in.resize(static_cast<size_t>(n * s.hidden));
    for (int64_t i = 0; i < n; ++i) std::copy_n(x.data() + r[i].token * s.hidden, s.hidden, in.data() + i * s.hidden);
    h1.resize(static_cast<size_t>(n * s.fc1_out));
    gemm_f32(false, true, n, s.fc1_out, s.hidden, 1.f, in.data(), s.hidden, w1.data() + e * s.fc1_out * s.hidden,
             s.hidden, 0.f, h1.data(), s.fc1_out, ctx.thread_pool());
    round_to_half(h1, h1.size(), half);
    if (!b1.empty()) {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < s.fc1_out; ++j) h1[i * s.fc1_out + j] += b1[e * s.fc1_out + j];
      round_to_half(h1, h1.size(), half);
    }
    act.resize(static_cast<size_t>(n * s.inter));
    if (a.activation == MoeActivation::SwiGlu) {
      for (int64_t i = 0; i < n; ++i) moe_swiglu(h1.data() + i * s.fc1_out, act.data() + i * s.inter, s.inter, a);
    } else {
      for (size_t i = 0; i < act.size(); ++i) act[i] = moe_activate(h1[i], a.activation);
    }
    round_to_half(act, act.size(), half);
    h2.resize(static_cast<size_t>(n * s.hidden));
    gemm_f32(false, true, n, s.hidden, s.inter, 1.f, act.data(), s.inter, w2.data() + e * s.hidden * s.inter, s.inter,
             0.f, h2.data(), s.hidden, ctx.thread_pool());
    round_to_half(h2, h2.size(), half);
    if (!b2.empty()) {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < s.hidden; ++j) h2[i * s.hidden + j] += b2[e * s.hidden + j];
      round_to_half(h2, h2.size(), half);
    }
    for (int64_t i = 0; i < n; ++i) {  // experts add up in index order, as in ORT's single-threaded pass
      float* out = y.data() + r[i].token * s.hidden;
      for (int64_t j = 0; j < s.hidden; ++j) out[j] += r[i].weight * h2[i * s.hidden + j];
    }
  }
  Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
  store_floats(y.data(), Y);
}

MoeAttrs read_moe_attrs(const KernelInitContext& ic) {
  MoeAttrs a;
  a.k = ic.get_int("k", 1);
  const std::string act = ic.get_string("activation_type", "relu");
  if (act == "relu")
    a.activation = MoeActivation::Relu;
  else if (act == "gelu")
    a.activation = MoeActivation::Gelu;
  else if (act == "silu")
    a.activation = MoeActivation::Silu;
  else if (act == "identity")
    a.activation = MoeActivation::Identity;
  else if (act == "swiglu")
    a.activation = MoeActivation::SwiGlu;
  else
    kernel_fail("MoE: unknown activation_type \"" + act + "\"");
  if (a.k <= 0) kernel_fail("MoE: k must be positive, got " + std::to_string(a.k));
  a.normalize = ic.get_int("normalize_routing_weights", 0) == 1;
  // use_sparse_mixer: ORT's CPU kernel requires k = 2 and then routes as usual.
  if (ic.get_int("use_sparse_mixer", 0) == 1 && a.k != 2) kernel_fail("MoE: use_sparse_mixer needs k = 2");
  a.alpha = ic.get_float("activation_alpha", 1.f);
  a.beta = ic.get_float("activation_beta", 0.f);
  a.limit = ic.get_float("swiglu_limit", std::numeric_limits<float>::infinity());
  if (a.activation == MoeActivation::SwiGlu && ic.get_int("swiglu_fusion", 0) != 1)
    kernel_fail("MoE: the CPU kernel takes SwiGLU only interleaved (swiglu_fusion = 1), as ORT's");
  if (ic.get_int("swiglu_limit_after_activation", 0) != 0)
    kernel_fail("MoE: swiglu_limit_after_activation is CUDA-only in ORT");
  return a;
}

}  // namespace

void register_contrib_moe(KernelRegistry& r) {
  r.add("MoE", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          const MoeAttrs a = read_moe_attrs(ic);
          return [a](KernelContext& ctx) { run_moe(ctx, a); };
        }),
        kMsDomain);
}

}  // namespace onyx
