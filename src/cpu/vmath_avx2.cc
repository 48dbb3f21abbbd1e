#include "cpu/vmath_avx2.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "cpu/exp_avx2.h"

#define ONYX_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace onyx::vm::avx2 {
namespace {

// Lanes [0, left) of 8 (all when left >= 8), for masked loads and stores.
ONYX_TARGET_AVX2 inline __m256i lanes_below(int64_t left) {
  const int n = left >= 8 ? 8 : static_cast<int>(left);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// y[i] = F(x[i]) eight at a time, the tail masked.
template <__m256 (*F)(__m256)>
ONYX_TARGET_AVX2 void map8(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    _mm256_maskstore_ps(y + i, m, F(_mm256_maskload_ps(x + i, m)));
  }
}

ONYX_TARGET_AVX2 inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

ONYX_TARGET_AVX2 inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int Mode>
ONYX_TARGET_AVX2 inline __m256 round8(__m256 x) {
  return _mm256_round_ps(x, Mode | _MM_FROUND_NO_EXC);
}

// 8 floats at p, masked by m only where the vector is partial (see softmax).
ONYX_TARGET_AVX2 inline __m256 load8(const float* p, __m256i m, bool whole) {
  return whole ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}
ONYX_TARGET_AVX2 inline void store8(float* p, __m256i m, bool whole, __m256 v) {
  if (whole) _mm256_storeu_ps(p, v);
  else _mm256_maskstore_ps(p, m, v);
}

}  // namespace

void exp(const float* x, float* y, int64_t n) { map8<exp8_avx2>(x, y, n); }
void sigmoid(const float* x, float* y, int64_t n) { map8<sigmoid8_avx2>(x, y, n); }
void tanh(const float* x, float* y, int64_t n) { map8<tanh8_avx2>(x, y, n); }
void erf(const float* x, float* y, int64_t n) { map8<erf8_avx2>(x, y, n); }
void gelu_erf(const float* x, float* y, int64_t n) { map8<gelu8_avx2>(x, y, n); }
void gelu_tanh(const float* x, float* y, int64_t n) { map8<gelu_tanh8_avx2>(x, y, n); }
void log(const float* x, float* y, int64_t n) { map8<log8_avx2>(x, y, n); }

void floor(const float* x, float* y, int64_t n) { map8<round8<_MM_FROUND_TO_NEG_INF>>(x, y, n); }
void ceil(const float* x, float* y, int64_t n) { map8<round8<_MM_FROUND_TO_POS_INF>>(x, y, n); }
void round_even(const float* x, float* y, int64_t n) { map8<round8<_MM_FROUND_TO_NEAREST_INT>>(x, y, n); }

ONYX_TARGET_AVX2 void swish(const float* x, float* y, int64_t n, float alpha) {
  const __m256 a = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, sigmoid8_avx2(_mm256_mul_ps(a, v))));
  }
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, m);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(v, sigmoid8_avx2(_mm256_mul_ps(a, v))));
  }
}

// The row's max, then e^(x - max) stored and summed, then scaled by 1 / sum.
// Whole vectors go unmasked: a masked store costs tens of cycles on AMD's
// cores (every store masked ran the pass 3x slower). The tail's masked-off
// lanes load as 0 and are kept out of the max and the sum.
ONYX_TARGET_AVX2 void softmax(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const int64_t full = n & ~int64_t(7);
  const __m256i tail = lanes_below(n - full);
  __m256 mx0 = _mm256_set1_ps(-INFINITY), mx1 = mx0;
  int64_t i = 0;
  for (; i + 16 <= full; i += 16) {
    mx0 = _mm256_max_ps(mx0, _mm256_loadu_ps(x + i));
    mx1 = _mm256_max_ps(mx1, _mm256_loadu_ps(x + i + 8));
  }
  if (i < full) mx0 = _mm256_max_ps(mx0, _mm256_loadu_ps(x + i));
  if (full < n) mx1 = _mm256_max_ps(mx1, _mm256_blendv_ps(mx1, _mm256_maskload_ps(x + full, tail), _mm256_castsi256_ps(tail)));
  const __m256 vmax = _mm256_set1_ps(horizontal_max(_mm256_max_ps(mx0, mx1)));
  __m256 sum0 = _mm256_setzero_ps(), sum1 = sum0;
  for (i = 0; i + 16 <= full; i += 16) {
    const __m256 e0 = exp8_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
    const __m256 e1 = exp8_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vmax));
    _mm256_storeu_ps(y + i, e0);
    _mm256_storeu_ps(y + i + 8, e1);
    sum0 = _mm256_add_ps(sum0, e0);
    sum1 = _mm256_add_ps(sum1, e1);
  }
  if (i < full) {
    const __m256 e = exp8_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
    _mm256_storeu_ps(y + i, e);
    sum0 = _mm256_add_ps(sum0, e);
  }
  if (full < n) {
    const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(tail), exp8_avx2(_mm256_sub_ps(_mm256_maskload_ps(x + full, tail), vmax)));
    _mm256_maskstore_ps(y + full, tail, e);
    sum1 = _mm256_add_ps(sum1, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / horizontal_sum(_mm256_add_ps(sum0, sum1)));
  for (i = 0; i < full; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
  if (full < n) _mm256_maskstore_ps(y + full, tail, _mm256_mul_ps(_mm256_maskload_ps(y + full, tail), inv));
}

// Along the middle axis of [n, inner], 32 columns at a time, their max and
// sum in registers while the passes walk the rows (as softmax_columns_avx512).
ONYX_TARGET_AVX2 void softmax_columns(const float* x, float* y, int64_t n, int64_t inner, bool log) {
  constexpr int kVecs = 4;
  for (int64_t j0 = 0; j0 < inner; j0 += 8 * kVecs) {
    __m256i m[kVecs];
    bool whole[kVecs];
    __m256 mx[kVecs], sum[kVecs];
    const int live = static_cast<int>(std::min<int64_t>(kVecs, (inner - j0 + 7) / 8));
    for (int v = 0; v < kVecs; ++v) {
      m[v] = lanes_below(inner - j0 - 8 * v);
      whole[v] = inner - j0 - 8 * v >= 8;
      mx[v] = _mm256_set1_ps(-INFINITY);
      sum[v] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n; ++i)
      for (int v = 0; v < live; ++v) {
        const __m256 xv = load8(x + i * inner + j0 + 8 * v, m[v], whole[v]);
        mx[v] = _mm256_max_ps(mx[v], _mm256_blendv_ps(mx[v], xv, _mm256_castsi256_ps(m[v])));
      }
    for (int64_t i = 0; i < n; ++i)
      for (int v = 0; v < live; ++v) {
        const int64_t at = i * inner + j0 + 8 * v;
        const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(m[v]),
                                       exp8_avx2(_mm256_sub_ps(load8(x + at, m[v], whole[v]), mx[v])));
        if (!log) store8(y + at, m[v], whole[v], e);
        sum[v] = _mm256_add_ps(sum[v], e);
      }
    for (int v = 0; v < live; ++v) {
      if (log) {
        alignas(32) float s[8];
        _mm256_store_ps(s, sum[v]);
        for (float& e : s) e = std::log(e);
        sum[v] = _mm256_add_ps(mx[v], _mm256_load_ps(s));  // x - (max + log sum)
      } else {
        sum[v] = _mm256_div_ps(_mm256_set1_ps(1.0f), sum[v]);
      }
    }
    for (int64_t i = 0; i < n; ++i)
      for (int v = 0; v < live; ++v) {
        const int64_t at = i * inner + j0 + 8 * v;
        const __m256 r = log ? _mm256_sub_ps(load8(x + at, m[v], whole[v]), sum[v])
                             : _mm256_mul_ps(load8(y + at, m[v], whole[v]), sum[v]);
        store8(y + at, m[v], whole[v], r);
      }
  }
}

}  // namespace onyx::vm::avx2

#endif
