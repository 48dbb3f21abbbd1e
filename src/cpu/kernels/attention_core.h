// Scaled dot-product attention over per-head views of Q, K and V: the core
// the com.onyx fused Attention (fused.cc) and ORT's contrib Attention,
// QAttention and MultiHeadAttention (contrib_attention.cc) share. Per
// (batch, head): scores = scale Q K^T (one GEMM), additive terms, softmax
// (vectorized), times V (one GEMM) into the head's columns of the output.
#pragma once
#include <cstdint>

#include "base/thread_pool.h"

namespace onyx {

// Where element (b, n, t, d) of a per-head Q, K or V lives: base + b * batch +
// (n / group) * head + t * row + d. group > 1: grouped-query attention, each
// K / V head serving `group` query heads.
struct HeadLayout {
  const float* base = nullptr;
  int64_t batch = 0, head = 0, row = 0, group = 1;
  const float* at(int64_t b, int64_t n) const { return base + b * batch + (n / group) * head; }
};

// An additive term over the scores [B, N, Sq, T], by strides (0: broadcast).
struct ScoreTerm {
  const float* data = nullptr;
  int64_t batch = 0, head = 0, row = 0, col = 1;
};

struct AttentionProblem {
  int64_t B = 0, N = 0, Sq = 0, T = 0, Dqk = 0, Dv = 0;
  HeadLayout q, k, v;
  // K given transposed, [.., Dqk, T] per head: element (t, d) at k.at(b, n) + d * k.row + t.
  bool k_transposed = false;
  float scale = 1.f;
  // Added in this order (ORT's order, which decides the rounding of a fully
  // masked row): mask, then the causal filter, then bias.
  ScoreTerm mask;
  bool causal = false;  // query i sees keys up to past + i; later ones get `filter` added
  int64_t past = 0;
  float filter = -10000.f;
  ScoreTerm bias;
  // A row whose every score is -inf (masked out entirely) gives zeros rather
  // than NaN (the ai.onnx Attention op's rule).
  bool zero_masked_rows = false;
  float* out = nullptr;  // [B, Sq, N * Dv], or [B, N, Sq, Dv] when heads_first_out
  bool heads_first_out = false;
};

// One task per (batch, head) on `pool` (may be null).
void run_attention(const AttentionProblem& p, ThreadPool* pool);

}  // namespace onyx
