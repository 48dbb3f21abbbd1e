#include "cpu/kernels/attention_core.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "base/cpu_features.h"
#include "cpu/gemm.h"
#include "cpu/gemm_vmath.h"
#include "cpu/kernels/attention_rows.h"
#include "cpu/row_reduce.h"

namespace onyx {
namespace {

void add_term(const ScoreTerm& t, int64_t b, int64_t n, int64_t i, float* row, int64_t T) {
  if (!t.data) return;
  const float* m = t.data + b * t.batch + n * t.head + i * t.row;
  if (t.col == 1) {
    for (int64_t j = 0; j < T; ++j) row[j] += m[j];
  } else {
    for (int64_t j = 0; j < T; ++j) row[j] += m[j * t.col];
  }
}

// Query rows [i0, i0 + rows) of head (b, n); scores holds their rows.
void add_terms(const AttentionProblem& p, int64_t b, int64_t n, int64_t i0, int64_t rows, float* scores) {
  for (int64_t i = i0; i < i0 + rows; ++i) {
    float* row = scores + (i - i0) * p.T;
    add_term(p.mask, b, n, i, row, p.T);
    if (p.causal)
      for (int64_t j = p.past + i + 1; j < p.T; ++j) row[j] += p.filter;
    add_term(p.bias, b, n, i, row, p.T);
  }
}

void softmax_rows(const AttentionProblem& p, int64_t rows, float* scores, float* probs) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = scores + i * p.T;
    float* prow = probs + i * p.T;
    if (p.zero_masked_rows && p.T > 0 && rr::max(row, p.T) == -std::numeric_limits<float>::infinity())
      std::fill_n(prow, p.T, 0.f);
    else
      vm::softmax(row, prow, p.T);
  }
}

// Up to this many query rows (a decode step's one token) attend straight from K and V.
constexpr int64_t kDirectRows = 2;

float* output_row(const AttentionProblem& p, int64_t b, int64_t n, int64_t i) {
  return p.heads_first_out ? p.out + ((b * p.N + n) * p.Sq + i) * p.Dv : p.out + (b * p.Sq + i) * p.N * p.Dv + n * p.Dv;
}

void attend_rows_directly(const AttentionProblem& p, int64_t b, int64_t n, float* scores, float* probs) {
  for (int64_t i = 0; i < p.Sq; ++i) {
    attention_row_scores(p.q.at(b, n) + i * p.q.row, p.k.at(b, n), p.T, p.Dqk, p.k.row, p.k_transposed, p.scale,
                         scores);
    add_terms(p, b, n, i, 1, scores);
    softmax_rows(p, 1, scores, probs);
    attention_row_values(probs, p.v.at(b, n), p.T, p.Dv, p.v.row, output_row(p, b, n, i));
  }
}

// Query rows per task: a block's scores and probabilities (2 x rows x T floats) stay in L2.
// With one block per head, long sequences (Whisper's 1500 frames: 9 MB of scores per head)
// streamed every score through memory three times.
int64_t query_block_rows(const AttentionProblem& p) {
  constexpr int64_t kScoreFloats = 32 * 1024;  // 128 KB of scores, as much again of probabilities
  const int64_t rows = std::max<int64_t>(kScoreFloats / std::max<int64_t>(p.T, 1), 16);
  return std::min(rows, std::max<int64_t>(p.Sq, 1));
}

// Value heads at most this wide are multiplied row by row as dot products with V^T: the
// GEMM's 32-wide panels would spend 7 of every 8 lanes on padding for a diffusion UNet's
// heads of 4 (and its packing copied V as often).
constexpr int64_t kNarrowValues = 16;

bool narrow_values(const AttentionProblem& p) { return p.Dv <= kNarrowValues && cpu_features().avx512f; }

// V^T [Dv, T] of head (b, n), contiguous.
void transpose_values(const AttentionProblem& p, int64_t b, int64_t n, std::vector<float>& vt) {
  vt.resize(static_cast<size_t>(p.Dv * p.T));
  const float* v = p.v.at(b, n);
  for (int64_t t = 0; t < p.T; ++t)
    for (int64_t d = 0; d < p.Dv; ++d) vt[d * p.T + t] = v[t * p.v.row + d];
}

}  // namespace

void run_attention(const AttentionProblem& p, ThreadPool* pool) {
  const int64_t ld_out = p.heads_first_out ? p.Dv : p.N * p.Dv;
  const int64_t block = query_block_rows(p), blocks = (p.Sq + block - 1) / block;
  parallel_for(pool, p.B * p.N * blocks, [&](int64_t t0, int64_t t1) {
    // The probabilities get their own buffer: written over the scores, the softmax of 65-wide
    // rows ran 2x slower than out of place.
    thread_local std::vector<float> scores, probs, v_transposed;
    const bool narrow = narrow_values(p);
    if (scores.size() < static_cast<size_t>(block * p.T)) scores.resize(static_cast<size_t>(block * p.T));
    if (probs.size() < static_cast<size_t>(block * p.T)) probs.resize(static_cast<size_t>(block * p.T));
    // K^T and V packed once per head for all of its blocks this task runs.
    PackedB kt, v;
    int64_t packed_head = -1;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t head = t / blocks, b = head / p.N, n = head % p.N;
      const int64_t i0 = t % blocks * block, rows = std::min(block, p.Sq - i0);
      if (p.Sq <= kDirectRows) {
        attend_rows_directly(p, b, n, scores.data(), probs.data());
        continue;
      }
      if (head != packed_head) {
        kt = gemm_pack_b(!p.k_transposed, p.Dqk, p.T, p.k.at(b, n), p.k.row);
        if (narrow) transpose_values(p, b, n, v_transposed);
        else v = gemm_pack_b(false, p.T, p.Dv, p.v.at(b, n), p.v.row);
        packed_head = head;
      }
      gemm_f32_packed(false, rows, p.scale, p.q.at(b, n) + i0 * p.q.row, p.q.row, kt, 0.f, scores.data(), p.T);
      add_terms(p, b, n, i0, rows, scores.data());
      softmax_rows(p, rows, scores.data(), probs.data());
      if (narrow) {
        attention_block_values_narrow(probs.data(), rows, p.T, v_transposed.data(), p.Dv, output_row(p, b, n, i0),
                                      ld_out);
      } else {
        gemm_f32_packed(false, rows, 1.f, probs.data(), p.T, v, 0.f, output_row(p, b, n, i0), ld_out);
      }
    }
  });
}

}  // namespace onyx
