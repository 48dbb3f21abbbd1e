#include "cpu/kernels/attention_core.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/gemm_vmath.h"
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

void add_terms(const AttentionProblem& p, int64_t b, int64_t n, float* scores) {
  for (int64_t i = 0; i < p.Sq; ++i) {
    float* row = scores + i * p.T;
    add_term(p.mask, b, n, i, row, p.T);
    if (p.causal)
      for (int64_t j = p.past + i + 1; j < p.T; ++j) row[j] += p.filter;
    add_term(p.bias, b, n, i, row, p.T);
  }
}

void softmax_rows(const AttentionProblem& p, float* scores, float* probs) {
  for (int64_t i = 0; i < p.Sq; ++i) {
    float* row = scores + i * p.T;
    float* prow = probs + i * p.T;
    if (p.zero_masked_rows && p.T > 0 && rr::max(row, p.T) == -std::numeric_limits<float>::infinity())
      std::fill_n(prow, p.T, 0.f);
    else
      vm::softmax(row, prow, p.T);
  }
}

}  // namespace

void run_attention(const AttentionProblem& p, ThreadPool* pool) {
  const int64_t ld_out = p.heads_first_out ? p.Dv : p.N * p.Dv;
  parallel_for(pool, p.B * p.N, [&](int64_t t0, int64_t t1) {
    // The probabilities get their own buffer: written over the scores, the softmax of 65-wide
    // rows ran 2x slower than out of place.
    thread_local std::vector<float> scores, probs;
    if (scores.size() < static_cast<size_t>(p.Sq * p.T)) scores.resize(static_cast<size_t>(p.Sq * p.T));
    if (probs.size() < static_cast<size_t>(p.Sq * p.T)) probs.resize(static_cast<size_t>(p.Sq * p.T));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / p.N, n = t % p.N;
      gemm_f32(false, !p.k_transposed, p.Sq, p.T, p.Dqk, p.scale, p.q.at(b, n), p.q.row, p.k.at(b, n), p.k.row, 0.f,
               scores.data(), p.T);
      add_terms(p, b, n, scores.data());
      softmax_rows(p, scores.data(), probs.data());
      float* out = p.heads_first_out ? p.out + (b * p.N + n) * p.Sq * p.Dv : p.out + b * p.Sq * ld_out + n * p.Dv;
      gemm_f32(false, false, p.Sq, p.Dv, p.T, 1.f, probs.data(), p.T, p.v.at(b, n), p.v.row, 0.f, out, ld_out);
    }
  });
}

}  // namespace onyx
