// exp(x) on 16 floats with AVX-512 (range reduction to 2^k * e^r, |r| <=
// ln2/2, then a degree-6 polynomial; relative error ~1e-7), and the functions
// built on it, shared by the vector math (gemm_vmath.cc), the GEMM epilogue
// (gemm.cc) and the direct convolution's activations (nchwc_conv_avx512.cc).
// `static`: each file gets its own copy, so a copy compiled for AVX-512 is
// never picked by the linker for another file.
#pragma once
#include <immintrin.h>

namespace onyx {

__attribute__((target("avx512f"), always_inline)) static inline __m512 exp16_avx512(__m512 x) {
  // Below the clamp e^x is under float's smallest normal: 0, not the clamp's ~1.2e-38, which
  // the division of a softmax would make subnormal (masked scores, -inf or float's lowest as
  // PyTorch writes them, then ran the row and the MatMul after it 2x slower).
  const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3365f), _CMP_NLT_UQ);  // NaN too
  // The bound first: min / max return their second operand when either is NaN, so NaN stays NaN.
  x = _mm512_max_ps(_mm512_set1_ps(-87.3365f), _mm512_min_ps(_mm512_set1_ps(88.7228f), x));
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_mov_ps(normal, _mm512_scalef_ps(p, k));
}

// 1 / d: the 14-bit hardware estimate refined by one Newton step (~1 ulp),
// several times the throughput of a division.
__attribute__((target("avx512f"), always_inline)) static inline __m512 recip16_avx512(__m512 d) {
  __m512 r = _mm512_rcp14_ps(d);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
}

// 1 / (1 + e^-x).
__attribute__((target("avx512f"), always_inline)) static inline __m512 sigmoid16_avx512(__m512 x) {
  __m512 e = exp16_avx512(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return recip16_avx512(_mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

// Abramowitz & Stegun 7.1.26: erfc|z| = p(t) e^(-z^2) with |error| <= 1.5e-7,
// t = 1 / (1 + 0.3275911 |z|); this is p(t), given t (callers form t by a
// division or a refined reciprocal).
__attribute__((target("avx512f"), always_inline)) static inline __m512 erfc_poly16_avx512(__m512 t) {
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  return _mm512_mul_ps(p, t);
}

// x * Phi(x) = x / 2 * (1 + erf(x / sqrt 2)), erf by Abramowitz & Stegun
// 7.1.26. erf alone loses relative accuracy near 0 with this formula, but
// 1 + erf does not, so GELU needs no separate small-x branch.
__attribute__((target("avx512f"), always_inline)) static inline __m512 gelu16_avx512(__m512 x) {
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
  const __m512 az = _mm512_abs_ps(z);
  const __m512 p =
      erfc_poly16_avx512(recip16_avx512(_mm512_fmadd_ps(az, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f))));
  const __m512 e = exp16_avx512(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), az), az));
  // erf|z| = 1 - p e, so 1 + erf(z) is 2 - p e for z >= 0 and p e below: no
  // cancellation for large negative x, where GELU is tiny.
  // Past |z| = 10, erfc is below 1e-44: taking p e as 0 there keeps GELU(+inf)
  // = inf and GELU(x << 0) = -0 (the reciprocal above is NaN at |z| = inf).
  const __m512 pe = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(az, _mm512_set1_ps(10.0f), _CMP_LT_OQ), p, e);
  const __mmask16 neg = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 one_plus = _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(2.0f), pe), pe);
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), one_plus);
}

// tanh(x) = x P(x^2) / Q(x^2) on |x| <= 9, a rational fit of degree 4 / 4 in
// x^2 (relative error 2e-8 before rounding; at most 5.3 ulp in float over all
// floats), and +-1 beyond,
// where tanh rounds to 1. x stays the second operand of min / max so NaN passes.
__attribute__((target("avx512f"), always_inline)) static inline __m512 tanh16_avx512(__m512 x) {
  static constexpr float kP[] = {1.3354453179898704e-08f, 2.0608930896062657e-05f, 0.0034955788506021803f,
                                 0.1338101779334468f, 0.999999979451809f};
  static constexpr float kQ[] = {7.776472782839893e-07f, 0.0003285619705612531f, 0.025876946804282073f,
                                 0.46714333381983497f, 1.0f};
  const __m512 c = _mm512_min_ps(_mm512_set1_ps(9.0f), _mm512_max_ps(_mm512_set1_ps(-9.0f), x));
  const __m512 t = _mm512_mul_ps(c, c);
  __m512 p = _mm512_set1_ps(kP[0]), q = _mm512_set1_ps(kQ[0]);
  for (int k = 1; k < 5; ++k) {
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kP[k]));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(kQ[k]));
  }
  const __m512 r = _mm512_div_ps(_mm512_mul_ps(c, p), q);
  return _mm512_min_ps(_mm512_set1_ps(1.0f), _mm512_max_ps(_mm512_set1_ps(-1.0f), r));
}

// The tanh form of GELU, x / 2 * (1 + tanh u) with u = sqrt(2 / pi) (x +
// 0.044715 x^3), computed as x * sigmoid(2 u) (the same function, no division).
__attribute__((target("avx512f"), always_inline)) static inline __m512 gelu_tanh16_avx512(__m512 x) {
  const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  const __m512 two_u = _mm512_mul_ps(_mm512_set1_ps(2.0f * 0.7978845608028654f),
                                     _mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x));
  // exp's clamp keeps sigmoid above 1e-38; below 2u = -88 it is 0 in float, so
  // GELU(x << 0) is -0 rather than x * 1e-38 (and NaN at -inf, as x / 2 (1 + tanh u) is).
  const __mmask16 live = _mm512_cmp_ps_mask(two_u, _mm512_set1_ps(-88.0f), _CMP_GE_OQ);
  return _mm512_mul_ps(x, _mm512_maskz_mov_ps(live, sigmoid16_avx512(two_u)));
}

}  // namespace onyx
