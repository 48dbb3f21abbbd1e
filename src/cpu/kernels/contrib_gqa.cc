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
#include "cpu/gemm_vmath.h"
#include "cpu/kernels/rotary.h"

namespace onyx {
namespace {

std::string S(int64_t v) { return std::to_string(v); }

// New tokens from which a call runs as a prompt (attend_blocks): blocks of
// this many query rows per task.
constexpr int64_t kPromptBlock = 32;

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
  std::vector<float> c_scratch, s_scratch;
  const float* cv = float_values(c, c_scratch);
  const float* sv = float_values(s, s_scratch);
  const int64_t rot = 2 * c.dim(1);
  rotary_rotate(q.data(), q.data(), RotaryLayout{d.B, d.Hq, d.S, d.D, true}, cv, sv, rot, at.interleaved, rows);
  rotary_rotate(k.data(), k.data(), RotaryLayout{d.B, d.Hkv, d.S, d.D, true}, cv, sv, rot, at.interleaved, rows);
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
    old = float_values(t, converted);
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

// What turns a row of scores into attention weights: the causal limit per
// batch, local window, softcap, bias, sinks.
struct ScoreRules {
  const GqaAttrs& at;
  const std::vector<float>& bias;
  int64_t bias_b, bias_h, bias_T;
  const std::vector<float>& sinks;
  const std::vector<int64_t>& past;
  const std::vector<int64_t>& totals;

  // Softmax of row[0, keys) in place for token i of batch b, query head h:
  // keys outside [first, pos] get 0.
  void weights(float* row, int64_t keys, int64_t b, int64_t h, int64_t i) const {
    // The token's position; it sees keys up to there, and padding queries of
    // a right-padded prompt see the batch's valid keys only.
    const int64_t pos = std::min(past[b] + i, totals[b] - 1);
    const int64_t first = at.local_window > 0 ? std::max<int64_t>(0, pos - at.local_window + 1) : 0;
    const bool sink = at.smooth_softmax || !sinks.empty();
    std::fill(row, row + first, 0.f);
    std::fill(row + pos + 1, row + keys, 0.f);
    if (!sink && at.softcap <= 0.f && bias.empty()) return vm::softmax(row + first, row + first, pos + 1 - first);
    const float sink_logit = sinks.empty() ? 0.f : sinks[h];
    float mx = sink ? sink_logit : -std::numeric_limits<float>::infinity();  // smooth softmax / sinks: one more logit
    for (int64_t j = first; j <= pos; ++j) {                                 // in the denominator only
      float x = row[j];
      if (at.softcap > 0.f) x = at.softcap * std::tanh(x / at.softcap);
      if (!bias.empty()) x += bias[b * bias_b + h * bias_h + i * bias_T + j];
      row[j] = x;
      mx = std::max(mx, x);
    }
    float sum = sink ? std::exp(sink_logit - mx) : 0.f;
    for (int64_t j = first; j <= pos; ++j) sum += row[j] = std::exp(row[j] - mx);
    const float inv = 1.f / sum;
    for (int64_t j = first; j <= pos; ++j) row[j] *= inv;
  }
};

// Keys any token of batch b up to new token i_end - 1 sees.
int64_t keys_seen(const ScoreRules& r, int64_t b, int64_t i_end) {
  return std::min(r.past[b] + i_end, r.totals[b]);
}

// Few new tokens (decode): one (batch, kv head) per task, the query heads
// sharing it gathered into [group * S, D] rows, so K and V pass through SGEMM
// once per kv head.
void attend_grouped(const GqaDims& d, const ScoreRules& r, float scale, const float* q, const float* pk,
                    const float* pv, float* y, ThreadPool* pool) {
  const int64_t T = d.present, group = d.Hq / d.Hkv;
  parallel_for(pool, d.B * d.Hkv, [&](int64_t r0, int64_t r1) {
    std::vector<float> qg, scores, yg;
    for (int64_t bk = r0; bk < r1; ++bk) {
      const int64_t b = bk / d.Hkv, kh = bk % d.Hkv, rows = group * d.S, keys = keys_seen(r, b, d.S);
      qg.resize(static_cast<size_t>(rows * d.D));
      for (int64_t g = 0; g < group; ++g)
        for (int64_t i = 0; i < d.S; ++i)
          std::copy_n(q + ((b * d.S + i) * d.Hq + kh * group + g) * d.D, d.D, qg.data() + (g * d.S + i) * d.D);
      scores.resize(static_cast<size_t>(rows * keys));
      gemm_f32(false, true, rows, keys, d.D, scale, qg.data(), d.D, pk + bk * T * d.D, d.D, 0.f, scores.data(), keys);
      for (int64_t g = 0; g < group; ++g)
        for (int64_t i = 0; i < d.S; ++i) r.weights(scores.data() + (g * d.S + i) * keys, keys, b, kh * group + g, i);
      yg.resize(static_cast<size_t>(rows * d.D));
      gemm_f32(false, false, rows, d.D, keys, 1.f, scores.data(), keys, pv + bk * T * d.D, d.D, 0.f, yg.data(), d.D);
      for (int64_t g = 0; g < group; ++g)
        for (int64_t i = 0; i < d.S; ++i)
          std::copy_n(yg.data() + (g * d.S + i) * d.D, d.D, y + ((b * d.S + i) * d.Hq + kh * group + g) * d.D);
    }
  });
}

// One (batch, kv head)'s keys and values packed for SGEMM in chunks of
// kPromptBlock keys: K^T chunks [D, keys] give score columns, V chunks
// [keys, D] partial sums of the output.
struct PackedKv {
  std::vector<PackedB> keys, values;
};

PackedKv pack_kv(const float* k, const float* v, int64_t T, int64_t D) {
  PackedKv p;
  for (int64_t j0 = 0; j0 < T; j0 += kPromptBlock) {
    const int64_t n = std::min(kPromptBlock, T - j0);
    p.keys.push_back(gemm_pack_b(true, D, n, k + j0 * D, D));
    p.values.push_back(gemm_pack_b(false, n, D, v + j0 * D, D));
  }
  return p;
}

// A prompt: one (batch, query head, block of kPromptBlock tokens) per task,
// Q read and Y written in place (row stride Hq * D), K and V packed once per
// kv head. A block multiplies only the key chunks its last token sees, so
// causal attention does about half the work of the full square, and its
// scores stay in cache.
void attend_blocks(const GqaDims& d, const ScoreRules& r, float scale, const float* q, const float* pk,
                   const float* pv, float* y, ThreadPool* pool) {
  const int64_t T = d.present, group = d.Hq / d.Hkv, blocks = (d.S + kPromptBlock - 1) / kPromptBlock;
  const int64_t ld = d.Hq * d.D, ld_scores = (T + kPromptBlock - 1) / kPromptBlock * kPromptBlock;
  std::vector<PackedKv> kv(static_cast<size_t>(d.B * d.Hkv));
  parallel_for(pool, d.B * d.Hkv, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) kv[i] = pack_kv(pk + i * T * d.D, pv + i * T * d.D, T, d.D);
  });
  parallel_for(pool, d.B * d.Hq * blocks, [&](int64_t t0, int64_t t1) {
    std::vector<float> scores;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (d.Hq * blocks), h = t / blocks % d.Hq, i0 = t % blocks * kPromptBlock;
      const int64_t rows = std::min(kPromptBlock, d.S - i0);
      const int64_t chunks = (keys_seen(r, b, i0 + rows) + kPromptBlock - 1) / kPromptBlock;
      const PackedKv& p = kv[b * d.Hkv + h / group];
      const float* qb = q + (b * d.S + i0) * ld + h * d.D;
      float* yb = y + (b * d.S + i0) * ld + h * d.D;  // chunks >= 1: every batch sees a key (past_lengths)
      scores.resize(static_cast<size_t>(rows * ld_scores));
      for (int64_t c = 0; c < chunks; ++c)
        gemm_f32_packed(false, rows, scale, qb, ld, p.keys[c], 0.f, scores.data() + c * kPromptBlock, ld_scores);
      const int64_t keys = std::min(T, chunks * kPromptBlock);  // the chunks' keys: those past the block's last get 0
      for (int64_t i = 0; i < rows; ++i) r.weights(scores.data() + i * ld_scores, keys, b, h, i0 + i);
      for (int64_t c = 0; c < chunks; ++c)
        gemm_f32_packed(false, rows, 1.f, scores.data() + c * kPromptBlock, ld_scores, p.values[c], c ? 1.f : 0.f, yb,
                        ld);
    }
  });
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

  const int64_t T = d.present;
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
  const ScoreRules rules{at, bias, bias_b, bias_h, bias_T, sinks, past, totals};
  // Every output row is written (a float output directly).
  Tensor& out = ctx.allocate_output(0, dt, {d.B, d.S, d.Hq * d.D});
  std::vector<float> y_scratch;
  if (dt != DataType::Float) y_scratch.resize(static_cast<size_t>(out.numel()));
  float* y = dt == DataType::Float ? out.data<float>() : y_scratch.data();
  ThreadPool* pool = d.B * d.Hq * d.S * T * d.D > (1 << 15) ? ctx.thread_pool() : nullptr;
  if (d.S >= kPromptBlock) attend_blocks(d, rules, scale, q.data(), pk, pv, y, pool);
  else attend_grouped(d, rules, scale, q.data(), pk, pv, y, pool);
  if (!y_scratch.empty()) store_floats(y, out);
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
