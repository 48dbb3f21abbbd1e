// ONNX Runtime's contrib attention ops (com.microsoft): Attention and
// QAttention (BERT / GPT-2 self-attention with the QKV projection inside) and
// MultiHeadAttention (projected Q, K, V in their several packings). All end in
// run_attention (attention_core.h), with Q, K, V read in place by strides.
// Masks follow ORT's CPU kernels: masked positions get mask_filter_value
// (-10000 by default) added, not -inf, so a fully masked row still depends on
// its scores; users compare against those numbers.
#include <cmath>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"
#include "cpu/half_via_float.h"
#include "cpu/int8_gemm.h"
#include "cpu/matmul_plan.h"
#include "cpu/kernels/attention_core.h"

namespace onyx {
namespace {

const char* kMicrosoft = "com.microsoft";

std::string S(int64_t v) { return std::to_string(v); }

// attention_bias: [B or 1, N or 1, Sq, T].
void set_attention_bias(AttentionProblem& p, const Tensor& t, const std::string& op) {
  bool ok = t.dtype() == DataType::Float && t.rank() == 4 && (t.dim(0) == p.B || t.dim(0) == 1) &&
            (t.dim(1) == p.N || t.dim(1) == 1) && t.dim(2) == p.Sq && t.dim(3) == p.T;
  if (!ok)
    kernel_fail(op + ": attention_bias should be float [" + S(p.B) + " or 1, " + S(p.N) + " or 1, " + S(p.Sq) + ", " +
                S(p.T) + "], got " + dtype_name(t.dtype()) + " " + shape_to_string(t.shape()));
  p.bias.data = t.data<float>();
  p.bias.row = p.T;
  p.bias.head = t.dim(1) == 1 ? 0 : p.Sq * p.T;
  p.bias.batch = t.dim(0) == 1 ? 0 : t.dim(1) * p.Sq * p.T;
}

// A key mask as the additive [B, rows, T] form: 1-D [B] end positions, 1-D
// [2B] end then start positions, 2-D [B, T] or 3-D [B, Sq, T] of 1 (attend) / 0.
std::vector<float> additive_key_mask(const Tensor& m, int64_t B, int64_t Sq, int64_t T, float filter, int64_t& rows,
                                     const std::string& op, const char* what) {
  if (m.dtype() != DataType::Int32) kernel_fail(op + ": " + what + " must be int32, got " + dtype_name(m.dtype()));
  const int32_t* v = m.data<int32_t>();
  rows = m.rank() == 3 ? Sq : 1;
  std::vector<float> out(static_cast<size_t>(B * rows * T), 0.f);
  if (m.rank() == 1 && (m.dim(0) == B || m.dim(0) == 2 * B)) {
    for (int64_t b = 0; b < B; ++b) {
      int64_t end = v[b], start = m.dim(0) == 2 * B ? v[B + b] : 0;
      for (int64_t j = 0; j < T; ++j)
        if (j >= end || j < start) out[b * T + j] = filter;
    }
    return out;
  }
  bool raw = (m.rank() == 2 && m.dim(0) == B && m.dim(1) == T) ||
             (m.rank() == 3 && m.dim(0) == B && m.dim(1) == Sq && m.dim(2) == T);
  if (!raw)
    kernel_fail(op + ": " + what + " shape " + shape_to_string(m.shape()) + " is none of [" + S(B) + "], [" +
                S(2 * B) + "], [" + S(B) + ", " + S(T) + "], [" + S(B) + ", " + S(Sq) + ", " + S(T) +
                "] (the CPU kernel, like ORT's, has no 4-D mask form)");
  for (size_t i = 0; i < out.size(); ++i) out[i] = v[i] == 0 ? filter : 0.f;
  return out;
}

// A [B, 1] or [1, 1] mask_index that is not [B, T] comes from exporters
// that let Add broadcast it: one value per row shifts every score of the row
// alike, which softmax ignores, so ORT treats it as no mask and so do we.
bool is_dummy_mask(const Tensor& m, int64_t B, int64_t T) {
  return m.rank() == 2 && m.dim(1) == 1 && (m.dim(0) == B || m.dim(0) == 1) && !(m.dim(0) == B && T == 1);
}

// Copies past [B, N, P, D] and the new rows (a layout over Sq rows) into
// present [B, N, P + Sq, D].
void fill_present(float* present, const float* past, int64_t P, const HeadLayout& cur, int64_t B, int64_t N,
                  int64_t Sq, int64_t D) {
  const int64_t T = P + Sq;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      float* dst = present + (b * N + n) * T * D;
      if (past) std::copy_n(past + (b * N + n) * P * D, P * D, dst);
      const float* src = cur.at(b, n);
      for (int64_t s = 0; s < Sq; ++s) std::copy_n(src + s * cur.row, D, dst + (P + s) * D);
    }
}

float scale_or_default(float scale, int64_t D) { return scale != 0.f ? scale : 1.f / std::sqrt(static_cast<float>(D)); }

// ---- Attention / QAttention ----
// input [B, S, in] x weights [in, q + k + v] (+ bias) -> Q, K, V in one GEMM;
// past [2, B, N, P, D] / present [2, B, N, P + S, D] for GPT-2 decoding.
// QAttention takes uint8 input and 8-bit weights with their scales and zero
// points. Constant weights run the projection on the exact 8-bit GEMM (int32
// sums scaled per column, as ORT does; 3x the float GEMM's speed on BERT);
// weights fed at run time are dequantized into the float GEMM.

// Where each optional input sits: the two ops order them differently.
struct AttentionSlots {
  size_t mask, past, attention_bias;
};
constexpr size_t kNoSlot = ~size_t{0};
constexpr AttentionSlots kFloatSlots{3, 4, 5};
constexpr AttentionSlots kQuantizedSlots{5, 8, kNoSlot};

// (q - zero_point) * scale over a [rows, cols] 8-bit matrix; scale and zero
// point per tensor, or per column when `per_column` allows it.
// Fails unless q is 8-bit and its scale (float) and zero point (q's type)
// have one value, or one per column where `per_column` allows it.
void check_quant_params(const Tensor& q, const Tensor& scale, const Tensor* zp, int64_t cols, bool per_column,
                        const std::string& op, const char* what) {
  if (q.dtype() != DataType::UInt8 && q.dtype() != DataType::Int8)
    kernel_fail(op + ": " + what + " must be uint8 or int8, got " + dtype_name(q.dtype()));
  auto count_ok = [&](int64_t n) { return n == 1 || (per_column && n == cols); };
  if (scale.dtype() != DataType::Float || !count_ok(scale.numel()))
    kernel_fail(op + ": " + what + " scale should be one float" + (per_column ? " or " + S(cols) : std::string()) +
                ", got " + dtype_name(scale.dtype()) + " " + shape_to_string(scale.shape()));
  if (zp && (zp->dtype() != q.dtype() || !count_ok(zp->numel())))
    kernel_fail(op + ": " + what + " zero point should be " + dtype_name(q.dtype()) + " like it, with one value" +
                (per_column ? " or " + S(cols) : std::string()) + ", got " + dtype_name(zp->dtype()) + " " +
                shape_to_string(zp->shape()));
}

std::vector<float> dequantize(const Tensor& q, const Tensor& scale, const Tensor* zp, int64_t cols, bool per_column,
                              const std::string& op, const char* what) {
  check_quant_params(q, scale, zp, cols, per_column, op, what);
  std::vector<float> sc(static_cast<size_t>(cols)), z(static_cast<size_t>(cols), 0.f);
  for (int64_t c = 0; c < cols; ++c) {
    sc[c] = scale.data<float>()[scale.numel() == 1 ? 0 : c];
    if (zp) z[c] = static_cast<float>(zp->int_at(zp->numel() == 1 ? 0 : c));
  }
  std::vector<float> out(static_cast<size_t>(q.numel()));
  auto convert = [&](const auto* v) {
    for (int64_t i = 0; i < q.numel(); ++i) out[i] = (static_cast<float>(v[i]) - z[i % cols]) * sc[i % cols];
  };
  if (q.dtype() == DataType::UInt8) convert(q.data<uint8_t>());
  else convert(q.data<int8_t>());
  return out;
}

class ContribAttentionKernel final : public Kernel {
 public:
  ContribAttentionKernel(const KernelInitContext& ic, bool quantized)
      : quantized_(quantized), slots_(quantized ? kQuantizedSlots : kFloatSlots),
        heads_(ic.get_int("num_heads", 0)), causal_(ic.get_int("unidirectional", 0) != 0),
        filter_(ic.get_float("mask_filter_value", -10000.f)), scale_(ic.get_float("scale", 0.f)),
        sizes_(ic.get_ints("qkv_hidden_sizes", {})), op_(quantized ? "QAttention" : "Attention") {
    if (heads_ <= 0) kernel_fail(op_ + ": num_heads must be positive, got " + S(heads_));
    if (!sizes_.empty() && sizes_.size() != 3)
      kernel_fail(op_ + ": qkv_hidden_sizes must have 3 values, got " + S(static_cast<int64_t>(sizes_.size())));
    if (ic.get_int("do_rotary", 0) != 0)
      kernel_fail(op_ + ": do_rotary is not supported on the CPU (nor by ORT's CPU kernel); use "
                        "MultiHeadAttention with RotaryEmbedding");
    pack_constant_weights(ic);
  }

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.rank() != 3) kernel_fail(op_ + ": input must be [batch, sequence, hidden], got " + shape_to_string(x.shape()));
    if (!quantized_ && x.dtype() != DataType::Float)
      kernel_fail(op_ + ": input must be float, got " + dtype_name(x.dtype()));
    if (w.rank() != 2 || w.dim(0) != x.dim(2))
      kernel_fail(op_ + ": weights should be [" + S(x.dim(2)) + ", q + k + v hidden], got " + shape_to_string(w.shape()));
    if (!quantized_ && w.dtype() != DataType::Float)
      kernel_fail(op_ + ": weights must be float, got " + dtype_name(w.dtype()));
    const int64_t B = x.dim(0), Sq = x.dim(1), cols = w.dim(1);
    int64_t hq = cols / 3, hk = cols / 3, hv = cols / 3;
    if (!sizes_.empty()) hq = sizes_[0], hk = sizes_[1], hv = sizes_[2];
    if ((sizes_.empty() && cols % 3 != 0) || hq + hk + hv != cols || hq != hk || hq <= 0 || hv <= 0)
      kernel_fail(op_ + ": weights' " + S(cols) + " columns do not split into Q, K, V (q = k hidden sizes)");
    if (hq % heads_ != 0 || hv % heads_ != 0)
      kernel_fail(op_ + ": hidden sizes " + S(hq) + " / " + S(hv) + " are not multiples of num_heads " + S(heads_));

    AttentionProblem p;
    p.B = B, p.N = heads_, p.Sq = Sq, p.Dqk = hq / heads_, p.Dv = hv / heads_;
    p.causal = causal_, p.filter = filter_, p.scale = scale_or_default(scale_, p.Dqk);
    const Tensor* past = ctx.has_input(slots_.past) ? &ctx.input(slots_.past) : nullptr;
    if (past) {
      if (p.Dqk != p.Dv) kernel_fail(op_ + ": past needs equal Q, K and V hidden sizes");
      if (past->dtype() != DataType::Float || past->rank() != 5 || past->dim(0) != 2 || past->dim(1) != B ||
          past->dim(2) != heads_ || past->dim(4) != p.Dqk)
        kernel_fail(op_ + ": past should be float [2, " + S(B) + ", " + S(heads_) + ", past_length, " + S(p.Dqk) +
                    "], got " + shape_to_string(past->shape()));
      p.past = past->dim(3);
    }
    p.T = p.past + Sq;
    // past_sequence_length (Attention input 6) only matters for ORT's GPU
    // buffer sharing; like ORT's CPU kernel we ignore it.

    std::vector<float> qkv = project_qkv(ctx, cols);
    // Q, K, V heads are column blocks of the GEMM's rows.
    const int64_t per_batch = Sq * cols;
    p.q = {qkv.data(), per_batch, p.Dqk, cols};
    p.k = {qkv.data() + hq, per_batch, p.Dqk, cols};
    p.v = {qkv.data() + hq + hk, per_batch, p.Dv, cols};

    std::vector<float> present_buf;
    if (past || ctx.wants_output(1)) {
      if (p.Dqk != p.Dv) kernel_fail(op_ + ": present needs equal Q, K and V hidden sizes");
      const int64_t half = B * heads_ * p.T * p.Dqk;
      float* present;
      if (ctx.wants_output(1)) {
        present = ctx.allocate_output(1, DataType::Float, {2, B, heads_, p.T, p.Dqk}).data<float>();
      } else {
        present_buf.resize(static_cast<size_t>(2 * half));
        present = present_buf.data();
      }
      const float* pk = past ? past->data<float>() : nullptr;
      const float* pv = past ? pk + B * heads_ * p.past * p.Dqk : nullptr;
      fill_present(present, pk, p.past, p.k, B, heads_, Sq, p.Dqk);
      fill_present(present + half, pv, p.past, p.v, B, heads_, Sq, p.Dqk);
      p.k = {present, heads_ * p.T * p.Dqk, p.T * p.Dqk, p.Dqk};
      p.v = {present + half, heads_ * p.T * p.Dqk, p.T * p.Dqk, p.Dqk};
    }

    std::vector<float> mask;
    if (ctx.has_input(slots_.mask) && !is_dummy_mask(ctx.input(slots_.mask), B, p.T)) {
      int64_t rows = 0;
      mask = additive_key_mask(ctx.input(slots_.mask), B, Sq, p.T, filter_, rows, op_, "mask_index");
      p.mask = {mask.data(), rows * p.T, 0, rows == 1 ? 0 : p.T, 1};
    }
    if (slots_.attention_bias != kNoSlot && ctx.has_input(slots_.attention_bias))
      set_attention_bias(p, ctx.input(slots_.attention_bias), op_);
    Tensor& out = ctx.allocate_output(0, DataType::Float, {B, Sq, hv});
    p.out = out.data<float>();
    if (out.numel() == 0) return;
    run_attention(p, ctx.thread_pool());
  }

 private:
  // The weights as float (QAttention: dequantized); null where they are not.
  std::vector<float> float_weights(const Tensor& w, const Tensor* scale, const Tensor* zp) const {
    if (!quantized_) return {};
    if (!scale) kernel_fail(op_ + ": weight_scale is required");
    return dequantize(w, *scale, zp, w.dim(1), true, op_, "weight");
  }

  void pack_constant_weights(const KernelInitContext& ic) {
    const Tensor* w = ic.constant_input(1);
    if (!w || w->rank() != 2) return;
    if (!quantized_) {
      if (w->dtype() != DataType::Float) return;
      packed_ = gemm_pack_b(false, w->dim(0), w->dim(1), w->data<float>(), w->dim(1));
      if (!packed_.empty()) ic.packed_constant(1);
      return;
    }
    const Tensor* scale = ic.constant_input(4);
    const Tensor* zp = ic.constant_input(7);
    if (!scale || (ic.has_input(7) && !zp)) return;  // scales fed at run time: dequantize then
    check_quant_params(*w, *scale, zp, w->dim(1), true, op_, "weight");
    packed_int8_ = pack_constant_int8_b(w);
  }

  // [rows, cols] = (x - x_zp)(W - w_zp) on the 8-bit GEMM, scaled by
  // x_scale * w_scale[col], plus bias.
  std::vector<float> project_qkv_int8(const KernelContext& ctx, const float* bias, int64_t cols) const {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* x_zp = ctx.has_input(6) ? &ctx.input(6) : nullptr;
    const Tensor* w_zp = ctx.has_input(7) ? &ctx.input(7) : nullptr;
    check_quant_params(x, ctx.input(3), x_zp, x.dim(2), false, op_, "input");
    const Tensor& w_scale = ctx.input(4);
    const int64_t rows = x.dim(0) * x.dim(1);
    std::vector<float> qkv(static_cast<size_t>(rows * cols));
    int8_matmul_to_float(plan_matmul(x.shape(), w.shape()), x, x_zp, ctx.input(3).data<float>()[0], w, w_zp, w_scale,
                         packed_int8_.get(), bias, qkv.data(), ctx.thread_pool(), "QAttention input",
                         "QAttention weight");
    return qkv;
  }

  // [B * S, cols] = input x weights + bias.
  std::vector<float> project_qkv(const KernelContext& ctx, int64_t cols) const {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const int64_t rows = x.dim(0) * x.dim(1), in = x.dim(2);
    GemmEpilogue epi;
    if (ctx.has_input(2)) {
      const Tensor& bt = ctx.input(2);
      if (bt.dtype() != DataType::Float || bt.rank() != 1 || bt.dim(0) != cols)
        kernel_fail(op_ + ": bias should be float [" + S(cols) + "], got " + shape_to_string(bt.shape()));
      epi.bias = bt.data<float>();
    }
    std::vector<float> xq;
    const float* xf = quantized_ ? nullptr : x.data<float>();
    if (quantized_) {
      if (x.dtype() != DataType::UInt8) kernel_fail(op_ + ": input must be uint8, got " + dtype_name(x.dtype()));
      if (!ctx.has_input(3)) kernel_fail(op_ + ": input_scale is required");
      if (packed_int8_) return project_qkv_int8(ctx, epi.bias, cols);
      xq = dequantize(x, ctx.input(3), ctx.has_input(6) ? &ctx.input(6) : nullptr, in, false, op_, "input");
      xf = xq.data();
    }
    std::vector<float> qkv(static_cast<size_t>(rows * cols));
    if (!packed_.empty()) {
      gemm_f32_packed(false, rows, 1.f, xf, in, packed_, 0.f, qkv.data(), cols, ctx.thread_pool(), epi);
      return qkv;
    }
    std::vector<float> wq = float_weights(w, ctx.has_input(4) ? &ctx.input(4) : nullptr,
                                          ctx.has_input(7) ? &ctx.input(7) : nullptr);
    const float* wf = quantized_ ? wq.data() : w.data<float>();
    gemm_f32(false, false, rows, cols, in, 1.f, xf, in, wf, cols, 0.f, qkv.data(), cols, ctx.thread_pool(), epi);
    return qkv;
  }

  bool quantized_;
  AttentionSlots slots_;
  int64_t heads_;
  bool causal_;
  float filter_, scale_;
  std::vector<int64_t> sizes_;
  std::string op_;
  PackedB packed_;
  std::shared_ptr<const PackedInt8B> packed_int8_;  // QAttention's constant 8-bit weights
};

// ---- MultiHeadAttention ----
// Projected Q, K, V: query [B, S, Hq] or packed QKV [B, S, N, 3, D]; key/value
// [B, L, H], packed KV as key [B, L, N, 2, D], or per head [B, N, L, D] (no
// bias then, and the same tensors come back as present). past_key/past_value
// [B, N, P, D] precede the new keys. ORT's CPU kernel lacks the packed forms;
// Onyx reads them by strides.

// The per-head view of a [B, L, N, D] ("3-D") tensor with `parts` packed
// components ([B, L, N, parts, D]) taking component `part`.
HeadLayout token_major(const float* base, int64_t L, int64_t N, int64_t D, int64_t parts, int64_t part) {
  return {base + part * D, L * N * parts * D, parts * D, N * parts * D};
}

// A copy of the view with bias[n * D + d] added, laid out [B, L, N * D].
HeadLayout with_bias(const HeadLayout& src, const float* bias, int64_t B, int64_t N, int64_t L, int64_t D,
                     std::vector<float>& storage) {
  storage.resize(static_cast<size_t>(B * L * N * D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      const float* in = src.at(b, n);
      const float* bn = bias + n * D;
      for (int64_t t = 0; t < L; ++t) {
        float* out = storage.data() + (b * L + t) * N * D + n * D;
        for (int64_t d = 0; d < D; ++d) out[d] = in[t * src.row + d] + bn[d];
      }
    }
  return {storage.data(), L * N * D, D, N * D};
}

class MultiHeadAttentionKernel final : public Kernel {
 public:
  explicit MultiHeadAttentionKernel(const KernelInitContext& ic)
      : heads_(ic.get_int("num_heads", 0)), causal_(ic.get_int("unidirectional", 0) != 0),
        filter_(ic.get_float("mask_filter_value", -10000.f)), scale_(ic.get_float("scale", 0.f)) {
    if (heads_ <= 0) kernel_fail(op_ + ": num_heads must be positive, got " + S(heads_));
  }

  void run(KernelContext& ctx) const override {
    const Tensor& q = ctx.input(0);
    require_float(q, "query");
    const bool packed_qkv = q.rank() == 5;
    if (q.rank() != 3 && !packed_qkv)
      kernel_fail(op_ + ": query must be [batch, sequence, hidden] or packed [batch, sequence, num_heads, 3, "
                        "head_size], got " + shape_to_string(q.shape()));
    const int64_t B = q.dim(0), Sq = q.dim(1), N = heads_;
    if (packed_qkv && (q.dim(2) != N || q.dim(3) != 3))
      kernel_fail(op_ + ": packed query shape " + shape_to_string(q.shape()) + " should be [B, S, " + S(N) +
                  ", 3, head_size]");
    if (!packed_qkv && q.dim(2) % N != 0)
      kernel_fail(op_ + ": query hidden size " + S(q.dim(2)) + " is not a multiple of num_heads " + S(N));
    const int64_t Dqk = packed_qkv ? q.dim(4) : q.dim(2) / N;

    // Q, K, V head views, before bias.
    HeadLayout ql, kl, vl;
    int64_t L = Sq, Dv = Dqk;
    bool kv_per_head = false;  // key/value given as [B, N, L, D]
    const Tensor* key = ctx.has_input(1) ? &ctx.input(1) : nullptr;
    const Tensor* value = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (packed_qkv) {
      if (key || value) kernel_fail(op_ + ": with a packed QKV query, key and value must be omitted");
      ql = token_major(q.data<float>(), Sq, N, Dqk, 3, 0);
      kl = token_major(q.data<float>(), Sq, N, Dqk, 3, 1);
      vl = token_major(q.data<float>(), Sq, N, Dqk, 3, 2);
    } else {
      ql = token_major(q.data<float>(), Sq, N, Dqk, 1, 0);
      if (!key) kernel_fail(op_ + ": key is required unless query is packed QKV");
      require_float(*key, "key");
      if (key->rank() == 5) {
        if (value) kernel_fail(op_ + ": with packed KV in key, value must be omitted");
        if (key->dim(0) != B || key->dim(2) != N || key->dim(3) != 2 || key->dim(4) != Dqk)
          kernel_fail(op_ + ": packed key shape " + shape_to_string(key->shape()) + " should be [" + S(B) +
                      ", kv_sequence, " + S(N) + ", 2, " + S(Dqk) + "]");
        L = key->dim(1);
        kl = token_major(key->data<float>(), L, N, Dqk, 2, 0);
        vl = token_major(key->data<float>(), L, N, Dqk, 2, 1);
      } else {
        if (!value) kernel_fail(op_ + ": value is required with a 3-D or 4-D key");
        require_float(*value, "value");
        bind_key_value(*key, *value, B, Dqk, L, Dv, kv_per_head, kl, vl);
      }
    }

    std::vector<float> qbuf, kbuf, vbuf;
    if (ctx.has_input(3)) {
      const Tensor& bias = ctx.input(3);
      const int64_t Hq = N * Dqk, Hv = N * Dv;
      if (bias.dtype() != DataType::Float || bias.rank() != 1 || bias.dim(0) != 2 * Hq + Hv)
        kernel_fail(op_ + ": bias should be float [" + S(2 * Hq + Hv) + "], got " + shape_to_string(bias.shape()));
      const float* bp = bias.data<float>();
      ql = with_bias(ql, bp, B, N, Sq, Dqk, qbuf);
      if (!kv_per_head) {  // like ORT: per-head key/value are already final
        kl = with_bias(kl, bp + Hq, B, N, L, Dqk, kbuf);
        vl = with_bias(vl, bp + 2 * Hq, B, N, L, Dv, vbuf);
      }
    }

    AttentionProblem p;
    p.B = B, p.N = N, p.Sq = Sq, p.Dqk = Dqk, p.Dv = Dv;
    p.causal = causal_, p.filter = filter_, p.scale = scale_or_default(scale_, Dqk);
    p.q = ql, p.k = kl, p.v = vl;
    std::vector<float> pk_buf, pv_buf;
    bind_cache(ctx, p, L, kv_per_head, pk_buf, pv_buf);

    std::vector<float> mask;
    if (ctx.has_input(4)) {
      int64_t rows = 0;
      mask = additive_key_mask(ctx.input(4), B, Sq, p.T, filter_, rows, op_, "key_padding_mask");
      p.mask = {mask.data(), rows * p.T, 0, rows == 1 ? 0 : p.T, 1};
    }
    if (ctx.has_input(5)) set_attention_bias(p, ctx.input(5), op_);
    Tensor& out = ctx.allocate_output(0, DataType::Float, {B, Sq, N * Dv});
    p.out = out.data<float>();
    if (out.numel() == 0) return;
    run_attention(p, ctx.thread_pool());
  }

 private:
  void require_float(const Tensor& t, const char* what) const {
    if (t.dtype() != DataType::Float) kernel_fail(op_ + ": " + what + " must be float, got " + dtype_name(t.dtype()));
  }

  // key/value as [B, L, N * D] or per head [B, N, L, D].
  void bind_key_value(const Tensor& key, const Tensor& value, int64_t B, int64_t Dqk, int64_t& L, int64_t& Dv,
                      bool& per_head, HeadLayout& kl, HeadLayout& vl) const {
    const int64_t N = heads_;
    if (key.rank() == 3 && value.rank() == 3) {
      L = key.dim(1);
      bool ok = key.dim(0) == B && key.dim(2) == N * Dqk && value.dim(0) == B && value.dim(1) == L &&
                value.dim(2) % N == 0;
      if (!ok)
        kernel_fail(op_ + ": key " + shape_to_string(key.shape()) + " and value " + shape_to_string(value.shape()) +
                    " should be [" + S(B) + ", kv_sequence, " + S(N * Dqk) + "] and [" + S(B) +
                    ", kv_sequence, num_heads * v_head_size]");
      Dv = value.dim(2) / N;
      kl = token_major(key.data<float>(), L, N, Dqk, 1, 0);
      vl = token_major(value.data<float>(), L, N, Dv, 1, 0);
      return;
    }
    if (key.rank() == 4 && value.rank() == 4) {
      L = key.dim(2);
      bool ok = key.dim(0) == B && key.dim(1) == N && key.dim(3) == Dqk && value.dim(0) == B && value.dim(1) == N &&
                value.dim(2) == L;
      if (!ok)
        kernel_fail(op_ + ": per-head key " + shape_to_string(key.shape()) + " and value " +
                    shape_to_string(value.shape()) + " should be [" + S(B) + ", " + S(N) + ", kv_sequence, " +
                    S(Dqk) + "] and [" + S(B) + ", " + S(N) + ", kv_sequence, v_head_size]");
      per_head = true;
      Dv = value.dim(3);
      kl = {key.data<float>(), N * L * Dqk, L * Dqk, Dqk};
      vl = {value.data<float>(), N * L * Dv, L * Dv, Dv};
      return;
    }
    kernel_fail(op_ + ": key and value must both be 3-D or both 4-D, got " + shape_to_string(key.shape()) + " and " +
                shape_to_string(value.shape()));
  }

  // past_key/past_value before the new keys; present_key/present_value out.
  void bind_cache(KernelContext& ctx, AttentionProblem& p, int64_t L, bool kv_per_head, std::vector<float>& kbuf,
                  std::vector<float>& vbuf) const {
    const bool has_past = ctx.has_input(6) || ctx.has_input(7);
    if (has_past && !(ctx.has_input(6) && ctx.has_input(7)))
      kernel_fail(op_ + ": past_key and past_value must be given together");
    const float *pk = nullptr, *pv = nullptr;
    if (has_past) {
      if (kv_per_head) kernel_fail(op_ + ": past_key / past_value cannot be used with per-head [B, N, L, D] key / value");
      const Tensor& a = ctx.input(6);
      const Tensor& b = ctx.input(7);
      p.past = a.rank() == 4 ? a.dim(2) : -1;
      bool ok = a.dtype() == DataType::Float && b.dtype() == DataType::Float && a.shape() == Shape{p.B, p.N, p.past, p.Dqk} &&
                b.shape() == Shape{p.B, p.N, p.past, p.Dv};
      if (!ok)
        kernel_fail(op_ + ": past_key " + shape_to_string(a.shape()) + " and past_value " + shape_to_string(b.shape()) +
                    " should be float [" + S(p.B) + ", " + S(p.N) + ", past, " + S(p.Dqk) + "] and [" + S(p.B) + ", " +
                    S(p.N) + ", past, " + S(p.Dv) + "]");
      pk = a.data<float>(), pv = b.data<float>();
    }
    p.T = p.past + L;
    auto cache = [&](size_t out, HeadLayout& l, const float* past, int64_t D, std::vector<float>& buf) {
      if (!has_past && !ctx.wants_output(out)) return;
      float* dst;
      if (ctx.wants_output(out)) {
        dst = ctx.allocate_output(out, DataType::Float, {p.B, p.N, p.T, D}).data<float>();
      } else {
        buf.resize(static_cast<size_t>(p.B * p.N * p.T * D));
        dst = buf.data();
      }
      fill_present(dst, past, p.past, l, p.B, p.N, L, D);
      l = {dst, p.N * p.T * D, p.T * D, D};
    };
    cache(1, p.k, pk, p.Dqk, kbuf);
    cache(2, p.v, pv, p.Dv, vbuf);
  }

  int64_t heads_;
  bool causal_;
  float filter_, scale_;
  std::string op_ = "MultiHeadAttention";
};

}  // namespace

void register_contrib_attention(KernelRegistry& r) {
  r.add("Attention", 1, kMaxOpset,
        half_via_float([](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
          return std::make_unique<ContribAttentionKernel>(ic, false);
        }),  // float16 / bfloat16 in float, as onnxruntime
        kMicrosoft);
  r.add("QAttention", 1, kMaxOpset,
        [](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
          return std::make_unique<ContribAttentionKernel>(ic, true);
        },
        kMicrosoft);
  r.add("MultiHeadAttention", 1, kMaxOpset,
        half_via_float([](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
          return std::make_unique<MultiHeadAttentionKernel>(ic);
        }),
        kMicrosoft);
}

}  // namespace onyx
