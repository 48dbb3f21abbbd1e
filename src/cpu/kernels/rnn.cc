// Recurrent layers: RNN, GRU and LSTM (forward / reverse / bidirectional,
// layout 0 and 1, activation lists with alpha/beta, clip, sequence_lens,
// initial states, peepholes, input_forget, linear_before_reset), and
// com.microsoft's DynamicQuantizeLSTM (an LSTM whose GEMMs run in int8).
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>
#include <type_traits>

#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"
#include "cpu/gemm_vmath.h"
#include "cpu/int8_gemm.h"
#include "cpu/quantize_8bit.h"
#include "cpu/recurrent_gates.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

enum class Cell { RNN, GRU, LSTM };

enum class ActKind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu,
                     Softsign, Softplus };

struct Act {
  ActKind kind = ActKind::Tanh;
  float alpha = 0, beta = 0;
  template <class C>
  C operator()(C x) const {
    switch (kind) {
      case ActKind::Relu: return x > C(0) ? x : C(0);
      case ActKind::Tanh: return std::tanh(x);
      case ActKind::Sigmoid: return C(1) / (C(1) + std::exp(-x));
      case ActKind::Affine: return C(alpha) * x + C(beta);
      case ActKind::LeakyRelu: return x >= C(0) ? x : C(alpha) * x;
      case ActKind::ThresholdedRelu: return x > C(alpha) ? x : C(0);
      case ActKind::ScaledTanh: return C(alpha) * std::tanh(C(beta) * x);
      case ActKind::HardSigmoid: return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
      case ActKind::Elu: return x >= C(0) ? x : C(alpha) * (std::exp(x) - C(1));
      case ActKind::Softsign: return x / (C(1) + std::abs(x));
      case ActKind::Softplus: return std::log1p(std::exp(x));
    }
    return x;
  }
  // y[i] = act(x[i]); float sigmoid and tanh run the vectorized routines.
  template <class C>
  void apply(const C* x, C* y, int64_t n) const {
    if constexpr (std::is_same_v<C, float>) {
      if (kind == ActKind::Sigmoid) return vm::sigmoid(x, y, n);
      if (kind == ActKind::Tanh) return vm::tanh(x, y, n);
    }
    for (int64_t i = 0; i < n; ++i) y[i] = (*this)(x[i]);
  }
};

std::vector<Act> parse_activations(const std::vector<std::string>& names, const std::vector<float>& alphas,
                                   const std::vector<float>& betas) {
  std::vector<Act> out;
  size_t ai = 0, bi = 0;
  for (const auto& n : names) {
    std::string l = n;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    Act a;
    bool needs_alpha = false, needs_beta = false;
    if (l == "relu") a.kind = ActKind::Relu;
    else if (l == "tanh") a.kind = ActKind::Tanh;
    else if (l == "sigmoid") a.kind = ActKind::Sigmoid;
    else if (l == "affine") { a.kind = ActKind::Affine; a.alpha = 1; a.beta = 0; needs_alpha = needs_beta = true; }
    else if (l == "leakyrelu") { a.kind = ActKind::LeakyRelu; a.alpha = 0.01f; needs_alpha = true; }
    else if (l == "thresholdedrelu") { a.kind = ActKind::ThresholdedRelu; a.alpha = 1; needs_alpha = true; }
    else if (l == "scaledtanh") { a.kind = ActKind::ScaledTanh; a.alpha = 1; a.beta = 1; needs_alpha = needs_beta = true; }
    else if (l == "hardsigmoid") { a.kind = ActKind::HardSigmoid; a.alpha = 0.2f; a.beta = 0.5f; needs_alpha = needs_beta = true; }
    else if (l == "elu") { a.kind = ActKind::Elu; a.alpha = 1; needs_alpha = true; }
    else if (l == "softsign") a.kind = ActKind::Softsign;
    else if (l == "softplus") a.kind = ActKind::Softplus;
    else kernel_fail("unsupported recurrent activation '" + n + "'");
    if (needs_alpha && ai < alphas.size()) a.alpha = alphas[ai++];
    if (needs_beta && bi < betas.size()) a.beta = betas[bi++];
    out.push_back(a);
  }
  return out;
}

struct RnnConfig {
  Cell cell = Cell::RNN;
  int64_t hidden = 0;
  int num_dir = 1;
  bool reverse_only = false;
  int layout = 0;
  float clip = 0;  // 0: none
  bool linear_before_reset = false;
  bool input_forget = false;
  std::vector<Act> acts;  // per direction: acts_per_dir entries
  int acts_per_dir = 1;
  const char* name = "RNN";
};

int num_gates(Cell c) { return c == Cell::RNN ? 1 : c == Cell::GRU ? 3 : 4; }

// out[m, n] = sum_k a[m, k] * w[n, k]   (w row-major [N, K])
template <class C>
void matmul_bt(const C* a, const C* w, C* out, int64_t M, int64_t N, int64_t K, bool accumulate) {
  if constexpr (std::is_same_v<C, float>) {  // the blocked GEMM (the dot-product loop below ran scalar)
    gemm_f32(false, true, M, N, K, 1.0f, a, K, w, K, accumulate ? 1.0f : 0.0f, out, N);
    return;
  }
  for (int64_t m = 0; m < M; ++m) {
    const C* ar = a + m * K;
    C* orow = out + m * N;
    for (int64_t n = 0; n < N; ++n) {
      const C* wr = w + n * K;
      C s = 0;
      for (int64_t k = 0; k < K; ++k) s += ar[k] * wr[k];
      orow[n] = accumulate ? orow[n] + s : s;
    }
  }
}

template <class T>
using CalcT = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T, class C = CalcT<T>>
std::vector<C> to_calc(const Tensor& t) {
  const int64_t n = t.numel();
  std::vector<C> v(static_cast<size_t>(n));
  const T* p = t.data<T>();
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<C>(p[i]);
  return v;
}

// Constant float W and R packed at load, per direction: W^T for the input
// projection, R's rows for the recurrent GEMM (a GRU without
// linear_before_reset: its update/reset rows and its hidden rows apart).
struct RnnPacks {
  std::vector<PackedB> w, r_first, r_hidden;
};

// The rows of R the first recurrent GEMM of a step takes.
int64_t first_recurrent_rows(const RnnConfig& cfg, int64_t H) {
  const int64_t GH = num_gates(cfg.cell) * H;
  return cfg.cell == Cell::GRU && !cfg.linear_before_reset ? 2 * H : GH;
}

std::shared_ptr<const RnnPacks> pack_rnn_weights(const RnnConfig& cfg, const Tensor* W, const Tensor* R) {
  if (!W || !R || W->dtype() != DataType::Float || R->dtype() != DataType::Float || W->rank() != 3 || R->rank() != 3)
    return nullptr;
  const int64_t D = cfg.num_dir, H = R->dim(2), GH = num_gates(cfg.cell) * H, in = W->dim(2);
  if (W->shape() != (Shape{D, GH, in}) || R->shape() != (Shape{D, GH, H}) || (cfg.hidden > 0 && cfg.hidden != H))
    return nullptr;  // the run reports the mismatch
  auto packs = std::make_shared<RnnPacks>();
  const int64_t first = first_recurrent_rows(cfg, H);
  for (int64_t d = 0; d < D; ++d) {
    const float* rd = R->data<float>() + d * GH * H;
    packs->w.push_back(gemm_pack_b(true, in, GH, W->data<float>() + d * GH * in, in));
    packs->r_first.push_back(gemm_pack_b(true, H, first, rd, H));
    if (first != GH) packs->r_hidden.push_back(gemm_pack_b(true, H, H, rd + 2 * H * H, H));
  }
  return packs;
}

// DynamicQuantizeLSTM's 8-bit W [D, in, 4H] and R [D, H, 4H], per direction:
// packed for the integer GEMM, with their scales and zero points (one, or one
// per gate column). Inputs and hidden states are quantized to uint8 per GEMM,
// as ONNX Runtime does, so the results match it (not a float LSTM).
struct QuantizedLstmWeights {
  struct Matrix {
    PackedInt8B packed;
    std::vector<float> scale;
    std::vector<int32_t> zero;
  };
  std::vector<Matrix> w, r;
};

// Direction d of the 8-bit `what` ([D, K, N]) with its scale and zero point ([D] or [D, N]).
QuantizedLstmWeights::Matrix quantized_matrix(const Tensor& m, const Tensor& scale, const Tensor& zero, int64_t d,
                                              const std::string& what) {
  const int64_t D = m.dim(0), K = m.dim(1), N = m.dim(2);
  auto per_column = [&](const Tensor& t, const std::string& name) {
    ONYX_KERNEL_CHECK(t.shape() == (Shape{D}) || t.shape() == (Shape{D, N}),
                      "DynamicQuantizeLSTM: " + name + " has shape " + shape_to_string(t.shape()) + ", expected " +
                          shape_to_string(Shape{D}) + " or " + shape_to_string(Shape{D, N}));
    return t.numel() / D;
  };
  ONYX_KERNEL_CHECK(scale.dtype() == DataType::Float,
                    "DynamicQuantizeLSTM: " + what + "_scale must be float, got " + dtype_name(scale.dtype()));
  ONYX_KERNEL_CHECK(zero.dtype() == m.dtype(), "DynamicQuantizeLSTM: " + what + "_zero_point is " +
                                                   dtype_name(zero.dtype()) + ", " + what + " is " +
                                                   dtype_name(m.dtype()));
  const int64_t ns = per_column(scale, what + "_scale"), nz = per_column(zero, what + "_zero_point");
  QuantizedLstmWeights::Matrix q;
  const bool is_signed = m.dtype() == DataType::Int8;
  q.packed = PackedInt8B(static_cast<const uint8_t*>(m.raw()) + d * K * N, is_signed, K, N, N, false);
  q.scale.assign(scale.data<float>() + d * ns, scale.data<float>() + (d + 1) * ns);
  for (int64_t i = 0; i < nz; ++i) q.zero.push_back(static_cast<int32_t>(zero.int_at(d * nz + i)));
  return q;
}

// Inputs W, R, W_scale, W_zero_point, R_scale, R_zero_point (null: not constant).
std::shared_ptr<const QuantizedLstmWeights> quantize_lstm_weights(const RnnConfig& cfg,
                                                                  const std::array<const Tensor*, 6>& in) {
  for (const Tensor* t : in)
    if (!t) return nullptr;
  const Tensor &W = *in[0], &R = *in[1];
  const int64_t D = cfg.num_dir, GH = 4 * cfg.hidden;
  for (const Tensor* m : {&W, &R})
    ONYX_KERNEL_CHECK(m->dtype() == DataType::Int8 || m->dtype() == DataType::UInt8,
                      "DynamicQuantizeLSTM: W and R must be int8 or uint8, got " + dtype_name(m->dtype()));
  ONYX_KERNEL_CHECK(W.rank() == 3 && W.dim(0) == D && W.dim(2) == GH,
                    "DynamicQuantizeLSTM: W has shape " + shape_to_string(W.shape()) + ", expected [" +
                        std::to_string(D) + ", input_size, " + std::to_string(GH) + "]");
  ONYX_KERNEL_CHECK(R.shape() == (Shape{D, cfg.hidden, GH}), "DynamicQuantizeLSTM: R has shape " +
                                                                 shape_to_string(R.shape()) + ", expected " +
                                                                 shape_to_string(Shape{D, cfg.hidden, GH}));
  auto q = std::make_shared<QuantizedLstmWeights>();
  for (int64_t d = 0; d < D; ++d) {
    q->w.push_back(quantized_matrix(W, *in[2], *in[3], d, "W"));
    q->r.push_back(quantized_matrix(R, *in[4], *in[5], d, "R"));
  }
  return q;
}

// out[rows, N] = (a - a_zero) x (B - B_zero) * a_scale * B_scale, a uint8 [rows, K].
void quantized_gemm(const uint8_t* a, int64_t rows, float a_scale, uint8_t a_zero,
                    const QuantizedLstmWeights::Matrix& b, float* out, ThreadPool* pool) {
  const int64_t N = b.packed.N();
  std::vector<float> scale(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) scale[n] = a_scale * b.scale[b.scale.size() == 1 ? 0 : n];
  const Int8A a_operand{a, false, b.packed.K(), false, false};
  int8_gemm_to_float(rows, a_operand, {a_zero}, b.packed, b.zero, scale.data(), nullptr, out, N, pool,
                     int8_gemm_best_isa());
}

template <class T>
void run_rnn_typed(const RnnConfig& cfg, KernelContext& ctx, const RnnPacks* packs,
                   const QuantizedLstmWeights* quantized = nullptr) {
  using C = CalcT<T>;
  const char* op = cfg.name;
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor& R = ctx.input(2);
  const int G = num_gates(cfg.cell);
  ONYX_KERNEL_CHECK(X.rank() == 3, std::string(op) + ": X must be 3-D, got shape " + shape_to_string(X.shape()));
  const int64_t seq = cfg.layout == 0 ? X.dim(0) : X.dim(1);
  const int64_t batch = cfg.layout == 0 ? X.dim(1) : X.dim(0);
  const int64_t in = X.dim(2);
  const int D = cfg.num_dir;
  const int64_t H = cfg.hidden > 0 ? cfg.hidden : (R.rank() == 3 ? R.dim(2) : 0);
  // DynamicQuantizeLSTM's weights are stored transposed: [D, in, 4H], [D, H, 4H].
  const Shape w_shape = quantized ? Shape{D, in, G * H} : Shape{D, G * H, in};
  const Shape r_shape = quantized ? Shape{D, H, G * H} : Shape{D, G * H, H};
  ONYX_KERNEL_CHECK(W.shape() == w_shape, std::string(op) + ": W has shape " + shape_to_string(W.shape()) +
                                              ", expected " + shape_to_string(w_shape));
  ONYX_KERNEL_CHECK(R.shape() == r_shape, std::string(op) + ": R has shape " + shape_to_string(R.shape()) +
                                              ", expected " + shape_to_string(r_shape));
  const bool float_weights = !packs && !quantized;
  std::vector<C> w = float_weights ? to_calc<T>(W) : std::vector<C>(), r = float_weights ? to_calc<T>(R) : w;
  std::vector<C> b(static_cast<size_t>(D * 2 * G * H), C(0));
  if (ctx.has_input(3)) {
    const Tensor& B = ctx.input(3);
    ONYX_KERNEL_CHECK(B.shape() == (Shape{D, 2 * G * H}), std::string(op) + ": B has shape " +
                                                              shape_to_string(B.shape()) + ", expected " +
                                                              shape_to_string(Shape{D, 2 * G * H}));
    b = to_calc<T>(B);
  }
  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (ctx.has_input(4)) {
    const Tensor& L = ctx.input(4);
    ONYX_KERNEL_CHECK(L.numel() == batch, std::string(op) + ": sequence_lens has shape " +
                                              shape_to_string(L.shape()) + ", expected [" +
                                              std::to_string(batch) + "]");
    for (int64_t i = 0; i < batch; ++i) {
      lens[i] = L.int_at(i);
      ONYX_KERNEL_CHECK(lens[i] >= 0 && lens[i] <= seq, std::string(op) + ": sequence_lens[" + std::to_string(i) +
                                                            "]=" + std::to_string(lens[i]) +
                                                            " is outside [0, " + std::to_string(seq) + "]");
    }
  }
  const Shape state_shape = cfg.layout == 0 ? Shape{D, batch, H} : Shape{batch, D, H};
  auto state_index = [&](int d, int64_t bb) {
    return cfg.layout == 0 ? (d * batch + bb) * H : (bb * D + d) * H;
  };
  std::vector<C> h0(static_cast<size_t>(D * batch * H), C(0)), c0 = h0;
  if (ctx.has_input(5)) {
    const Tensor& I = ctx.input(5);
    ONYX_KERNEL_CHECK(I.shape() == state_shape, std::string(op) + ": initial_h has shape " +
                                                    shape_to_string(I.shape()) + ", expected " +
                                                    shape_to_string(state_shape));
    h0 = to_calc<T>(I);
  }
  std::vector<C> p;
  if (cfg.cell == Cell::LSTM) {
    if (ctx.has_input(6)) {
      const Tensor& I = ctx.input(6);
      ONYX_KERNEL_CHECK(I.shape() == state_shape, std::string(op) + ": initial_c has shape " +
                                                      shape_to_string(I.shape()) + ", expected " +
                                                      shape_to_string(state_shape));
      c0 = to_calc<T>(I);
    }
    if (ctx.has_input(7)) {
      const Tensor& P = ctx.input(7);
      ONYX_KERNEL_CHECK(P.shape() == (Shape{D, 3 * H}), std::string(op) + ": P has shape " +
                                                            shape_to_string(P.shape()) + ", expected " +
                                                            shape_to_string(Shape{D, 3 * H}));
      p = to_calc<T>(P);
    }
  }
  const Shape y_shape = cfg.layout == 0 ? Shape{seq, D, batch, H} : Shape{batch, seq, D, H};
  std::vector<C> y(static_cast<size_t>(seq * D * batch * H), C(0));
  std::vector<C> yh(static_cast<size_t>(D * batch * H), C(0)), yc = yh;
  auto y_index = [&](int64_t t, int d, int64_t bb) {
    return cfg.layout == 0 ? ((t * D + d) * batch + bb) * H : ((bb * seq + t) * D + d) * H;
  };
  const C clip = static_cast<C>(cfg.clip);
  auto clipv = [&](C v) { return clip > 0 ? std::max(-clip, std::min(clip, v)) : v; };

  const int64_t GH = G * H;
  // X in [seq, batch, in] order: float X of layout 0 as it is, else converted / reordered once.
  std::vector<C> x_reordered;
  const C* xs = nullptr;
  if constexpr (std::is_same_v<T, C>)
    if (cfg.layout == 0) xs = X.data<T>();
  if (!xs) {
    x_reordered.resize(static_cast<size_t>(seq * batch * in));
    const T* src = X.data<T>();
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t bb = 0; bb < batch; ++bb) {
        const T* row = src + (cfg.layout == 0 ? (t * batch + bb) * in : (bb * seq + t) * in);
        std::transform(row, row + in, x_reordered.data() + (t * batch + bb) * in,
                       [](T v) { return static_cast<C>(v); });
      }
    xs = x_reordered.data();
  }
  const int64_t x_count = seq * batch * in;
  // Per step, every batch row at once: h [batch, H] x R^T is one GEMM of
  // `batch` rows (R packed once per direction for float), and the gates run
  // as vectors. A row past its sequence length keeps its state. The two
  // directions of a bidirectional layer are independent: one task each.
  const int64_t max_len = batch ? *std::max_element(lens.begin(), lens.end()) : 0;
  // The quantized LSTM quantizes X once for both directions (the same range).
  std::vector<uint8_t> xq(quantized ? x_count : 0);
  float x_scale = 1.f;
  uint8_t x_zero = 0;
  if constexpr (std::is_same_v<C, float>)
    if (quantized) x_scale = quantize_u8_dynamic(xs, x_count, xq.data(), x_zero);
  ThreadPool* gemm_pool = D == 1 ? ctx.thread_pool() : nullptr;  // two directions already run as two tasks
  auto run_direction = [&](int d) {
    std::vector<C> xw(static_cast<size_t>(seq * batch * GH));
    std::vector<C> h(static_cast<size_t>(batch * H)), c(h.size()), hr(static_cast<size_t>(batch * GH)),
        tmp(h.size()), rh(h.size());
    const bool rev = cfg.reverse_only || d == 1;
    const C* wd = float_weights ? w.data() + d * GH * in : nullptr;
    const C* rd = float_weights ? r.data() + d * GH * H : nullptr;
    std::vector<uint8_t> hq(quantized ? h.size() : 0);
    const C* wb = b.data() + d * 2 * GH;
    const C* rb = wb + GH;
    const C* pd = p.empty() ? nullptr : p.data() + d * 3 * H;
    const Act* act = cfg.acts.data() + d * cfg.acts_per_dir;
    // out[batch, rows] = h x R[row0 .. row0 + rows)^T: a GRU takes its
    // update/reset rows and its hidden rows apart (the hidden ones may need r * h).
    const bool gru = cfg.cell == Cell::GRU;
    const int64_t first_rows = first_recurrent_rows(cfg, H);
    std::optional<PackedB> r_first, r_hidden;
    if (packs) {
      r_first = packs->r_first[d];
      if (first_rows != GH) r_hidden = packs->r_hidden[d];
    }
    auto recur = [&](const C* hv, const std::optional<PackedB>& packed, const C* rows, int64_t n, C* out, int64_t ldo) {
      if constexpr (std::is_same_v<C, float>) {
        if (packed) return gemm_f32_packed(false, batch, 1.0f, hv, H, *packed, 0.0f, out, ldo);
        if (quantized) {  // LSTM only: all 4H rows, ldo == GH
          uint8_t h_zero = 0;
          const float h_scale = quantize_u8_dynamic(hv, batch * H, hq.data(), h_zero);
          return quantized_gemm(hq.data(), batch, h_scale, h_zero, quantized->r[d], out, gemm_pool);
        }
      }
      for (int64_t bb = 0; bb < batch; ++bb) matmul_bt(hv + bb * H, rows, out + bb * ldo, 1, n, H, false);
    };
    // input projection for all steps, with the input bias (and the recurrent bias
    // wherever it is simply added: not a GRU's hidden rows)
    std::vector<C> bias(static_cast<size_t>(GH));
    for (int64_t g = 0; g < GH; ++g) bias[g] = wb[g] + (gru && g >= 2 * H ? C(0) : rb[g]);
    bool bias_added = false;
    if constexpr (std::is_same_v<C, float>) {
      if (packs) {
        GemmEpilogue with_bias;
        with_bias.bias = bias.data();
        gemm_f32_packed(false, seq * batch, 1.0f, xs, in, packs->w[d], 0.0f, xw.data(), GH, gemm_pool,
                        with_bias);
        bias_added = true;
      }
      if (quantized) quantized_gemm(xq.data(), seq * batch, x_scale, x_zero, quantized->w[d], xw.data(), gemm_pool);
    }
    if (float_weights) matmul_bt(xs, wd, xw.data(), seq * batch, GH, in, false);
    if (!bias_added)
      for (int64_t row = 0; row < seq * batch; ++row) {
        C* xr = xw.data() + row * GH;
        for (int64_t g = 0; g < GH; ++g) xr[g] += bias[g];
      }
    // The default activations (sigmoid, tanh[, tanh]) run fused per row where the CPU has the vector kernel.
    bool fused_gates = false;
    if constexpr (std::is_same_v<C, float>)
      fused_gates = (cfg.cell == Cell::LSTM || cfg.cell == Cell::GRU) && act[0].kind == ActKind::Sigmoid &&
                    act[1].kind == ActKind::Tanh && (cfg.cell != Cell::LSTM || act[2].kind == ActKind::Tanh);
    for (int64_t bb = 0; bb < batch; ++bb) {
      std::copy_n(h0.begin() + state_index(d, bb), H, h.begin() + bb * H);
      std::copy_n(c0.begin() + state_index(d, bb), H, c.begin() + bb * H);
    }
    // The time index batch row bb is at in step s, or -1 once its sequence has ended.
    auto time_of = [&](int64_t bb, int64_t s) -> int64_t {
      const int64_t L = lens[bb];
      return s >= L ? -1 : rev ? L - 1 - s : s;
    };
    // The quantized recurrent GEMM takes its range over every row, and ORT feeds
    // a row zeros from the second step after its sequence ended: so does Onyx,
    // or a stale row would change the other rows' quantization.
    const bool ragged = quantized && *std::min_element(lens.begin(), lens.end()) != max_len;
    std::vector<C> h_running(ragged ? h.size() : 0);
    for (int64_t s = 0; s < max_len; ++s) {
      if (ragged)
        for (int64_t bb = 0; bb < batch; ++bb) {
          C* row = h_running.data() + bb * H;
          if (s > lens[bb]) std::fill_n(row, H, C(0));
          else std::copy_n(h.data() + bb * H, H, row);
        }
      recur(ragged ? h_running.data() : h.data(), r_first, rd, first_rows, hr.data(), GH);
      for (int64_t bb = 0; bb < batch; ++bb) {
        const int64_t t = time_of(bb, s);
        if (t < 0) continue;
        const C* xg = xw.data() + (t * batch + bb) * GH;
        C* hb = h.data() + bb * H;
        C* cb = c.data() + bb * H;
        C* gi = hr.data() + bb * GH;
        C* tb = tmp.data() + bb * H;
        switch (cfg.cell) {
          case Cell::RNN: {  // GH == H
            for (int64_t j = 0; j < H; ++j) gi[j] = clipv(xg[j] + gi[j]);
            act[0].apply(gi, hb, H);
            break;
          }
          case Cell::GRU: {
            if constexpr (std::is_same_v<C, float>)
              if (fused_gates && gru_reset_row(gi, xg, hb, rb + 2 * H, cfg.linear_before_reset, clip,
                                               cfg.linear_before_reset ? tb : rh.data() + bb * H, H))
                break;
            const C* rg = gi + H;  // after the update gate z
            for (int64_t j = 0; j < 2 * H; ++j) gi[j] = clipv(xg[j] + gi[j]);
            act[0].apply(gi, gi, 2 * H);
            const C* rbh = rb + 2 * H;
            if (cfg.linear_before_reset) {
              const C* hh = gi + 2 * H;  // h x R_h^T, from the one GEMM
              for (int64_t j = 0; j < H; ++j) tb[j] = rg[j] * (hh[j] + rbh[j]);
            } else {
              C* rhb = rh.data() + bb * H;
              for (int64_t j = 0; j < H; ++j) rhb[j] = rg[j] * hb[j];
              if constexpr (!std::is_same_v<C, float>) matmul_bt(rhb, rd + 2 * H * H, tb, 1, H, H, false);
            }
            break;
          }
          case Cell::LSTM: {
            if constexpr (std::is_same_v<C, float>) {
              LstmGateRow row;
              row.gates = gi;
              row.x = xg;
              row.peephole = pd;
              row.clip = clip;
              row.input_forget = cfg.input_forget;
              row.c = cb;
              row.h = hb;
              row.H = H;
              if (fused_gates && lstm_gate_row(row)) break;
            }
            C *go = gi + H, *gf = gi + 2 * H, *gc = gi + 3 * H;  // gates [i, o, f, c~]
            for (int64_t j = 0; j < GH; ++j) gi[j] += xg[j];
            if (pd)
              for (int64_t j = 0; j < H; ++j) gi[j] += pd[j] * cb[j], gf[j] += pd[2 * H + j] * cb[j];
            if (clip > 0)
              for (int64_t j = 0; j < H; ++j) gi[j] = clipv(gi[j]), gf[j] = clipv(gf[j]), gc[j] = clipv(gc[j]);
            act[0].apply(gi, gi, H);
            if (cfg.input_forget) {
              for (int64_t j = 0; j < H; ++j) gf[j] = C(1) - gi[j];
            } else {
              act[0].apply(gf, gf, H);
            }
            act[1].apply(gc, gc, H);
            for (int64_t j = 0; j < H; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
            if (pd)
              for (int64_t j = 0; j < H; ++j) go[j] += pd[H + j] * cb[j];
            if (clip > 0)
              for (int64_t j = 0; j < H; ++j) go[j] = clipv(go[j]);
            act[0].apply(go, go, H);
            act[2].apply(cb, tb, H);
            for (int64_t j = 0; j < H; ++j) hb[j] = go[j] * tb[j];
            break;
          }
        }
      }
      if (cfg.cell == Cell::GRU) {
        // (r * h) x R_h^T for every row at once (float), then the new state.
        if constexpr (std::is_same_v<C, float>)
          if (!cfg.linear_before_reset) recur(rh.data(), r_hidden, rd + 2 * H * H, H, tmp.data(), H);
        for (int64_t bb = 0; bb < batch; ++bb) {
          const int64_t t = time_of(bb, s);
          if (t < 0) continue;
          const C* xg = xw.data() + (t * batch + bb) * GH;
          const C* z = hr.data() + bb * GH;
          C* hb = h.data() + bb * H;
          C* tb = tmp.data() + bb * H;
          const C* rbh = rb + 2 * H;
          const C* bias_after = cfg.linear_before_reset ? nullptr : rbh;  // else inside r * (...) already
          if constexpr (std::is_same_v<C, float>)
            if (fused_gates && gru_update_row(z, xg + 2 * H, tb, bias_after, clip, hb, H)) continue;
          for (int64_t j = 0; j < H; ++j) tb[j] = clipv(xg[2 * H + j] + tb[j] + (bias_after ? bias_after[j] : C(0)));
          act[1].apply(tb, tb, H);
          for (int64_t j = 0; j < H; ++j) hb[j] = (C(1) - z[j]) * tb[j] + z[j] * hb[j];
        }
      }
      for (int64_t bb = 0; bb < batch; ++bb) {
        const int64_t t = time_of(bb, s);
        if (t >= 0) std::copy_n(h.begin() + bb * H, H, y.begin() + y_index(t, d, bb));
      }
    }
    for (int64_t bb = 0; bb < batch; ++bb) {
      std::copy_n(h.begin() + bb * H, H, yh.begin() + state_index(d, bb));
      std::copy_n(c.begin() + bb * H, H, yc.begin() + state_index(d, bb));
    }
  };
  parallel_for(D > 1 ? ctx.thread_pool() : nullptr, D, [&](int64_t d0, int64_t d1) {
    for (int64_t d = d0; d < d1; ++d) run_direction(static_cast<int>(d));
  });
  auto emit = [&](size_t idx, const Shape& shape, const std::vector<C>& v) {
    if (!ctx.wants_output(idx)) return;
    Tensor& o = ctx.allocate_output(idx, X.dtype(), shape);
    T* dst = o.data<T>();
    for (size_t i = 0; i < v.size(); ++i) dst[i] = static_cast<T>(v[i]);
  };
  emit(0, y_shape, y);
  emit(1, state_shape, yh);
  if (cfg.cell == Cell::LSTM) emit(2, state_shape, yc);
}

RnnConfig parse_rnn_config(const KernelInitContext& init, Cell cell, const char* name) {
  RnnConfig cfg;
  cfg.cell = cell;
  cfg.name = name;
  cfg.hidden = init.get_int("hidden_size", 0);
  std::string dir = init.get_string("direction", "forward");
  if (dir == "forward") {
    cfg.num_dir = 1;
  } else if (dir == "reverse") {
    cfg.num_dir = 1;
    cfg.reverse_only = true;
  } else if (dir == "bidirectional") {
    cfg.num_dir = 2;
  } else {
    kernel_fail(std::string(cfg.name) + ": unknown direction '" + dir + "'");
  }
  cfg.layout = static_cast<int>(init.get_int("layout", 0));
  ONYX_KERNEL_CHECK(cfg.layout == 0 || cfg.layout == 1, std::string(cfg.name) + ": layout must be 0 or 1");
  cfg.clip = init.has("clip") ? init.get_float("clip", 0.f) : 0.f;
  cfg.linear_before_reset = init.get_int("linear_before_reset", 0) != 0;
  cfg.input_forget = init.get_int("input_forget", 0) != 0;
  std::vector<std::string> defaults;
  if (cell == Cell::RNN)
    defaults = {"Tanh"};
  else if (cell == Cell::GRU)
    defaults = {"Sigmoid", "Tanh"};
  else
    defaults = {"Sigmoid", "Tanh", "Tanh"};
  cfg.acts_per_dir = static_cast<int>(defaults.size());
  std::vector<std::string> names = init.get_strings("activations", {});
  if (names.empty()) {
    for (int d = 0; d < cfg.num_dir; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == defaults.size() && cfg.num_dir == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  }
  ONYX_KERNEL_CHECK(names.size() == defaults.size() * cfg.num_dir,
                    std::string(cfg.name) + ": expected " + std::to_string(defaults.size() * cfg.num_dir) +
                        " activations, got " + std::to_string(names.size()));
  cfg.acts = parse_activations(names, init.get_floats("activation_alpha", {}), init.get_floats("activation_beta", {}));
  return cfg;
}

KernelFactory rnn_factory(Cell cell) {
  return [cell](const KernelInitContext& init) -> std::unique_ptr<Kernel> {
    const RnnConfig cfg = parse_rnn_config(init, cell, cell == Cell::RNN ? "RNN" : cell == Cell::GRU ? "GRU" : "LSTM");
    std::shared_ptr<const RnnPacks> packs = pack_rnn_weights(cfg, init.constant_input(1), init.constant_input(2));
    return std::make_unique<LambdaKernel>([cfg, packs](KernelContext& ctx) {
      dispatch_float(ctx.input(0).dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, float>) {
          // Weights fed as graph inputs are packed the same way, per run.
          auto run_packs = packs ? packs : pack_rnn_weights(cfg, &ctx.input(1), &ctx.input(2));
          run_rnn_typed<T>(cfg, ctx, run_packs.get());
        } else {
          run_rnn_typed<T>(cfg, ctx, nullptr);
        }
      });
    });
  };
}

// com.microsoft.DynamicQuantizeLSTM: LSTM's inputs 0-7 and attributes, then
// W_scale, W_zero_point, R_scale, R_zero_point (inputs 8-11), float X only.
std::unique_ptr<Kernel> make_dynamic_quantize_lstm(const KernelInitContext& init) {
  const RnnConfig cfg = parse_rnn_config(init, Cell::LSTM, "DynamicQuantizeLSTM");
  ONYX_KERNEL_CHECK(cfg.layout == 0, "DynamicQuantizeLSTM: only layout 0 exists");
  ONYX_KERNEL_CHECK(cfg.hidden > 0, "DynamicQuantizeLSTM: hidden_size is required");
  auto weights_of = [](auto&& input) {
    return std::array<const Tensor*, 6>{input(1), input(2), input(8), input(9), input(10), input(11)};
  };
  auto constant = [&](size_t i) { return init.constant_input(i); };
  std::shared_ptr<const QuantizedLstmWeights> packed = quantize_lstm_weights(cfg, weights_of(constant));
  return std::make_unique<LambdaKernel>([cfg, packed, weights_of](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    ONYX_KERNEL_CHECK(X.dtype() == DataType::Float, "DynamicQuantizeLSTM: X must be float, got " + dtype_name(X.dtype()));
    for (size_t i : {8, 9, 10, 11})
      ONYX_KERNEL_CHECK(ctx.has_input(i), "DynamicQuantizeLSTM: input " + std::to_string(i) +
                                              " (the weights' scale or zero point) is required");
    auto run_input = [&](size_t i) { return &ctx.input(i); };
    auto weights = packed ? packed : quantize_lstm_weights(cfg, weights_of(run_input));
    run_rnn_typed<float>(cfg, ctx, nullptr, weights.get());
  });
}

}  // namespace

void register_rnn(KernelRegistry& r) {
  r.add("RNN", 1, kMaxOpset, rnn_factory(Cell::RNN));
  r.add("GRU", 1, kMaxOpset, rnn_factory(Cell::GRU));
  r.add("LSTM", 1, kMaxOpset, rnn_factory(Cell::LSTM));
  r.add("DynamicQuantizeLSTM", 1, kMaxOpset, make_dynamic_quantize_lstm, "com.microsoft");
}

}  // namespace onyx
