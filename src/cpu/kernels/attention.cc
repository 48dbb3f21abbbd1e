// The ai.onnx attention and sequence-state family (opsets 23-27): Attention
// (scaled dot-product attention with masks, a KV cache, grouped-query heads,
// soft capping, causal and sliding-window masks), RotaryEmbedding,
// TensorScatter (KV-cache update), LinearAttention (recurrent linear / gated /
// delta-rule attention) and CausalConvWithState (stateful causal depthwise
// conv). Written from the ONNX operator spec. Onyx's fused com.onyx
// Attention (fused.cc) is a different op.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/float_values.h"
#include "cpu/kernels/attention_core.h"
#include "cpu/kernels/rotary.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

std::string S(int64_t v) { return std::to_string(v); }

// ---- Attention ----

struct AttentionAttrs {
  int64_t is_causal = 0, q_num_heads = 0, kv_num_heads = 0, qk_mode = 0;
  int64_t left_window = -1, right_window = -1;
  float scale = 0.f, softcap = 0.f;
  bool has_scale = false;
};

// A 4-D view [B, H, S, D] of a 3-D [B, S, H*D] or 4-D [B, H, S, D] input.
struct HeadsView {
  int64_t B = 0, H = 0, S = 0, D = 0;
  bool three_d = false;
  int64_t index(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return three_d ? ((b * S + s) * H + h) * D + d : ((b * H + h) * S + s) * D + d;
  }
};

HeadsView heads_view(const Tensor& t, int64_t num_heads, const char* what, const char* heads_attr) {
  HeadsView v;
  if (t.rank() == 4) {
    v.B = t.dim(0), v.H = t.dim(1), v.S = t.dim(2), v.D = t.dim(3);
    if (num_heads > 0 && num_heads != v.H)
      kernel_fail(std::string("Attention: ") + heads_attr + " = " + S(num_heads) + " does not match " + what +
                  " shape " + shape_to_string(t.shape()));
  } else if (t.rank() == 3) {
    if (num_heads <= 0)
      kernel_fail(std::string("Attention: a 3-D ") + what + " needs the " + heads_attr + " attribute");
    if (t.dim(2) % num_heads != 0)
      kernel_fail(std::string("Attention: ") + what + " hidden size " + S(t.dim(2)) + " is not a multiple of " +
                  heads_attr + " = " + S(num_heads));
    v.three_d = true;
    v.B = t.dim(0), v.S = t.dim(1), v.H = num_heads, v.D = t.dim(2) / num_heads;
  } else {
    kernel_fail(std::string("Attention: ") + what + " must be 3-D or 4-D, got shape " + shape_to_string(t.shape()));
  }
  return v;
}

// Where the heads of a float Q, K or V lie, for the attention core.
HeadLayout layout_of(const HeadsView& v, const float* base) {
  if (v.three_d) return {base, v.S * v.H * v.D, v.D, v.H * v.D};
  return {base, v.H * v.S * v.D, v.S * v.D, v.D};
}

// Concatenates past [B, H, P, D] and the new [B, H, S, D] (given as a view)
// into [B, H, P + S, D].
template <class A>
std::vector<A> concat_cache(const std::vector<A>* past, int64_t P, const std::vector<A>& x, const HeadsView& v) {
  int64_t T = P + v.S;
  std::vector<A> out(static_cast<size_t>(v.B * v.H * T * v.D));
  for (int64_t b = 0; b < v.B; ++b)
    for (int64_t h = 0; h < v.H; ++h) {
      A* dst = out.data() + (b * v.H + h) * T * v.D;
      if (past) std::copy_n(past->data() + (b * v.H + h) * P * v.D, P * v.D, dst);
      for (int64_t s = 0; s < v.S; ++s)
        for (int64_t d = 0; d < v.D; ++d) dst[(P + s) * v.D + d] = x[v.index(b, h, s, d)];
    }
  return out;
}

template <class A>
void attention_typed(KernelContext& ctx, const AttentionAttrs& at) {
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& vt = ctx.input(2);
  HeadsView qv = heads_view(q, at.q_num_heads, "Q", "q_num_heads");
  HeadsView kv = heads_view(k, at.kv_num_heads, "K", "kv_num_heads");
  HeadsView vv = heads_view(vt, at.kv_num_heads, "V", "kv_num_heads");
  if (k.dtype() != q.dtype()) kernel_fail("Attention: K type " + dtype_name(k.dtype()) + " differs from Q's");
  if (kv.B != qv.B || vv.B != qv.B) kernel_fail("Attention: Q, K and V batch sizes differ");
  if (kv.D != qv.D)
    kernel_fail("Attention: Q head size " + S(qv.D) + " differs from K head size " + S(kv.D));
  if (vv.H != kv.H || vv.S != kv.S)
    kernel_fail("Attention: K " + shape_to_string(k.shape()) + " and V " + shape_to_string(vt.shape()) +
                " disagree on heads or sequence length");
  if (kv.H <= 0 || qv.H % kv.H != 0)
    kernel_fail("Attention: q_num_heads " + S(qv.H) + " is not a multiple of kv_num_heads " + S(kv.H));
  const int64_t B = qv.B, Hq = qv.H, Hkv = kv.H, Sq = qv.S, D = qv.D, Dv = vv.D;
  const int64_t group = Hq / Hkv;

  bool has_past = ctx.has_input(4) || ctx.has_input(5);
  if (has_past && !(ctx.has_input(4) && ctx.has_input(5)))
    kernel_fail("Attention: past_key and past_value must be given together");
  int64_t P = 0;
  std::vector<A> past_k, past_v;
  if (has_past) {
    const Tensor& pk = ctx.input(4);
    const Tensor& pv = ctx.input(5);
    if (pk.rank() != 4 || pk.dim(0) != B || pk.dim(1) != Hkv || pk.dim(3) != D)
      kernel_fail("Attention: past_key shape " + shape_to_string(pk.shape()) + " should be [" + S(B) + ", " + S(Hkv) +
                  ", past, " + S(D) + "]");
    P = pk.dim(2);
    if (pv.rank() != 4 || pv.dim(0) != B || pv.dim(1) != Hkv || pv.dim(2) != P || pv.dim(3) != Dv)
      kernel_fail("Attention: past_value shape " + shape_to_string(pv.shape()) + " should be [" + S(B) + ", " +
                  S(Hkv) + ", " + S(P) + ", " + S(Dv) + "]");
    past_k = load_floats<A>(pk);
    past_v = load_floats<A>(pv);
  }
  const int64_t T = P + kv.S;
  // K and V behind the cache, [B, Hkv, T, D], and the present outputs.
  std::vector<A> Kall, Vall;
  auto concat_kv = [&] {
    Kall = concat_cache<A>(has_past ? &past_k : nullptr, P, load_floats<A>(k), kv);
    Vall = concat_cache<A>(has_past ? &past_v : nullptr, P, load_floats<A>(vt), vv);
    if (ctx.wants_output(1)) store_floats(Kall.data(), ctx.allocate_output(1, k.dtype(), {B, Hkv, T, D}));
    if (ctx.wants_output(2)) store_floats(Vall.data(), ctx.allocate_output(2, vt.dtype(), {B, Hkv, T, Dv}));
  };

  // nonpad_kv_seqlen (opset 24): valid keys per batch; the causal offset follows it.
  std::vector<int64_t> nonpad;
  if (ctx.has_input(6)) {
    const Tensor& np = ctx.input(6);
    if (np.numel() != B) kernel_fail("Attention: nonpad_kv_seqlen must have batch_size = " + S(B) + " values");
    if (has_past) kernel_fail("Attention: nonpad_kv_seqlen cannot be used with past_key / past_value");
    nonpad = np.to_int64_vector();
    for (int64_t n : nonpad)
      if (n < 0 || n > T) kernel_fail("Attention: nonpad_kv_seqlen value " + S(n) + " is outside [0, " + S(T) + "]");
  }

  // attn_mask, broadcast to [B, Hq, Sq, T]; a shorter last dimension is padded with -inf.
  const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  std::vector<A> mask_vals;
  int64_t ms[4] = {0, 0, 0, 0};  // strides of the mask in [B, Hq, Sq, T] (0: broadcast)
  int64_t mask_len = T;           // keys the mask covers
  bool bool_mask = false;
  if (mask) {
    int r = static_cast<int>(mask->rank());
    if (r < 1 || r > 4) kernel_fail("Attention: attn_mask must have rank 1 to 4, got " + shape_to_string(mask->shape()));
    const int64_t full[4] = {B, Hq, Sq, T};
    int64_t stride = 1;
    for (int i = r - 1; i >= 0; --i) {
      int64_t d = mask->dim(i);
      int axis = 4 - r + i;
      bool ok = d == 1 || d == full[axis] || (axis == 3 && d < T);
      if (!ok)
        kernel_fail("Attention: attn_mask shape " + shape_to_string(mask->shape()) + " does not broadcast to [" + S(B) +
                    ", " + S(Hq) + ", " + S(Sq) + ", " + S(T) + "]");
      ms[axis] = d == 1 && full[axis] != 1 ? 0 : stride;
      if (axis == 3 && d != 1) mask_len = d;
      stride *= d;
    }
    bool_mask = mask->dtype() == DataType::Bool;
    mask_vals.resize(static_cast<size_t>(mask->numel()));
    if (bool_mask) {
      for (int64_t i = 0; i < mask->numel(); ++i)
        mask_vals[i] = mask->data<bool>()[i] ? A(0) : -std::numeric_limits<A>::infinity();
    } else if (dtype_is_float(mask->dtype())) {
      mask_vals = load_floats<A>(*mask);
    } else {
      for (int64_t i = 0; i < mask->numel(); ++i) mask_vals[i] = static_cast<A>(mask->int_at(i));
    }
  }

  const A scale = at.has_scale ? static_cast<A>(at.scale) : A(1) / std::sqrt(static_cast<A>(D));
  const A sqrt_scale = std::sqrt(scale);
  bool want_qk = ctx.wants_output(3);
  if constexpr (std::is_same_v<A, float>) {
    // The common case (float, no soft cap, window, padding lengths or QK
    // output): the GEMM + vector-softmax core the fused attention ops use.
    bool plain = at.softcap == 0.f && at.left_window < 0 && at.right_window < 0 && nonpad.empty() && !want_qk;
    if (plain && q.dtype() == DataType::Float && mask_len == T) {
      AttentionProblem p;
      p.B = B, p.N = Hq, p.Sq = Sq, p.T = T, p.Dqk = D, p.Dv = Dv;
      p.q = layout_of(qv, q.data<float>());
      if (!has_past && !ctx.wants_output(1) && !ctx.wants_output(2) && k.dtype() == DataType::Float &&
          vt.dtype() == DataType::Float) {
        p.k = layout_of(kv, k.data<float>());  // read in place
        p.v = layout_of(vv, vt.data<float>());
      } else {
        concat_kv();
        p.k = {Kall.data(), Hkv * T * D, T * D, D};
        p.v = {Vall.data(), Hkv * T * Dv, T * Dv, Dv};
      }
      p.k.group = p.v.group = group;
      p.scale = scale;
      if (mask) p.mask = {mask_vals.data(), ms[0], ms[1], ms[2], ms[3]};
      p.causal = at.is_causal != 0;
      p.past = P;
      p.filter = -std::numeric_limits<float>::infinity();
      p.zero_masked_rows = true;
      Shape out_shape = qv.three_d ? Shape{B, Sq, Hq * Dv} : Shape{B, Hq, Sq, Dv};
      p.out = ctx.allocate_output(0, DataType::Float, out_shape).data<float>();
      p.heads_first_out = !qv.three_d;
      run_attention(p, B * Hq * Sq * T * (D + Dv) > (1 << 16) ? ctx.thread_pool() : nullptr);
      return;
    }
  }
  concat_kv();
  std::vector<A> qa = load_floats<A>(q);
  const int64_t qk_mode = at.qk_mode;
  std::vector<A> qk_out(want_qk ? static_cast<size_t>(B * Hq * Sq * T) : 0);
  std::vector<A> y(static_cast<size_t>(B * Hq * Sq * Dv));
  const A neg_inf = -std::numeric_limits<A>::infinity();
  // One (batch, query head) per task: each writes its own rows of y and qk_out.
  auto run_heads = [&](int64_t r0, int64_t r1) {
    std::vector<A> scores(static_cast<size_t>(T)), qrow(static_cast<size_t>(D));
    for (int64_t bh = r0; bh < r1; ++bh) {
      const int64_t b = bh / Hq, h = bh % Hq;
      int64_t valid = nonpad.empty() ? T : nonpad[b];
      int64_t offset = nonpad.empty() ? P : nonpad[b] - Sq;
      int64_t kh = h / group;
      const A* kbase = Kall.data() + (b * Hkv + kh) * T * D;
      const A* vbase = Vall.data() + (b * Hkv + kh) * T * Dv;
      for (int64_t i = 0; i < Sq; ++i) {
        for (int64_t d = 0; d < D; ++d) qrow[d] = qa[qv.index(b, h, i, d)] * sqrt_scale;
        A* qk = want_qk ? qk_out.data() + ((b * Hq + h) * Sq + i) * T : nullptr;
        int64_t pos = offset + i;  // the query's absolute position
        for (int64_t j = 0; j < T; ++j) {
          A s = 0;
          const A* kr = kbase + j * D;
          for (int64_t d = 0; d < D; ++d) s += qrow[d] * (kr[d] * sqrt_scale);
          if (qk && qk_mode == 0) qk[j] = s;
          if (at.softcap > 0.f) s = static_cast<A>(at.softcap) * std::tanh(s / static_cast<A>(at.softcap));
          if (qk && qk_mode == 1) qk[j] = s;
          bool allowed = j < valid;
          if (at.is_causal && j > pos) allowed = false;
          if (at.left_window >= 0 && j < pos - at.left_window) allowed = false;
          if (at.right_window >= 0 && j > pos + at.right_window) allowed = false;
          A bias = allowed ? A(0) : neg_inf;
          if (mask) {
            if (j >= mask_len) bias = neg_inf;
            else bias += mask_vals[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]];
          }
          s += bias;
          if (qk && qk_mode == 2) qk[j] = s;
          scores[j] = s;
        }
        A mx = neg_inf;
        for (int64_t j = 0; j < T; ++j) mx = std::max(mx, scores[j]);
        A* yrow = y.data() + ((b * Hq + h) * Sq + i) * Dv;
        if (mx == neg_inf || std::isnan(mx)) {  // fully masked: a zero row, not NaN
          std::fill(scores.begin(), scores.end(), A(0));
        } else {
          A sum = 0;
          for (int64_t j = 0; j < T; ++j) sum += scores[j] = std::exp(scores[j] - mx);
          for (int64_t j = 0; j < T; ++j) scores[j] /= sum;
        }
        if (qk && qk_mode == 3) std::copy(scores.begin(), scores.end(), qk);
        for (int64_t j = 0; j < T; ++j) {
          A p = scores[j];
          if (p == A(0)) continue;
          const A* vr = vbase + j * Dv;
          for (int64_t d = 0; d < Dv; ++d) yrow[d] += p * vr[d];
        }
      }
    }
  };
  parallel_for(B * Hq * Sq * T * (D + Dv) > (1 << 16) ? ctx.thread_pool() : nullptr, B * Hq, run_heads);
  if (qv.three_d) {
    Tensor& out = ctx.allocate_output(0, q.dtype(), {B, Sq, Hq * Dv});
    std::vector<A> y3(y.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < Sq; ++i)
          std::copy_n(y.data() + ((b * Hq + h) * Sq + i) * Dv, Dv, y3.data() + ((b * Sq + i) * Hq + h) * Dv);
    store_floats(y3.data(), out);
  } else {
    store_floats(y.data(), ctx.allocate_output(0, q.dtype(), {B, Hq, Sq, Dv}));
  }
  if (want_qk) store_floats(qk_out.data(), ctx.allocate_output(3, q.dtype(), {B, Hq, Sq, T}));
}

KernelFactory attention_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    AttentionAttrs at;
    at.is_causal = ic.get_int("is_causal", 0);
    at.q_num_heads = ic.get_int("q_num_heads", 0);
    at.kv_num_heads = ic.get_int("kv_num_heads", 0);
    at.qk_mode = ic.get_int("qk_matmul_output_mode", 0);
    at.left_window = ic.get_int("left_window_size", -1);
    at.right_window = ic.get_int("right_window_size", -1);
    at.softcap = ic.get_float("softcap", 0.f);
    at.has_scale = ic.has("scale");
    at.scale = ic.get_float("scale", 0.f);
    if (at.qk_mode < 0 || at.qk_mode > 3)
      kernel_fail("Attention: qk_matmul_output_mode must be 0 to 3, got " + S(at.qk_mode));
    if (at.softcap < 0.f) kernel_fail("Attention: softcap must not be negative");
    int64_t sp = ic.get_int("softmax_precision", 0);
    if (sp != 0 && sp != 1 && sp != 10 && sp != 11 && sp != 16)
      kernel_fail("Attention: softmax_precision must be 1, 10, 11 or 16, got " + S(sp));
    return [at](KernelContext& ctx) {
      DataType t = ctx.input(0).dtype();
      if (t == DataType::Double) attention_typed<double>(ctx, at);
      else if (dtype_is_float(t)) attention_typed<float>(ctx, at);
      else kernel_fail("Attention: Q must be a float type, got " + dtype_name(t));
    };
  });
}

// ---- RotaryEmbedding ----

KernelFactory rotary_embedding_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    int64_t num_heads = ic.get_int("num_heads", 0);
    int64_t rot_attr = ic.get_int("rotary_embedding_dim", 0);
    bool interleaved = ic.get_int("interleaved", 0) != 0;
    return [=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const Tensor& cos_t = ctx.input(1);
      const Tensor& sin_t = ctx.input(2);
      const Tensor* pos = ctx.has_input(3) ? &ctx.input(3) : nullptr;
      if (!dtype_is_float(x.dtype())) kernel_fail("RotaryEmbedding: X must be a float type");
      int64_t B, H, Sq, D;
      bool three_d = x.rank() == 3;
      if (x.rank() == 4) {
        B = x.dim(0), H = x.dim(1), Sq = x.dim(2), D = x.dim(3);
      } else if (three_d) {
        if (num_heads <= 0) kernel_fail("RotaryEmbedding: a 3-D input needs the num_heads attribute");
        if (x.dim(2) % num_heads != 0)
          kernel_fail("RotaryEmbedding: hidden size " + S(x.dim(2)) + " is not a multiple of num_heads " + S(num_heads));
        B = x.dim(0), Sq = x.dim(1), H = num_heads, D = x.dim(2) / num_heads;
      } else {
        kernel_fail("RotaryEmbedding: X must be 3-D or 4-D, got shape " + shape_to_string(x.shape()));
      }
      int64_t rot = rot_attr > 0 ? rot_attr : D;
      if (rot > D || rot % 2 != 0)
        kernel_fail("RotaryEmbedding: rotary_embedding_dim " + S(rot) + " must be even and at most head size " + S(D));
      int64_t half = rot / 2;
      if (cos_t.shape() != sin_t.shape()) kernel_fail("RotaryEmbedding: cos_cache and sin_cache shapes differ");
      if (cos_t.rank() < 1 || cos_t.dim(cos_t.rank() - 1) != half)
        kernel_fail("RotaryEmbedding: the last dimension of cos_cache " + shape_to_string(cos_t.shape()) +
                    " should be rotary_embedding_dim / 2 = " + S(half));
      std::vector<int64_t> pids;
      if (pos) {
        if (cos_t.rank() != 2) kernel_fail("RotaryEmbedding: with position_ids the caches must be 2-D");
        if (pos->numel() != B * Sq)
          kernel_fail("RotaryEmbedding: position_ids shape " + shape_to_string(pos->shape()) + " should be [" + S(B) +
                      ", " + S(Sq) + "]");
        pids = pos->to_int64_vector();
        for (int64_t p : pids)
          if (p < 0 || p >= cos_t.dim(0))
            kernel_fail("RotaryEmbedding: position id " + S(p) + " is outside the cache of " + S(cos_t.dim(0)) + " rows");
      } else if (cos_t.rank() != 3 || cos_t.dim(0) != B || cos_t.dim(1) != Sq) {
        kernel_fail("RotaryEmbedding: without position_ids the caches must be [" + S(B) + ", " + S(Sq) + ", " +
                    S(half) + "], got " + shape_to_string(cos_t.shape()));
      }
      std::vector<float> xv = load_floats<float>(x), cv = load_floats<float>(cos_t), sv = load_floats<float>(sin_t);
      std::vector<float> out(xv.size());
      if (!pos) {
        pids.resize(static_cast<size_t>(B * Sq));
        for (int64_t i = 0; i < B * Sq; ++i) pids[i] = i;
      }
      RotaryLayout layout{B, H, Sq, D, three_d};
      rotary_rotate(xv.data(), out.data(), layout, cv.data(), sv.data(), rot, interleaved, pids);
      store_floats(out.data(), ctx.allocate_output(0, x.dtype(), x.shape()));
    };
  });
}

// ---- TensorScatter ----

KernelFactory tensor_scatter_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    int64_t axis_attr = ic.get_int("axis", -2);
    std::string mode = ic.get_string("mode", "linear");
    if (mode != "linear" && mode != "circular")
      kernel_fail("TensorScatter: mode must be 'linear' or 'circular', got '" + mode + "'");
    bool circular = mode == "circular";
    return [=](KernelContext& ctx) {
      const Tensor& past = ctx.input(0);
      const Tensor& upd = ctx.input(1);
      int64_t r = past.rank();
      if (upd.rank() != r || upd.dtype() != past.dtype())
        kernel_fail("TensorScatter: update " + shape_to_string(upd.shape()) + " must have the rank and type of past_cache " +
                    shape_to_string(past.shape()));
      if (axis_attr < -r || axis_attr >= r) kernel_fail("TensorScatter: axis " + S(axis_attr) + " is out of range");
      int64_t axis = axis_attr < 0 ? axis_attr + r : axis_attr;
      if (axis == 0) kernel_fail("TensorScatter: axis cannot be the batch dimension");
      for (int64_t d = 0; d < r; ++d)
        if (d != axis && upd.dim(d) != past.dim(d))
          kernel_fail("TensorScatter: update shape " + shape_to_string(upd.shape()) + " differs from past_cache " +
                      shape_to_string(past.shape()) + " outside axis " + S(axis));
      int64_t B = past.dim(0), maxlen = past.dim(axis), len = upd.dim(axis);
      if (len > maxlen) kernel_fail("TensorScatter: update is longer than the cache");
      std::vector<int64_t> wi(static_cast<size_t>(B), 0);
      if (ctx.has_input(2)) {
        const Tensor& w = ctx.input(2);
        if (w.numel() != B) kernel_fail("TensorScatter: write_indices must have batch_size = " + S(B) + " values");
        wi = w.to_int64_vector();
      }
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= past.dim(d);
      for (int64_t d = axis + 1; d < r; ++d) inner *= past.dim(d);
      int64_t per_batch = outer / std::max<int64_t>(B, 1);
      Tensor& out = ctx.allocate_output(0, past.dtype(), past.shape());
      dispatch_by_size(past.dtype(), [&](auto tag) {
        using E = typename decltype(tag)::type;
        const E* src = past.data<E>();
        const E* up = upd.data<E>();
        E* dst = out.data<E>();
        std::copy(src, src + past.numel(), dst);
        for (int64_t o = 0; o < outer; ++o) {
          int64_t b = o / per_batch;
          for (int64_t s = 0; s < len; ++s) {
            int64_t idx = wi[b] + s;
            if (circular) idx = ((idx % maxlen) + maxlen) % maxlen;
            if (idx < 0 || idx >= maxlen)
              kernel_fail("TensorScatter: write index " + S(idx) + " is outside the cache length " + S(maxlen));
            std::copy_n(up + (o * len + s) * inner, inner, dst + (o * maxlen + idx) * inner);
          }
        }
      });
    };
  });
}

// ---- FlexAttention (ai.onnx.preview, opset 1) ----
// Scores = Q K^T * scale -> score_mod subgraph -> Softmax -> prob_mod subgraph
// -> @ V, with the scores in softmax_precision (float, or double for double).

KernelFactory flex_attention_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::shared_ptr<const CompiledGraph> score_mod = ic.has("score_mod") ? ic.subgraph("score_mod") : nullptr;
    std::shared_ptr<const CompiledGraph> prob_mod = ic.has("prob_mod") ? ic.subgraph("prob_mod") : nullptr;
    bool has_scale = ic.has("scale");
    float scale_attr = ic.get_float("scale", 0.f);
    int64_t sp = ic.get_int("softmax_precision", 0);
    if (sp != 0 && sp != 1 && sp != 10 && sp != 11 && sp != 16)
      kernel_fail("FlexAttention: softmax_precision must be 1, 10, 11 or 16, got " + S(sp));
    return [=](KernelContext& ctx) {
      const Tensor& q = ctx.input(0);
      const Tensor& k = ctx.input(1);
      const Tensor& v = ctx.input(2);
      if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) kernel_fail("FlexAttention: Q, K and V must be 4-D");
      if (!dtype_is_float(q.dtype())) kernel_fail("FlexAttention: Q must be a float type");
      const int64_t B = q.dim(0), Hq = q.dim(1), L = q.dim(2), D = q.dim(3);
      const int64_t Hkv = k.dim(1), Sk = k.dim(2), Dv = v.dim(3);
      if (k.dim(0) != B || v.dim(0) != B || k.dim(3) != D || v.dim(1) != Hkv || v.dim(2) != Sk)
        kernel_fail("FlexAttention: shapes Q " + shape_to_string(q.shape()) + ", K " + shape_to_string(k.shape()) +
                    ", V " + shape_to_string(v.shape()) + " do not fit together");
      if (Hkv <= 0 || Hq % Hkv != 0) kernel_fail("FlexAttention: q heads must be a multiple of kv heads");
      const int64_t group = Hq / Hkv;
      DataType st = sp ? static_cast<DataType>(sp) : (q.dtype() == DataType::Double ? DataType::Double : DataType::Float);
      std::vector<double> qa = load_floats<double>(q), ka = load_floats<double>(k), va = load_floats<double>(v);
      const double scale = has_scale ? scale_attr : 1.0 / std::sqrt(static_cast<double>(D));
      Tensor scores(st, {B, Hq, L, Sk});
      std::vector<double> sc(static_cast<size_t>(B * Hq * L * Sk));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h)
          for (int64_t i = 0; i < L; ++i)
            for (int64_t j = 0; j < Sk; ++j) {
              const double* qr = qa.data() + ((b * Hq + h) * L + i) * D;
              const double* kr = ka.data() + ((b * Hkv + h / group) * Sk + j) * D;
              double d = 0;
              for (int64_t c = 0; c < D; ++c) d += qr[c] * kr[c];
              sc[((b * Hq + h) * L + i) * Sk + j] = d * scale;
            }
      auto apply = [&](const std::shared_ptr<const CompiledGraph>& g, const char* what) {
        Tensor t(st, {B, Hq, L, Sk});
        store_floats(sc.data(), t);
        std::vector<Value> out = ctx.run_subgraph(*g, {Value(t)});
        if (out.size() != 1 || !out[0].is_tensor() || out[0].tensor().shape() != t.shape())
          kernel_fail(std::string("FlexAttention: ") + what + " must return one tensor of shape " + shape_to_string(t.shape()));
        sc = load_floats<double>(out[0].tensor());
      };
      if (score_mod) apply(score_mod, "score_mod");
      else {  // round to the softmax precision as a subgraph input would be
        store_floats(sc.data(), scores);
        sc = load_floats<double>(scores);
      }
      for (int64_t r = 0; r < B * Hq * L; ++r) {
        double* row = sc.data() + r * Sk;
        double mx = -INFINITY;
        for (int64_t j = 0; j < Sk; ++j) mx = std::max(mx, row[j]);
        if (mx == -INFINITY || std::isnan(mx)) {
          std::fill(row, row + Sk, 0.0);
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < Sk; ++j) sum += row[j] = std::exp(row[j] - mx);
        for (int64_t j = 0; j < Sk; ++j) row[j] /= sum;
      }
      if (prob_mod) apply(prob_mod, "prob_mod");
      std::vector<double> y(static_cast<size_t>(B * Hq * L * Dv), 0.0);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h)
          for (int64_t i = 0; i < L; ++i) {
            double* yr = y.data() + ((b * Hq + h) * L + i) * Dv;
            const double* pr = sc.data() + ((b * Hq + h) * L + i) * Sk;
            for (int64_t j = 0; j < Sk; ++j) {
              const double* vr = va.data() + ((b * Hkv + h / group) * Sk + j) * Dv;
              for (int64_t c = 0; c < Dv; ++c) yr[c] += pr[j] * vr[c];
            }
          }
      store_floats(y.data(), ctx.allocate_output(0, q.dtype(), {B, Hq, L, Dv}));
    };
  });
}

// ---- LinearAttention (opset 27) ----

enum class LinearRule { Linear, Gated, Delta, GatedDelta };

KernelFactory linear_attention_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    int64_t hq = ic.get_int("q_num_heads", 0), hkv = ic.get_int("kv_num_heads", 0);
    float scale_attr = ic.get_float("scale", 0.f);
    std::string rule_s = ic.get_string("update_rule", "gated_delta");
    LinearRule rule;
    if (rule_s == "linear") rule = LinearRule::Linear;
    else if (rule_s == "gated") rule = LinearRule::Gated;
    else if (rule_s == "delta") rule = LinearRule::Delta;
    else if (rule_s == "gated_delta") rule = LinearRule::GatedDelta;
    else kernel_fail("LinearAttention: unknown update_rule '" + rule_s + "'");
    if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
      kernel_fail("LinearAttention: q_num_heads (" + S(hq) + ") must be a positive multiple of kv_num_heads (" + S(hkv) + ")");
    return [=](KernelContext& ctx) {
      const Tensor& q = ctx.input(0);
      const Tensor& k = ctx.input(1);
      const Tensor& v = ctx.input(2);
      if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3)
        kernel_fail("LinearAttention: query, key and value must be 3-D [B, T, H * D]");
      const int64_t B = q.dim(0), T = q.dim(1);
      if (k.dim(0) != B || v.dim(0) != B || k.dim(1) != T || v.dim(1) != T)
        kernel_fail("LinearAttention: query, key and value disagree on batch or length");
      if (q.dim(2) % hq != 0 || k.dim(2) % hkv != 0 || v.dim(2) % hkv != 0)
        kernel_fail("LinearAttention: hidden sizes are not multiples of the head counts");
      const int64_t dk = q.dim(2) / hq, dv = v.dim(2) / hkv, group = hq / hkv;
      if (k.dim(2) / hkv != dk) kernel_fail("LinearAttention: key head size differs from query head size");
      bool gated = rule == LinearRule::Gated || rule == LinearRule::GatedDelta;
      bool delta = rule == LinearRule::Delta || rule == LinearRule::GatedDelta;
      const Tensor* decay = ctx.has_input(4) ? &ctx.input(4) : nullptr;
      const Tensor* beta = ctx.has_input(5) ? &ctx.input(5) : nullptr;
      if (gated && !decay) kernel_fail("LinearAttention: update_rule '" + rule_s + "' needs the decay input");
      if (delta && !beta) kernel_fail("LinearAttention: update_rule '" + rule_s + "' needs the beta input");
      bool per_dim_decay = false;
      if (decay) {
        if (decay->rank() != 3 || decay->dim(0) != B || decay->dim(1) != T ||
            (decay->dim(2) != hkv && decay->dim(2) != hkv * dk))
          kernel_fail("LinearAttention: decay shape " + shape_to_string(decay->shape()) + " should be [B, T, H_kv] or [B, T, H_kv * d_k]");
        per_dim_decay = decay->dim(2) == hkv * dk && dk != 1;
      }
      if (beta && (beta->rank() != 3 || beta->dim(0) != B || beta->dim(1) != T || (beta->dim(2) != hkv && beta->dim(2) != 1)))
        kernel_fail("LinearAttention: beta shape " + shape_to_string(beta->shape()) + " should be [B, T, H_kv] or [B, T, 1]");
      std::vector<float> qa = load_floats<float>(q), ka = load_floats<float>(k), va = load_floats<float>(v);
      std::vector<float> ga = decay ? load_floats<float>(*decay) : std::vector<float>();
      std::vector<float> ba = beta ? load_floats<float>(*beta) : std::vector<float>();
      std::vector<float> state(static_cast<size_t>(B * hkv * dk * dv), 0.f);
      if (ctx.has_input(3)) {
        const Tensor& ps = ctx.input(3);
        if (ps.shape() != Shape{B, hkv, dk, dv})
          kernel_fail("LinearAttention: past_state shape " + shape_to_string(ps.shape()) + " should be [" + S(B) + ", " +
                      S(hkv) + ", " + S(dk) + ", " + S(dv) + "]");
        state = load_floats<float>(ps);
      }
      const float scale = scale_attr != 0.f ? scale_attr : 1.f / std::sqrt(static_cast<float>(dk));
      std::vector<float> out(static_cast<size_t>(B * T * hq * dv), 0.f), kv_read(static_cast<size_t>(dv));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t h = 0; h < hkv; ++h) {
            float* Sm = state.data() + (b * hkv + h) * dk * dv;
            const float* kt = ka.data() + (b * T + t) * hkv * dk + h * dk;
            const float* vt = va.data() + (b * T + t) * hkv * dv + h * dv;
            if (gated) {  // S <- exp(g) * S, per key dimension or per head
              for (int64_t i = 0; i < dk; ++i) {
                float g = per_dim_decay ? ga[(b * T + t) * hkv * dk + h * dk + i] : ga[(b * T + t) * decay->dim(2) + h];
                float e = std::exp(g);
                for (int64_t j = 0; j < dv; ++j) Sm[i * dv + j] *= e;
              }
            }
            if (delta) {  // S <- S + beta * k (x) (v - S^T k)
              float bt = ba[(b * T + t) * beta->dim(2) + (beta->dim(2) == 1 ? 0 : h)];
              std::fill(kv_read.begin(), kv_read.end(), 0.f);
              for (int64_t i = 0; i < dk; ++i)
                for (int64_t j = 0; j < dv; ++j) kv_read[j] += kt[i] * Sm[i * dv + j];
              for (int64_t i = 0; i < dk; ++i)
                for (int64_t j = 0; j < dv; ++j) Sm[i * dv + j] += bt * kt[i] * (vt[j] - kv_read[j]);
            } else {  // S <- S + k (x) v
              for (int64_t i = 0; i < dk; ++i)
                for (int64_t j = 0; j < dv; ++j) Sm[i * dv + j] += kt[i] * vt[j];
            }
          }
          for (int64_t h = 0; h < hq; ++h) {  // o = scale * q^T S
            const float* Sm = state.data() + (b * hkv + h / group) * dk * dv;
            const float* qt = qa.data() + (b * T + t) * hq * dk + h * dk;
            float* o = out.data() + (b * T + t) * hq * dv + h * dv;
            for (int64_t i = 0; i < dk; ++i)
              for (int64_t j = 0; j < dv; ++j) o[j] += qt[i] * Sm[i * dv + j];
            for (int64_t j = 0; j < dv; ++j) o[j] *= scale;
          }
        }
      store_floats(out.data(), ctx.allocate_output(0, q.dtype(), {B, T, hq * dv}));
      if (ctx.wants_output(1)) {
        DataType st = ctx.has_input(3) ? ctx.input(3).dtype() : q.dtype();
        store_floats(state.data(), ctx.allocate_output(1, st, {B, hkv, dk, dv}));
      }
    };
  });
}

// ---- CausalConvWithState (opset 27) ----

KernelFactory causal_conv_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::string act = ic.get_string("activation", "none");
    if (act != "none" && act != "silu" && act != "swish")
      kernel_fail("CausalConvWithState: activation must be 'silu', 'swish' or 'none', got '" + act + "'");
    bool silu = act != "none";
    return [=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const Tensor& w = ctx.input(1);
      if (x.rank() != 3) kernel_fail("CausalConvWithState: input must be [B, C, L], got " + shape_to_string(x.shape()));
      const int64_t B = x.dim(0), C = x.dim(1), L = x.dim(2);
      if (w.rank() != 3 || w.dim(0) != C || w.dim(1) != 1 || w.dim(2) < 1)
        kernel_fail("CausalConvWithState: weight shape " + shape_to_string(w.shape()) + " should be [" + S(C) + ", 1, k]");
      const int64_t K = w.dim(2), P = K - 1;
      const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
      if (bias && bias->numel() != C) kernel_fail("CausalConvWithState: bias must have " + S(C) + " values");
      std::vector<float> xa = load_floats<float>(x), wa = load_floats<float>(w);
      std::vector<float> ba = bias ? load_floats<float>(*bias) : std::vector<float>(static_cast<size_t>(C), 0.f);
      std::vector<float> past(static_cast<size_t>(B * C * P), 0.f);
      if (ctx.has_input(3)) {
        const Tensor& ps = ctx.input(3);
        if (ps.shape() != Shape{B, C, P})
          kernel_fail("CausalConvWithState: past_state shape " + shape_to_string(ps.shape()) + " should be [" + S(B) +
                      ", " + S(C) + ", " + S(P) + "]");
        past = load_floats<float>(ps);
      }
      std::vector<float> y(static_cast<size_t>(B * C * L)), present(static_cast<size_t>(B * C * P));
      std::vector<float> padded(static_cast<size_t>(P + L));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c) {
          std::copy_n(past.data() + (b * C + c) * P, P, padded.data());
          std::copy_n(xa.data() + (b * C + c) * L, L, padded.data() + P);
          const float* wc = wa.data() + c * K;
          for (int64_t t = 0; t < L; ++t) {
            float s = ba[c];
            for (int64_t j = 0; j < K; ++j) s += wc[j] * padded[t + j];
            if (silu) s = s / (1.f + std::exp(-s));
            y[(b * C + c) * L + t] = s;
          }
          std::copy_n(padded.data() + L, P, present.data() + (b * C + c) * P);
        }
      store_floats(y.data(), ctx.allocate_output(0, x.dtype(), x.shape()));
      if (ctx.wants_output(1)) store_floats(present.data(), ctx.allocate_output(1, x.dtype(), {B, C, P}));
    };
  });
}

}  // namespace

void register_attention(KernelRegistry& r) {
  r.add("LinearAttention", 27, kMaxOpset, linear_attention_factory());
  r.add("FlexAttention", 1, kMaxOpset, flex_attention_factory(), "ai.onnx.preview");
  r.add("CausalConvWithState", 27, kMaxOpset, causal_conv_factory());
  // Attention-23, -24 (nonpad_kv_seqlen) and -25 (sliding windows, current
  // through opset 28): one kernel.
  r.add("Attention", 23, 28, attention_factory());
  r.add("RotaryEmbedding", 23, 28, rotary_embedding_factory());
  r.add("TensorScatter", 24, 28, tensor_scatter_factory());
}

}  // namespace onyx
