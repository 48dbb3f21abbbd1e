// exp(x) on 8 floats with AVX2 + FMA, and the activations built on it, as
// exp_avx512.h has them for 16: the same range reduction, polynomials and
// edge cases, for the GEMM epilogue (gemm.cc) and the vector math
// (gemm_vmath.cc) on CPUs without AVX-512. `static`: each file gets its own
// copy (see exp_avx512.h).
#pragma once
#include <immintrin.h>

#include <cmath>

namespace onyx {

#define ONYX_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

// 2^e for e in -126..127, built in the exponent field.
ONYX_AVX2_INLINE __m256 pow2_8_avx2(__m256i e) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
}

ONYX_AVX2_INLINE __m256 exp8_avx2(__m256 x) {
  // Below -87.3365, e^x is under float's smallest normal: 0 (see exp16_avx512). NaN passes.
  const __m256 normal = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3365f), _CMP_NLT_UQ);
  x = _mm256_max_ps(_mm256_set1_ps(-87.3365f), _mm256_min_ps(_mm256_set1_ps(88.7228f), x));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^k in two factors: k spans -126..128, and 2^128 (or 2^-126 and below
  // as one factor, next to p < 1) has no normal float of its own.
  const __m256i ki = _mm256_cvtps_epi32(k);
  const __m256i half = _mm256_srai_epi32(ki, 1);
  p = _mm256_mul_ps(_mm256_mul_ps(p, pow2_8_avx2(half)), pow2_8_avx2(_mm256_sub_epi32(ki, half)));
  return _mm256_and_ps(normal, p);
}

// 1 / d: the 12-bit hardware estimate refined by one Newton step (~2 ulp).
ONYX_AVX2_INLINE __m256 recip8_avx2(__m256 d) {
  const __m256 r = _mm256_rcp_ps(d);
  return _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.0f)));
}

// 1 / (1 + e^-x) by the refined reciprocal (a division per vector made
// Sigmoid 1.3x slower). Where 1 + e^-x rounds to 1 the reciprocal is 1 ulp
// under it, so that case gives 1 exactly (x sigmoid(x) is then x). Below
// -88.7, where exp's clamp would leave 1 / 3.4e38, it is 0 (NaN passes).
ONYX_AVX2_INLINE __m256 sigmoid8_avx2(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 d = _mm256_add_ps(one, exp8_avx2(_mm256_sub_ps(_mm256_setzero_ps(), x)));
  const __m256 s = _mm256_blendv_ps(recip8_avx2(d), one, _mm256_cmp_ps(d, one, _CMP_EQ_OQ));
  return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-88.7228f), _CMP_NLT_UQ), s);
}

// Abramowitz & Stegun 7.1.26's p(t), erfc|z| = p(t) e^(-z^2) with t = 1 / (1 +
// 0.3275911 |z|), as erfc_poly16_avx512.
ONYX_AVX2_INLINE __m256 erfc_poly8_avx2(__m256 t) {
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  return _mm256_mul_ps(p, t);
}

// x * Phi(x) by Abramowitz & Stegun 7.1.26, as gelu16_avx512 (which says why
// 1 + erf is formed as 2 - p e or p e, and why p e is 0 past |z| = 10).
ONYX_AVX2_INLINE __m256 gelu8_avx2(__m256 x) {
  const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f));
  const __m256 az = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), z);
  const __m256 t = recip8_avx2(_mm256_fmadd_ps(az, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
  const __m256 p = erfc_poly8_avx2(t);
  const __m256 e = exp8_avx2(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), az), az));
  const __m256 pe = _mm256_and_ps(_mm256_cmp_ps(az, _mm256_set1_ps(10.0f), _CMP_LT_OQ), _mm256_mul_ps(p, e));
  const __m256 neg = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 one_plus = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), pe), pe, neg);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), one_plus);
}

// x / 2 * (1 + tanh u) as x * sigmoid(2 u), as gelu_tanh16_avx512.
ONYX_AVX2_INLINE __m256 gelu_tanh8_avx2(__m256 x) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 two_u = _mm256_mul_ps(_mm256_set1_ps(2.0f * 0.7978845608028654f),
                                     _mm256_fmadd_ps(x3, _mm256_set1_ps(0.044715f), x));
  const __m256 live = _mm256_cmp_ps(two_u, _mm256_set1_ps(-88.0f), _CMP_GE_OQ);
  return _mm256_mul_ps(x, _mm256_and_ps(live, sigmoid8_avx2(two_u)));
}

// tanh as tanh16_avx512: x P(x^2) / Q(x^2) on |x| <= 9, +-1 beyond.
ONYX_AVX2_INLINE __m256 tanh8_avx2(__m256 x) {
  const __m256 c = _mm256_min_ps(_mm256_set1_ps(9.0f), _mm256_max_ps(_mm256_set1_ps(-9.0f), x));
  const __m256 t = _mm256_mul_ps(c, c);
  __m256 p = _mm256_set1_ps(1.3354453179898704e-08f), q = _mm256_set1_ps(7.776472782839893e-07f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(2.0608930896062657e-05f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(0.0003285619705612531f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.0034955788506021803f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(0.025876946804282073f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.1338101779334468f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(0.46714333381983497f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.999999979451809f));
  q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.0f));
  const __m256 r = _mm256_div_ps(_mm256_mul_ps(c, p), q);
  return _mm256_min_ps(_mm256_set1_ps(1.0f), _mm256_max_ps(_mm256_set1_ps(-1.0f), r));
}

// erf as erf16 (gemm_vmath.cc): 1 - p e with x's sign from |x| = 0.5 up,
// the Maclaurin series to x^13 below, where 1 - p e cancels.
ONYX_AVX2_INLINE __m256 erf8_avx2(__m256 x) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign_bit, x);
  const __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(ax, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
  const __m256 p = erfc_poly8_avx2(t);
  const __m256 e = exp8_avx2(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), ax), ax));
  const __m256 far = _mm256_or_ps(_mm256_fnmadd_ps(p, e, _mm256_set1_ps(1.0f)), _mm256_and_ps(sign_bit, x));
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 q = _mm256_set1_ps(1.0f / 9360.0f);
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.0f / 1320.0f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(1.0f / 216.0f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.0f / 42.0f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(1.0f / 10.0f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.0f / 3.0f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(1.0f));
  const __m256 near = _mm256_mul_ps(_mm256_mul_ps(q, x), _mm256_set1_ps(1.1283791670955126f));  // 2 / sqrt(pi)
  return _mm256_blendv_ps(far, near, _mm256_cmp_ps(ax, _mm256_set1_ps(0.5f), _CMP_LT_OQ));
}

// log(x) as log16 (gemm_vmath.cc): x = 2^k m with m in [0.75, 1.5),
// subnormals scaled up by 2^23 first; log(m) = 2 atanh((m - 1) / (m + 1)),
// its odd series to s^15 (|s| <= 1/5). log 0 = -inf, log inf = inf, NaN
// below 0.
ONYX_AVX2_INLINE __m256 log8_avx2(__m256 x) {
  const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
  const __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), tiny);
  const __m256i bits = _mm256_castps_si256(xs);
  __m256 k = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)));
  k = _mm256_sub_ps(k, _mm256_and_ps(tiny, _mm256_set1_ps(23.0f)));
  __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
  const __m256 upper = _mm256_cmp_ps(m, _mm256_set1_ps(1.5f), _CMP_GE_OQ);
  m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), upper);
  k = _mm256_add_ps(k, _mm256_and_ps(upper, _mm256_set1_ps(1.0f)));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(_mm256_sub_ps(m, one), _mm256_add_ps(m, one));
  const __m256 t2 = _mm256_mul_ps(t, t);
  __m256 p = _mm256_set1_ps(1.0f / 15);
  for (float c : {13.0f, 11.0f, 9.0f, 7.0f, 5.0f, 3.0f}) p = _mm256_fmadd_ps(p, t2, _mm256_set1_ps(1.0f / c));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, t2), t, t);
  __m256 r = _mm256_add_ps(p, p);
  r = _mm256_fmadd_ps(k, _mm256_set1_ps(0.693359375f), r);  // ln 2 in two parts
  r = _mm256_fmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  const __m256 zero = _mm256_setzero_ps();
  r = _mm256_blendv_ps(r, _mm256_set1_ps(-INFINITY), _mm256_cmp_ps(x, zero, _CMP_EQ_OQ));
  r = _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ));
  return _mm256_blendv_ps(r, _mm256_set1_ps(NAN), _mm256_cmp_ps(x, zero, _CMP_NGE_UQ));  // < 0 or NaN
}

#undef ONYX_AVX2_INLINE

}  // namespace onyx
