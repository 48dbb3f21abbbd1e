// GroupQueryAttention (com.microsoft), as ORT 1.31's CPU kernel computes it:
// causal attention of new tokens over a KV cache [B, kv_heads, len, D] in
// BNSH, query heads grouped onto kv heads, per-batch lengths from seqlens_k
// (total length - 1), optional rotary on Q and K, packed QKV, local window,
// softcap, attention bias, smooth softmax / per-head sinks. Present K/V rows
// past a batch's length are zero, as ORT leaves them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/float_values.h"
#include "cpu/gemm.h"
#include "cpu/kernels/rotary.h"

namespace onyx {
namespace {

std::string S(int64_t v) { return std::to_string(v); }

struct GqaAttrs {
  int64_t num_heads = 0, kv_num_heads = 0, local_window = -1;
  float scale = 0.f, softcap = 0.f;
  bool do_rotary = false, interleaved = false, smooth_softmax = false;
};

// Inputs by position in the op's signature.
enum GqaInput { kQuery, kKey, kValue, kPastKey, kPastValue, kSeqlensK, kTotalLen, kCos, kSin, kPositionIds, kBias, kHeadSink };

struct GqaDims {
  int64_t B = 0, S = 0, D = 0, Hq = 0, Hkv = 0, P = 0, T = 0, present = 0;
  bool first_prompt = false;
};

// Q [B, S, Hq * D], K and V [B, S, Hkv * D], from separate inputs or packed QKV.
void load_qkv(KernelContext& ctx, const GqaAttrs& at, GqaDims& d, std::vector<float>& q, std::vector<float>& k,
              std::vector<float>& v) {
  const Tensor& query = ctx.input(kQuery);
  if (query.rank() != 3) kernel_fail("GroupQueryAttention: query must be 3-D [B, S, hidden], got " + shape_to_string(query.shape()));
  d.B = query.dim(0), d.S = query.dim(1), d.Hq = at.num_heads, d.Hkv = at.kv_num_heads;
  const bool packed = !ctx.has_input(kKey);
  const int64_t heads = packed ? d.Hq + 2 * d.Hkv : d.Hq;
  if (query.dim(2) % heads != 0)
    kernel_fail("GroupQueryAttention: query hidden size " + S(query.dim(2)) + " is not a multiple of " + S(heads) +
                (packed ? " (num_heads + 2 * kv_num_heads, packed QKV)" : " (num_heads)"));
  d.D = query.dim(2) / heads;
  std::vector<float> all = load_floats<float>(query);
  if (!packed) {
    if (!ctx.has_input(kValue)) kernel_fail("GroupQueryAttention: key given without value");
    const Tensor& key = ctx.input(kKey);
    const Tensor& value = ctx.input(kValue);
    Shape want{d.B, d.S, d.Hkv * d.D};
    if (key.shape() != want || value.shape() != want)
      kernel_fail("GroupQueryAttention: key " + shape_to_string(key.shape()) + " and value " + shape_to_string(value.shape()) +
                  " should be " + shape_to_string(want));
    q = std::move(all);
    k = load_floats<float>(key);
    v = load_floats<float>(value);
    return;
  }
  const int64_t qw = d.Hq * d.D, kw = d.Hkv * d.D;
  q.resize(static_cast<size_t>(d.B * d.S * qw));
  k.resize(static_cast<size_t>(d.B * d.S * kw));
  v.resize(k.size());
  for (int64_t t = 0; t < d.B * d.S; ++t) {
    const float* row = all.data() + t * (qw + 2 * kw);
    std::copy_n(row, qw, q.data() + t * qw);
    std::copy_n(row + qw, kw, k.data() + t * kw);
    std::copy_n(row + qw + kw, kw, v.data() + t * kw);
  }
}

// Each batch's cached length before the new tokens. A first prompt (new
// tokens = total length) starts at 0 and may be right-padded; afterwards
// seqlens_k + 1 - S.
std::vector<int64_t> past_lengths(KernelContext& ctx, GqaDims& d, std::vector<int64_t>& totals) {
  const Tensor& sl = ctx.input(kSeqlensK);
  const Tensor& tl = ctx.input(kTotalLen);
  if (sl.dtype() != DataType::Int32 || sl.numel() != d.B)
    kernel_fail("GroupQueryAttention: seqlens_k must be " + S(d.B) + " int32 values, got " + dtype_name(sl.dtype()) + " " +
                shape_to_string(sl.shape()));
  if (tl.dtype() != DataType::Int32 || tl.numel() != 1)
    kernel_fail("GroupQueryAttention: total_sequence_length must be one int32, got " + dtype_name(tl.dtype()) + " " +
                shape_to_string(tl.shape()));
  d.T = tl.int_at(0);
  if (d.T < d.S) kernel_fail("GroupQueryAttention: total_sequence_length " + S(d.T) + " is less than the new tokens " + S(d.S));
  if (d.P > 0 && d.T != d.P + d.S && d.T > d.P)
    kernel_fail("GroupQueryAttention: total_sequence_length " + S(d.T) + " must be past length " + S(d.P) + " + new tokens " +
                S(d.S) + " (growing cache) or at most the past length (fixed-size cache)");
  d.present = std::max(d.P, d.T);
  d.first_prompt = d.S == d.T;
  std::vector<int64_t> past(static_cast<size_t>(d.B));
  std::vector<int64_t> lens = sl.to_int64_vector();
  totals.resize(static_cast<size_t>(d.B));
  for (int64_t b = 0; b < d.B; ++b) {
    int64_t total = totals[b] = lens[b] + 1;
    past[b] = d.first_prompt ? 0 : total - d.S;
    if (total < 1 || total > d.T || past[b] < 0 || past[b] + d.S > d.present)
      kernel_fail("GroupQueryAttention: seqlens_k[" + S(b) + "] = " + S(lens[b]) + " does not fit " + S(d.S) +
                  " new tokens in total_sequence_length " + S(d.T));
  }
  return past;
}

void apply_rotary(KernelContext& ctx, const GqaAttrs& at, const GqaDims& d, const std::vector<int64_t>& past,
                  std::vector<float>& q, std::vector<float>& k) {
  if (!ctx.has_input(kCos) || !ctx.has_input(kSin)) kernel_fail("GroupQueryAttention: do_rotary needs cos_cache and sin_cache");
  const Tensor& c = ctx.input(kCos);
  const Tensor& s = ctx.input(kSin);
  if (c.rank() != 2 || c.shape() != s.shape() || 2 * c.dim(1) > d.D)
    kernel_fail("GroupQueryAttention: cos_cache " + shape_to_string(c.shape()) + " and sin_cache " + shape_to_string(s.shape()) +
                " must both be [max_position, rotary_dim / 2] with rotary_dim <= head size " + S(d.D));
  std::vector<int64_t> rows(static_cast<size_t>(d.B * d.S));
  if (ctx.has_input(kPositionIds)) {
    const Tensor& p = ctx.input(kPositionIds);
    if (p.numel() != d.B * d.S)
      kernel_fail("GroupQueryAttention: position_ids shape " + shape_to_string(p.shape()) + " should be [" + S(d.B) + ", " + S(d.S) + "]");
    rows = p.to_int64_vector();
  } else {
    for (int64_t b = 0; b < d.B; ++b)
      for (int64_t i = 0; i < d.S; ++i) rows[b * d.S + i] = past[b] + i;
  }
  for (int64_t r : rows)
    if (r < 0 || r >= c.dim(0))
      kernel_fail("GroupQueryAttention: position " + S(r) + " is outside the rotary cache of " + S(c.dim(0)) + " rows");
  std::vector<float> cv = load_floats<float>(c), sv = load_floats<float>(s);
  const int64_t rot = 2 * c.dim(1);
  rotary_rotate(q.data(), q.data(), RotaryLayout{d.B, d.Hq, d.S, d.D, true}, cv.data(), sv.data(), rot, at.interleaved, rows);
  rotary_rotate(k.data(), k.data(), RotaryLayout{d.B, d.Hkv, d.S, d.D, true}, cv.data(), sv.data(), rot, at.interleaved, rows);
}

// Where present output `out` is built: in the output tensor itself when it
// is float, else in `scratch` (stored at the end).
float* present_buffer(KernelContext& ctx, int out, DataType dt, const GqaDims& d, std::vector<float>& scratch) {
  if (dt == DataType::Float && ctx.wants_output(out))
    return ctx.allocate_output(out, dt, {d.B, d.Hkv, d.present, d.D}).data<float>();
  scratch.resize(static_cast<size_t>(d.B * d.Hkv * d.present * d.D));
  return scratch.data();
}

// present [B, Hkv, present, D]: the past's first past[b] rows, then the new tokens, then zeros.
void build_present(KernelContext& ctx, int input, const GqaDims& d, const std::vector<int64_t>& past,
                   const std::vector<float>& fresh, float* out) {
  std::vector<float> converted;
  const float* old = nullptr;
  if (ctx.has_input(input)) {
    const Tensor& t = ctx.input(input);
    old = t.dtype() == DataType::Float ? t.data<float>() : (converted = load_floats<float>(t)).data();
  }
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.Hkv; ++h) {
      float* dst = out + (b * d.Hkv + h) * d.present * d.D;
      if (old) std::copy_n(old + (b * d.Hkv + h) * d.P * d.D, past[b] * d.D, dst);
      for (int64_t i = 0; i < d.S; ++i)
        std::copy_n(fresh.data() + ((b * d.S + i) * d.Hkv + h) * d.D, d.D, dst + (past[b] + i) * d.D);
      std::fill(dst + (past[b] + d.S) * d.D, dst + d.present * d.D, 0.f);
    }
}

void gqa_run(KernelContext& ctx, const GqaAttrs& at) {
  GqaDims d;
  std::vector<float> q, k, v;
  load_qkv(ctx, at, d, q, k, v);
  const DataType dt = ctx.input(kQuery).dtype();
  const bool has_past = ctx.has_input(kPastKey) || ctx.has_input(kPastValue);
  if (has_past) {
    if (!ctx.has_input(kPastKey) || !ctx.has_input(kPastValue))
      kernel_fail("GroupQueryAttention: past_key and past_value must be given together");
    const Tensor& pk = ctx.input(kPastKey);
    d.P = pk.rank() == 4 ? pk.dim(2) : 0;
    Shape want{d.B, d.Hkv, d.P, d.D};
    if (pk.shape() != want || ctx.input(kPastValue).shape() != want)
      kernel_fail("GroupQueryAttention: past_key " + shape_to_string(pk.shape()) + " and past_value " +
                  shape_to_string(ctx.input(kPastValue).shape()) + " should be [" + S(d.B) + ", " + S(d.Hkv) + ", past, " + S(d.D) + "]");
  }
  std::vector<int64_t> totals;
  std::vector<int64_t> past = past_lengths(ctx, d, totals);
  if (at.do_rotary) apply_rotary(ctx, at, d, past, q, k);
  std::vector<float> pk_scratch, pv_scratch;
  float* pk = present_buffer(ctx, 1, dt, d, pk_scratch);
  float* pv = present_buffer(ctx, 2, dt, d, pv_scratch);
  build_present(ctx, kPastKey, d, past, k, pk);
  build_present(ctx, kPastValue, d, past, v, pv);

  const int64_t T = d.present, group = d.Hq / d.Hkv;
  std::vector<float> bias, sinks;
  int64_t bias_b = 0, bias_h = 0, bias_T = 0;
  if (ctx.has_input(kBias)) {
    const Tensor& ab = ctx.input(kBias);
    if (ab.rank() != 4 || (ab.dim(0) != 1 && ab.dim(0) != d.B) || (ab.dim(1) != 1 && ab.dim(1) != d.Hq) || ab.dim(2) != d.S ||
        ab.dim(3) < d.T)
      kernel_fail("GroupQueryAttention: attention_bias shape " + shape_to_string(ab.shape()) + " should be [" + S(d.B) +
                  " or 1, " + S(d.Hq) + " or 1, " + S(d.S) + ", " + S(d.T) + "]");
    bias = load_floats<float>(ab);
    bias_T = ab.dim(3);
    bias_h = ab.dim(1) == 1 ? 0 : d.S * bias_T;
    bias_b = ab.dim(0) == 1 ? 0 : ab.dim(1) * d.S * bias_T;
  }
  if (ctx.has_input(kHeadSink)) {
    const Tensor& hs = ctx.input(kHeadSink);
    if (hs.numel() != d.Hq) kernel_fail("GroupQueryAttention: head_sink must have num_heads = " + S(d.Hq) + " values");
    sinks = load_floats<float>(hs);
  }
  const float scale = at.scale != 0.f ? at.scale : 1.f / std::sqrt(static_cast<float>(d.D));
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> y(static_cast<size_t>(d.B * d.S * d.Hq * d.D), 0.f);
  // One (batch, kv head) per task: the query heads sharing it are gathered
  // into [group * S, D] rows, so K and V pass through SGEMM once per kv head.
  auto kv_heads = [&](int64_t r0, int64_t r1) {
    std::vector<float> qg, scores, yg;
    for (int64_t bk = r0; bk < r1; ++bk) {
      const int64_t b = bk / d.Hkv, kh = bk % d.Hkv, rows = group * d.S;
      const float* kb = pk + bk * T * d.D;
      const float* vb = pv + bk * T * d.D;
      // Keys any of the tokens sees: up to the last one's position.
      const int64_t keys = std::min(past[b] + d.S, totals[b]);
      qg.resize(static_cast<size_t>(rows * d.D));
      for (int64_t g = 0; g < group; ++g)
        for (int64_t i = 0; i < d.S; ++i)
          std::copy_n(q.data() + ((b * d.S + i) * d.Hq + kh * group + g) * d.D, d.D, qg.data() + (g * d.S + i) * d.D);
      scores.resize(static_cast<size_t>(rows * keys));
      gemm_f32(false, true, rows, keys, d.D, scale, qg.data(), d.D, kb, d.D, 0.f, scores.data(), keys);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kh * group + g;
        const bool sink = at.smooth_softmax || !sinks.empty();
        const float sink_logit = sinks.empty() ? 0.f : sinks[h];
        for (int64_t i = 0; i < d.S; ++i) {
          float* row = scores.data() + (g * d.S + i) * keys;
          // The token's position; it sees keys up to there, and padding
          // queries of a right-padded prompt see the batch's valid keys only.
          const int64_t pos = std::min(past[b] + i, totals[b] - 1);
          const int64_t first = at.local_window > 0 ? std::max<int64_t>(0, pos - at.local_window + 1) : 0;
          float mx = sink ? sink_logit : neg_inf;  // smooth softmax / sinks: one more logit in the denominator only
          for (int64_t j = first; j <= pos; ++j) {
            float x = row[j];
            if (at.softcap > 0.f) x = at.softcap * std::tanh(x / at.softcap);
            if (!bias.empty()) x += bias[b * bias_b + h * bias_h + i * bias_T + j];
            row[j] = x;
            mx = std::max(mx, x);
          }
          float sum = sink ? std::exp(sink_logit - mx) : 0.f;
          for (int64_t j = first; j <= pos; ++j) sum += row[j] = std::exp(row[j] - mx);
          const float inv = 1.f / sum;
          std::fill(row, row + first, 0.f);
          for (int64_t j = first; j <= pos; ++j) row[j] *= inv;
          std::fill(row + pos + 1, row + keys, 0.f);
        }
      }
      yg.resize(static_cast<size_t>(rows * d.D));
      gemm_f32(false, false, rows, d.D, keys, 1.f, scores.data(), keys, vb, d.D, 0.f, yg.data(), d.D);
      for (int64_t g = 0; g < group; ++g)
        for (int64_t i = 0; i < d.S; ++i)
          std::copy_n(yg.data() + (g * d.S + i) * d.D, d.D, y.data() + ((b * d.S + i) * d.Hq + kh * group + g) * d.D);
    }
  };
  parallel_for(d.B * d.Hq * d.S * T * d.D > (1 << 15) ? ctx.thread_pool() : nullptr, d.B * d.Hkv, kv_heads);
  store_floats(y.data(), ctx.allocate_output(0, dt, {d.B, d.S, d.Hq * d.D}));
  if (!pk_scratch.empty() && ctx.wants_output(1)) store_floats(pk, ctx.allocate_output(1, dt, {d.B, d.Hkv, T, d.D}));
  if (!pv_scratch.empty() && ctx.wants_output(2)) store_floats(pv, ctx.allocate_output(2, dt, {d.B, d.Hkv, T, d.D}));
}

KernelFactory gqa_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    GqaAttrs at;
    at.num_heads = ic.get_int("num_heads", 0);
    at.kv_num_heads = ic.get_int("kv_num_heads", 0);
    at.local_window = ic.get_int("local_window_size", -1);
    at.scale = ic.get_float("scale", 0.f);
    at.softcap = ic.get_float("softcap", 0.f);
    at.do_rotary = ic.get_int("do_rotary", 0) != 0;
    at.interleaved = ic.get_int("rotary_interleaved", 0) != 0;
    at.smooth_softmax = ic.get_int("smooth_softmax", 0) != 0;
    if (at.num_heads <= 0 || at.kv_num_heads <= 0 || at.num_heads % at.kv_num_heads != 0)
      kernel_fail("GroupQueryAttention: num_heads (" + S(at.num_heads) + ") must be a positive multiple of kv_num_heads (" +
                  S(at.kv_num_heads) + ")");
    if (at.softcap < 0.f) kernel_fail("GroupQueryAttention: softcap must not be negative");
    if (ic.get_int("qk_output", 0) != 0) kernel_fail("GroupQueryAttention: qk_output is not supported");
    return [at](KernelContext& ctx) {
      DataType t = ctx.input(kQuery).dtype();
      if (!dtype_is_float(t) || t == DataType::Double)
        kernel_fail("GroupQueryAttention: query must be float, float16 or bfloat16, got " + dtype_name(t));
      gqa_run(ctx, at);
    };
  });
}

}  // namespace

void register_contrib_gqa(KernelRegistry& r) {
  r.add("GroupQueryAttention", 1, kMaxOpset, gqa_factory(), "com.microsoft");
}

}  // namespace onyx
