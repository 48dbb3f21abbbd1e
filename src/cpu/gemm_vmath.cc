#include "cpu/gemm_vmath.h"
#include "base/cpu_features.h"
#include "cpu/vmath_avx2.h"
#include "cpu/vmath_loops.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "cpu/exp_avx512.h"
#define ONYX_VM_X86 1
#endif

namespace onyx::vm {
namespace {

// ---- portable versions (the functions vmath_loops.h does not cover) ----

void elu_ref(const float* x, float* y, int64_t n, float alpha, float scale) {
  for (int64_t i = 0; i < n; ++i) y[i] = scale * (x[i] > 0 ? x[i] : alpha * std::expm1(x[i]));
}
void log_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
}
float softplus_one(float v) { return (v > 0 ? v : 0.0f) + std::log1p(std::exp(-std::abs(v))); }
void softplus_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = softplus_one(x[i]);
}
void mish_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * std::tanh(softplus_one(x[i]));
}
void floor_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::floor(x[i]);
}
void ceil_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::ceil(x[i]);
}
void round_even_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::nearbyint(x[i]);  // the default rounding mode: half to even
}
void sin_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::sin(x[i]);
}
void cos_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::cos(x[i]);
}
void atan_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::atan(x[i]);
}
void celu_ref(const float* x, float* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : alpha * std::expm1(x[i] / alpha);
}
void softmax_columns_ref(const float* x, float* y, int64_t n, int64_t inner, bool log) {
  std::vector<float> mx(static_cast<size_t>(inner), -INFINITY), sum(static_cast<size_t>(inner), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) mx[j] = mx[j] < x[i * inner + j] ? x[i * inner + j] : mx[j];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) sum[j] += std::exp(x[i * inner + j] - mx[j]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      const float d = x[i * inner + j] - mx[j];
      y[i * inner + j] = log ? d - std::log(sum[j]) : std::exp(d) / sum[j];
    }
}

#ifdef ONYX_VM_X86
// ---- AVX-512 versions ----

ONYX_TARGET_AVX512 inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// e^x: x = k ln2 + r, |r| <= ln2/2, e^r by a degree-6 Taylor polynomial, scaled by 2^k.
// erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7) from |x| = 0.5 up,
// its Maclaurin series below.
ONYX_TARGET_AVX512 inline __m512 erf16(__m512 x) {
  __m512 ax = _mm512_abs_ps(x);
  __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(ax, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 p = erfc_poly16_avx512(t);
  __m512 e = exp16_avx512(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), ax), ax));
  __m512 y = _mm512_fnmadd_ps(p, e, _mm512_set1_ps(1.0f));
  // copy the sign of x
  __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  __m512 far = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign));
  // Below |x| = 0.5, 1 - p e cancels (relative error growing as x -> 0):
  // the Maclaurin series to x^13 instead (truncation < 1e-9 there).
  __m512 x2 = _mm512_mul_ps(x, x);
  __m512 q = _mm512_set1_ps(1.0f / 9360.0f);
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-1.0f / 1320.0f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(1.0f / 216.0f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-1.0f / 42.0f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(1.0f / 10.0f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-1.0f / 3.0f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(1.0f));
  __m512 near = _mm512_mul_ps(_mm512_mul_ps(q, x), _mm512_set1_ps(1.1283791670955126f));  // 2 / sqrt(pi)
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.5f), _CMP_LT_OQ), far, near);
}

// y[i] = F(x[i]) sixteen at a time, the tail masked.
template <__m512 (*F)(__m512)>
ONYX_TARGET_AVX512 void map16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, F(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// sin and cos: x = k pi/2 + r with pi/2 in three float parts (summing to it
// within 1e-23; the FMAs keep each product exact, so r stays accurate
// relative to itself near multiples of pi/2),
// |r| <= pi/4, then the Taylor series of sin r (to r^11) or cos r (to r^12,
// truncation below 3e-9) by k mod 4. Lanes beyond |x| = 1e5, where k's
// products stop being exact, go to libm (inf gives NaN there).
ONYX_TARGET_AVX512 inline __m512 sin_cos16(__m512 x, int quarter_turns) {
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.636619772367581343f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.57079637050628662109375f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-4.371138828673793e-8f), r);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-1.7151245100058819e-15f), r);
  const __m512 r2 = _mm512_mul_ps(r, r);
  __m512 s = _mm512_set1_ps(-1.0f / 39916800);
  for (float c : {1.0f / 362880, -1.0f / 5040, 1.0f / 120, -1.0f / 6}) s = _mm512_fmadd_ps(s, r2, _mm512_set1_ps(c));
  s = _mm512_fmadd_ps(_mm512_mul_ps(s, r2), r, r);
  __m512 co = _mm512_set1_ps(1.0f / 479001600);
  for (float c : {-1.0f / 3628800, 1.0f / 40320, -1.0f / 720, 1.0f / 24, -0.5f, 1.0f})
    co = _mm512_fmadd_ps(co, r2, _mm512_set1_ps(c));
  const __m512i quadrant = _mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(quarter_turns));
  const __mmask16 odd = _mm512_test_epi32_mask(quadrant, _mm512_set1_epi32(1));
  const __m512i negate = _mm512_slli_epi32(_mm512_and_si512(quadrant, _mm512_set1_epi32(2)), 30);
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_mask_blend_ps(odd, s, co)), negate));
}

template <int kQuarterTurns>
ONYX_TARGET_AVX512 void sin_cos_avx512(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m512 r = sin_cos16(v, kQuarterTurns);
    if (kQuarterTurns == 0)  // sin(+-0) = +-0
      r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_EQ_OQ), v);
    _mm512_mask_storeu_ps(y + i, m, r);
    __mmask16 far = _mm512_mask_cmp_ps_mask(m, _mm512_abs_ps(v), _mm512_set1_ps(1e5f), _CMP_GT_OQ);
    for (; far; far &= far - 1) {
      const int64_t j = i + __builtin_ctz(far);
      y[j] = kQuarterTurns ? std::cos(x[j]) : std::sin(x[j]);
    }
  }
}

// atan: |x| reduced to |t| <= tan(pi/8) by atan x = pi/2 - atan(1/x) above
// tan(3 pi/8) and pi/4 + atan((x - 1) / (x + 1)) between, then t + t z P(z),
// z = t^2, P a degree-4 fit (relative error 7e-10 before rounding).
ONYX_TARGET_AVX512 inline __m512 atan16(__m512 x) {
  const __m512 ax = _mm512_abs_ps(x), one = _mm512_set1_ps(1.0f);
  const __mmask16 big = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(2.41421356237309505f), _CMP_GT_OQ);
  const __mmask16 mid = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.414213562373095049f), _CMP_GT_OQ) & ~big;
  __m512 t = _mm512_mask_div_ps(ax, mid, _mm512_sub_ps(ax, one), _mm512_add_ps(ax, one));
  t = _mm512_mask_div_ps(t, big, _mm512_set1_ps(-1.0f), ax);
  __m512 base = _mm512_maskz_mov_ps(mid, _mm512_set1_ps(0.785398163397448310f));
  base = _mm512_mask_mov_ps(base, big, _mm512_set1_ps(1.57079632679489662f));
  const __m512 z = _mm512_mul_ps(t, t);
  __m512 p = _mm512_set1_ps(-0.06078202376552059f);
  for (float c : {0.10593806671992746f, -0.14243532455334026f, 0.19998471472097312f, -0.3333331518796961f})
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(c));
  const __m512 r = _mm512_add_ps(base, _mm512_fmadd_ps(_mm512_mul_ps(p, z), t, t));
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign));
}

ONYX_TARGET_AVX512 void swish_avx512(const float* x, float* y, int64_t n, float alpha) {
  const __m512 a = _mm512_set1_ps(alpha);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, sigmoid16_avx512(_mm512_mul_ps(a, v))));
  }
}

// exp(x) - 1: its Taylor series where |x| < 0.5 (degree 9), exp(x) - 1 elsewhere.
ONYX_TARGET_AVX512 inline __m512 expm1_16(__m512 x) {
  static constexpr float kInvFactorial[] = {1.0f / 362880, 1.0f / 40320, 1.0f / 5040, 1.0f / 720, 1.0f / 120,
                                            1.0f / 24,     1.0f / 6,     0.5f};
  __m512 p = _mm512_set1_ps(kInvFactorial[0]);
  for (int k = 1; k < 8; ++k) p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(kInvFactorial[k]));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, x), x, x);
  __m512 e = _mm512_sub_ps(exp16_avx512(x), _mm512_set1_ps(1.0f));
  __mmask16 small = _mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(0.5f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(small, e, p);
}

// 2 atanh(s) = log((1 + s) / (1 - s)) for |s| <= 1/3: its odd series to s^15
// (truncation below 1e-9 relative).
ONYX_TARGET_AVX512 inline __m512 two_atanh16(__m512 s) {
  const __m512 s2 = _mm512_mul_ps(s, s);
  __m512 p = _mm512_set1_ps(1.0f / 15);
  for (float k : {13.0f, 11.0f, 9.0f, 7.0f, 5.0f, 3.0f}) p = _mm512_fmadd_ps(p, s2, _mm512_set1_ps(1.0f / k));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, s2), s, s);  // s + s^3/3 + ...
  return _mm512_add_ps(p, p);
}

// log(x) = k ln 2 + log(m), m in [0.75, 1.5) from the exponent and mantissa
// instructions (subnormals included); log(m) = 2 atanh((m - 1) / (m + 1)).
ONYX_TARGET_AVX512 inline __m512 log16(__m512 x) {
  __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_nan);
  __m512 k = _mm512_getexp_ps(x);
  const __mmask16 upper = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.5f), _CMP_GE_OQ);
  m = _mm512_mask_mul_ps(m, upper, m, _mm512_set1_ps(0.5f));
  k = _mm512_mask_add_ps(k, upper, k, _mm512_set1_ps(1.0f));
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 r = two_atanh16(_mm512_div_ps(_mm512_sub_ps(m, one), _mm512_add_ps(m, one)));
  r = _mm512_fmadd_ps(k, _mm512_set1_ps(0.693359375f), r);  // ln 2 in two parts
  r = _mm512_fmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  const __m512 zero = _mm512_setzero_ps();
  r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, zero, _CMP_EQ_OQ), _mm512_set1_ps(-INFINITY));
  r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ), x);
  return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, zero, _CMP_NGE_UQ), _mm512_set1_ps(NAN));  // < 0 or NaN
}

// softplus(x) = max(x, 0) + log1p(exp(-|x|)), log1p(e) = 2 atanh(e / (2 + e)) for e in (0, 1].
ONYX_TARGET_AVX512 inline __m512 softplus16(__m512 x) {
  const __m512 e = exp16_avx512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(x)));
  const __m512 l = two_atanh16(_mm512_div_ps(e, _mm512_add_ps(e, _mm512_set1_ps(2.0f))));
  const __m512 r = _mm512_add_ps(_mm512_max_ps(x, _mm512_setzero_ps()), l);
  return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);  // NaN stays NaN
}

ONYX_TARGET_AVX512 inline __m512 mish16(__m512 x) { return _mm512_mul_ps(x, tanh16_avx512(softplus16(x))); }

template <int Mode>
ONYX_TARGET_AVX512 inline __m512 round16(__m512 x) {
  return _mm512_roundscale_ps(x, Mode | _MM_FROUND_NO_EXC);
}

ONYX_TARGET_AVX512 void hard_sigmoid_avx512(const float* x, float* y, int64_t n, float alpha, float beta,
                                            bool times_x) {
  const __m512 a = _mm512_set1_ps(alpha), b = _mm512_set1_ps(beta), zero = _mm512_setzero_ps(),
               one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    // max / min take their second operand for NaN: put v's lane first so NaN propagates
    __m512 r = _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(a, v, b), zero), one);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
    _mm512_mask_storeu_ps(y + i, m, times_x ? _mm512_mul_ps(v, r) : r);
  }
}

ONYX_TARGET_AVX512 void elu_avx512(const float* x, float* y, int64_t n, float alpha, float scale) {
  const __m512 a = _mm512_set1_ps(alpha), s = _mm512_set1_ps(scale), zero = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __mmask16 positive = _mm512_cmp_ps_mask(v, zero, _CMP_NLE_UQ);  // NaN passes through
    __m512 r = _mm512_mask_blend_ps(positive, _mm512_mul_ps(a, expm1_16(_mm512_min_ps(v, zero))), v);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(s, r));
  }
}

// Celu: x for x > 0, else alpha (exp(x / alpha) - 1) (alpha may be negative).
ONYX_TARGET_AVX512 void celu_avx512(const float* x, float* y, int64_t n, float alpha) {
  const __m512 a = _mm512_set1_ps(alpha), zero = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __mmask16 positive = _mm512_cmp_ps_mask(v, zero, _CMP_NLE_UQ);  // NaN passes through
    __m512 e = _mm512_mul_ps(a, expm1_16(_mm512_div_ps(_mm512_min_ps(v, zero), a)));
    _mm512_mask_storeu_ps(y + i, m, _mm512_mask_blend_ps(positive, e, v));
  }
}

// y = e^(x - shift) on the lanes of m, returned with the other lanes 0.
ONYX_TARGET_AVX512 inline __m512 shifted_exp16(const float* x, float* y, __m512 shift, __mmask16 m) {
  const __m512 e = _mm512_maskz_mov_ps(m, exp16_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x), shift)));
  _mm512_mask_storeu_ps(y, m, e);
  return e;
}

// Whole vectors unmasked, two at a time with two accumulators (the max and
// the sum are dependency chains; with one, rows of 128 ran 1.4x slower), and
// one masked tail.
ONYX_TARGET_AVX512 void softmax_avx512(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const int64_t full = n & ~int64_t(15);
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - full)) - 1);
  __m512 max0 = _mm512_set1_ps(-INFINITY), max1 = max0;
  int64_t i = 0;
  for (; i + 32 <= full; i += 32) {
    max0 = _mm512_max_ps(max0, _mm512_loadu_ps(x + i));
    max1 = _mm512_max_ps(max1, _mm512_loadu_ps(x + i + 16));
  }
  if (i < full) max0 = _mm512_max_ps(max0, _mm512_loadu_ps(x + i));
  if (tail) max1 = _mm512_mask_max_ps(max1, tail, max1, _mm512_maskz_loadu_ps(tail, x + full));
  const __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(max0, max1)));
  __m512 sum0 = _mm512_setzero_ps(), sum1 = sum0;
  for (i = 0; i + 32 <= full; i += 32) {
    sum0 = _mm512_add_ps(sum0, shifted_exp16(x + i, y + i, vmax, 0xFFFF));
    sum1 = _mm512_add_ps(sum1, shifted_exp16(x + i + 16, y + i + 16, vmax, 0xFFFF));
  }
  if (i < full) sum0 = _mm512_add_ps(sum0, shifted_exp16(x + i, y + i, vmax, 0xFFFF));
  if (tail) sum1 = _mm512_add_ps(sum1, shifted_exp16(x + full, y + full, vmax, tail));
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1)));
  for (i = 0; i < full; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
  if (tail) _mm512_mask_storeu_ps(y + full, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, y + full), inv));
}

// Along the middle axis of [n, inner], 64 columns at a time: the per-column
// max and sum stay in four registers while the passes walk the rows (kept
// in memory, their masked reloads stalled on the masked stores before them:
// [1000, 49] ran 1.3x slower than onnxruntime).
ONYX_TARGET_AVX512 void softmax_columns_avx512(const float* x, float* y, int64_t n, int64_t inner, bool log) {
  constexpr int kVecs = 4;
  for (int64_t j0 = 0; j0 < inner; j0 += 16 * kVecs) {
    __mmask16 m[kVecs];
    __m512 mx[kVecs], sum[kVecs];
    for (int v = 0; v < kVecs; ++v) {
      const int64_t left = inner - j0 - 16 * v;
      m[v] = left <= 0 ? 0 : tail_mask(left);
      mx[v] = _mm512_set1_ps(-INFINITY);
      sum[v] = _mm512_setzero_ps();
    }
    const int live = static_cast<int>(std::min<int64_t>(kVecs, (inner - j0 + 15) / 16));
    for (int64_t i = 0; i < n; ++i)
      for (int v = 0; v < live; ++v)
        mx[v] = _mm512_max_ps(mx[v], _mm512_mask_loadu_ps(mx[v], m[v], x + i * inner + j0 + 16 * v));
    for (int64_t i = 0; i < n; ++i)
      for (int v = 0; v < live; ++v) {
        const int64_t at = i * inner + j0 + 16 * v;
        if (log)
          sum[v] = _mm512_add_ps(sum[v], exp16_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m[v], x + at), mx[v])));
        else
          sum[v] = _mm512_add_ps(sum[v], shifted_exp16(x + at, y + at, mx[v], m[v]));
      }
    for (int v = 0; v < kVecs; ++v) {
      if (log) {
        alignas(64) float s[16];
        _mm512_store_ps(s, sum[v]);
        for (float& e : s) e = std::log(e);
        sum[v] = _mm512_add_ps(mx[v], _mm512_load_ps(s));  // x - (max + log sum)
      } else {
        sum[v] = _mm512_div_ps(_mm512_set1_ps(1.0f), sum[v]);
      }
    }
    for (int64_t i = 0; i < n; ++i)
      for (int v = 0; v < live; ++v) {
        const int64_t at = i * inner + j0 + 16 * v;
        const __m512 r = log ? _mm512_sub_ps(_mm512_maskz_loadu_ps(m[v], x + at), sum[v])
                             : _mm512_mul_ps(_mm512_maskz_loadu_ps(m[v], y + at), sum[v]);
        _mm512_mask_storeu_ps(y + at, m[v], r);
      }
  }
}

ONYX_TARGET_AVX512 void layer_norm_avx512(const float* x, const float* skip, float* y, int64_t n, const float* gamma,
                                          const float* beta, float eps) {
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    if (skip) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, skip + i));
    _mm512_mask_storeu_ps(y + i, m, v);
    sum = _mm512_add_ps(sum, v);
  }
  float mean = _mm512_reduce_add_ps(sum) / static_cast<float>(n);
  __m512 vmean = _mm512_set1_ps(mean);
  __m512 var = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, y + i), vmean);
    var = _mm512_fmadd_ps(d, d, var);
  }
  __m512 inv = _mm512_set1_ps(1.0f / std::sqrt(_mm512_reduce_add_ps(var) / static_cast<float>(n) + eps));
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, y + i), vmean), inv);
    __m512 r = _mm512_mul_ps(d, _mm512_maskz_loadu_ps(m, gamma + i));
    if (beta) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, beta + i));
    _mm512_mask_storeu_ps(y + i, m, r);
  }
}
#endif

// The entries vmath_loops.h covers come from its loops (AVX2 + FMA or
// baseline); the rest default to libm loops. With AVX2 + FMA, vmath_avx2.h's
// intrinsics replace most of both (its loops keep layer norm and hard
// sigmoid); AVX-512 then replaces most of those.
struct Table : LoopTable {
  void (*sin)(const float*, float*, int64_t) = sin_ref;
  void (*cos)(const float*, float*, int64_t) = cos_ref;
  void (*atan)(const float*, float*, int64_t) = atan_ref;
  void (*celu)(const float*, float*, int64_t, float) = celu_ref;
  void (*elu)(const float*, float*, int64_t, float, float) = elu_ref;
  void (*log)(const float*, float*, int64_t) = log_ref;
  void (*softplus)(const float*, float*, int64_t) = softplus_ref;
  void (*mish)(const float*, float*, int64_t) = mish_ref;
  void (*floor)(const float*, float*, int64_t) = floor_ref;
  void (*ceil)(const float*, float*, int64_t) = ceil_ref;
  void (*round_even)(const float*, float*, int64_t) = round_even_ref;
  void (*softmax_columns)(const float*, float*, int64_t, int64_t, bool) = softmax_columns_ref;
};

Table make_table() {
  const CpuFeatures& f = cpu_features();
  Table t{f.avx2 && f.fma ? avx2_loops() : baseline_loops()};
#ifdef ONYX_VM_X86
  if (f.avx2 && f.fma) {
    t.exp = avx2::exp;
    t.sigmoid = avx2::sigmoid;
    t.swish = avx2::swish;
    t.tanh = avx2::tanh;
    t.erf = avx2::erf;
    t.gelu_erf = avx2::gelu_erf;
    t.gelu_tanh = avx2::gelu_tanh;
    t.softmax = avx2::softmax;
    t.softmax_columns = avx2::softmax_columns;
    t.log = avx2::log;
    t.floor = avx2::floor;
    t.ceil = avx2::ceil;
    t.round_even = avx2::round_even;
  }
  if (has_avx512f_dq_vl()) {
    t.exp = map16<exp16_avx512>;
    t.sigmoid = map16<sigmoid16_avx512>;
    t.swish = swish_avx512;
    t.elu = elu_avx512;
    t.log = map16<log16>;
    t.softplus = map16<softplus16>;
    t.mish = map16<mish16>;
    t.hard_sigmoid = hard_sigmoid_avx512;
    t.floor = map16<round16<_MM_FROUND_TO_NEG_INF>>;
    t.ceil = map16<round16<_MM_FROUND_TO_POS_INF>>;
    t.round_even = map16<round16<_MM_FROUND_TO_NEAREST_INT>>;
    t.tanh = map16<tanh16_avx512>;
    t.erf = map16<erf16>;
    t.sin = sin_cos_avx512<0>;
    t.cos = sin_cos_avx512<1>;
    t.atan = map16<atan16>;
    t.celu = celu_avx512;
    t.gelu_erf = map16<gelu16_avx512>;
    t.gelu_tanh = map16<gelu_tanh16_avx512>;
    t.softmax = softmax_avx512;
    t.softmax_columns = softmax_columns_avx512;
    t.layer_norm = layer_norm_avx512;
  }
#endif
  return t;
}

const Table& table() {
  static const Table t = make_table();
  return t;
}

}  // namespace

void exp(const float* x, float* y, int64_t n) { table().exp(x, y, n); }
void sigmoid(const float* x, float* y, int64_t n) { table().sigmoid(x, y, n); }
void swish(const float* x, float* y, int64_t n, float alpha) { table().swish(x, y, n, alpha); }
void tanh(const float* x, float* y, int64_t n) { table().tanh(x, y, n); }
void erf(const float* x, float* y, int64_t n) { table().erf(x, y, n); }
void sin(const float* x, float* y, int64_t n) { table().sin(x, y, n); }
void cos(const float* x, float* y, int64_t n) { table().cos(x, y, n); }
void atan(const float* x, float* y, int64_t n) { table().atan(x, y, n); }
void celu(const float* x, float* y, int64_t n, float alpha) { table().celu(x, y, n, alpha); }
void elu(const float* x, float* y, int64_t n, float alpha, float scale) { table().elu(x, y, n, alpha, scale); }
void log(const float* x, float* y, int64_t n) { table().log(x, y, n); }
void softplus(const float* x, float* y, int64_t n) { table().softplus(x, y, n); }
void mish(const float* x, float* y, int64_t n) { table().mish(x, y, n); }
void hard_sigmoid(const float* x, float* y, int64_t n, float alpha, float beta, bool times_x) {
  table().hard_sigmoid(x, y, n, alpha, beta, times_x);
}
void floor(const float* x, float* y, int64_t n) { table().floor(x, y, n); }
void ceil(const float* x, float* y, int64_t n) { table().ceil(x, y, n); }
void round_even(const float* x, float* y, int64_t n) { table().round_even(x, y, n); }
void gelu_erf(const float* x, float* y, int64_t n) { table().gelu_erf(x, y, n); }
void gelu_tanh(const float* x, float* y, int64_t n) { table().gelu_tanh(x, y, n); }
void softmax(const float* x, float* y, int64_t n) { table().softmax(x, y, n); }
void softmax_columns(const float* x, float* y, int64_t n, int64_t inner, bool log) {
  table().softmax_columns(x, y, n, inner, log);
}
void layer_norm(const float* x, const float* skip, float* y, int64_t n, const float* gamma, const float* beta,
                float eps) {
  table().layer_norm(x, skip, y, n, gamma, beta, eps);
}

}  // namespace onyx::vm
