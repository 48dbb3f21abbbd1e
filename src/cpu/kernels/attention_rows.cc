#include "cpu/kernels/attention_rows.h"

#include <algorithm>

#include "base/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's _mm512_reduce_add_ps trips -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define ONYX_ATTENTION_AVX512 1
#define ONYX_TARGET_AVX512F __attribute__((target("avx512f")))
#endif

namespace onyx {

namespace {

void scores_scalar(const float* q, const float* k, int64_t T, int64_t D, int64_t ldk, bool k_transposed, float scale,
                   float* scores) {
  if (k_transposed) {
    std::fill_n(scores, T, 0.f);
    for (int64_t d = 0; d < D; ++d)
      for (int64_t t = 0; t < T; ++t) scores[t] += q[d] * k[d * ldk + t];
    for (int64_t t = 0; t < T; ++t) scores[t] *= scale;
    return;
  }
  for (int64_t t = 0; t < T; ++t) {
    float acc = 0.f;
    for (int64_t d = 0; d < D; ++d) acc += q[d] * k[t * ldk + d];
    scores[t] = acc * scale;
  }
}

void values_scalar(const float* probs, const float* v, int64_t T, int64_t Dv, int64_t ldv, float* out) {
  std::fill_n(out, Dv, 0.f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < Dv; ++d) out[d] += probs[t] * v[t * ldv + d];
}

void block_values_scalar(const float* probs, int64_t rows, int64_t T, const float* vt, int64_t Dv, float* out,
                         int64_t ld_out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t d = 0; d < Dv; ++d) {
      float acc = 0.f;
      for (int64_t t = 0; t < T; ++t) acc += probs[r * T + t] * vt[d * T + t];
      out[r * ld_out + d] = acc;
    }
}

#ifdef ONYX_ATTENTION_AVX512

ONYX_TARGET_AVX512F __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
}

ONYX_TARGET_AVX512F void scores_avx512(const float* q, const float* k, int64_t T, int64_t D, int64_t ldk,
                                       bool k_transposed, float scale, float* scores) {
  if (k_transposed) {  // rows of K^T are contiguous over t: scores += q[d] * row d
    for (int64_t t0 = 0; t0 < T; t0 += 16) {
      const __mmask16 m = tail_mask(T - t0);
      __m512 acc = _mm512_setzero_ps();
      for (int64_t d = 0; d < D; ++d)
        acc = _mm512_fmadd_ps(_mm512_set1_ps(q[d]), _mm512_maskz_loadu_ps(m, k + d * ldk + t0), acc);
      _mm512_mask_storeu_ps(scores + t0, m, _mm512_mul_ps(acc, _mm512_set1_ps(scale)));
    }
    return;
  }
  // Four keys at a time, each a dot product over D in lanes of 16.
  int64_t t = 0;
  for (; t + 4 <= T; t += 4) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t d0 = 0; d0 < D; d0 += 16) {
      const __mmask16 m = tail_mask(D - d0);
      const __m512 qv = _mm512_maskz_loadu_ps(m, q + d0);
      for (int r = 0; r < 4; ++r)
        acc[r] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k + (t + r) * ldk + d0), acc[r]);
    }
    for (int r = 0; r < 4; ++r) scores[t + r] = _mm512_reduce_add_ps(acc[r]) * scale;
  }
  for (; t < T; ++t) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t d0 = 0; d0 < D; d0 += 16) {
      const __mmask16 m = tail_mask(D - d0);
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d0), _mm512_maskz_loadu_ps(m, k + t * ldk + d0), acc);
    }
    scores[t] = _mm512_reduce_add_ps(acc) * scale;
  }
}

ONYX_TARGET_AVX512F void values_avx512(const float* probs, const float* v, int64_t T, int64_t Dv, int64_t ldv,
                                       float* out) {
  // Up to 128 output columns stay in 8 registers while the T rows stream by.
  for (int64_t d0 = 0; d0 < Dv; d0 += 128) {
    const int64_t width = std::min<int64_t>(128, Dv - d0);
    const int vecs = static_cast<int>((width + 15) / 16);
    __m512 acc[8];
    __mmask16 mask[8];
    for (int j = 0; j < 8; ++j) {
      acc[j] = _mm512_setzero_ps();
      mask[j] = tail_mask(width - 16 * j);
    }
    for (int64_t t = 0; t < T; ++t) {
      const __m512 p = _mm512_set1_ps(probs[t]);
      const float* row = v + t * ldv + d0;
      for (int j = 0; j < vecs; ++j) acc[j] = _mm512_fmadd_ps(p, _mm512_maskz_loadu_ps(mask[j], row + 16 * j), acc[j]);
    }
    for (int j = 0; j < vecs; ++j) _mm512_mask_storeu_ps(out + d0 + 16 * j, mask[j], acc[j]);
  }
}

// Tiles of 4 rows by 4 value columns: each loaded vector of probabilities or of V^T serves
// four products (16 independent sums), where one row at a time waited on each sum's FMAs.
ONYX_TARGET_AVX512F void block_values_avx512(const float* probs, int64_t rows, int64_t T, const float* vt, int64_t Dv,
                                             float* out, int64_t ld_out) {
  for (int64_t r0 = 0; r0 < rows; r0 += 4) {
    const int nr = static_cast<int>(std::min<int64_t>(4, rows - r0));
    const float* p[4];
    for (int i = 0; i < 4; ++i) p[i] = probs + (r0 + std::min(i, nr - 1)) * T;  // past the end: repeat, unused
    for (int64_t d0 = 0; d0 < Dv; d0 += 4) {
      const int nd = static_cast<int>(std::min<int64_t>(4, Dv - d0));
      const float* v[4];
      for (int j = 0; j < 4; ++j) v[j] = vt + (d0 + std::min(j, nd - 1)) * T;
      __m512 acc[4][4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_setzero_ps();
      for (int64_t t0 = 0; t0 < T; t0 += 16) {
        const __mmask16 m = tail_mask(T - t0);
        __m512 pv[4], vv[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) pv[i] = _mm512_maskz_loadu_ps(m, p[i] + t0);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) vv[j] = _mm512_maskz_loadu_ps(m, v[j] + t0);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_fmadd_ps(pv[i], vv[j], acc[i][j]);
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j)
          if (i < nr && j < nd) out[(r0 + i) * ld_out + d0 + j] = _mm512_reduce_add_ps(acc[i][j]);
    }
  }
}

#endif

}  // namespace

void attention_block_values_narrow(const float* probs, int64_t rows, int64_t T, const float* vt, int64_t Dv,
                                   float* out, int64_t ld_out) {
#ifdef ONYX_ATTENTION_AVX512
  if (cpu_features().avx512f) return block_values_avx512(probs, rows, T, vt, Dv, out, ld_out);
#endif
  block_values_scalar(probs, rows, T, vt, Dv, out, ld_out);
}

void attention_row_scores(const float* q, const float* k, int64_t T, int64_t D, int64_t ldk, bool k_transposed,
                          float scale, float* scores) {
#ifdef ONYX_ATTENTION_AVX512
  if (cpu_features().avx512f) return scores_avx512(q, k, T, D, ldk, k_transposed, scale, scores);
#endif
  scores_scalar(q, k, T, D, ldk, k_transposed, scale, scores);
}

void attention_row_values(const float* probs, const float* v, int64_t T, int64_t Dv, int64_t ldv, float* out) {
#ifdef ONYX_ATTENTION_AVX512
  if (cpu_features().avx512f) return values_avx512(probs, v, T, Dv, ldv, out);
#endif
  values_scalar(probs, v, T, Dv, ldv, out);
}

}  // namespace onyx
