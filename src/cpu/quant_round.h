// Round half to even as an inline float operation, for requantization loops:
// std::nearbyint is a library call on baseline x86-64 and dominated them.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace onyx {

// Same result as std::nearbyint in the default rounding mode: adding 2^23
// to a smaller magnitude leaves no fraction bits, rounding half to even.
inline float round_half_even(float v) {
  constexpr float k = 8388608.f;
  float a = std::fabs(v);
  if (!(a < k)) return v;  // already integral, inf or NaN
  return std::copysign((a + k) - k, v);
}

// out[i] = saturate(round_half_even(acc[i] * m) + zero), m = mult[i] when
// per_element, else mult[0]: the requantization of an int32 accumulator.
// SSE2's float->int conversion rounds half to even (the default MXCSR mode)
// four at a time; compilers turn the scalar clamps into branches, which
// mispredict on real activations.
template <class Q>
void requantize_with(const int32_t* acc, int64_t n, const float* mult, bool per_element, float zero, Q* out) {
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 vm = _mm_set1_ps(mult[0]), vz = _mm_set1_ps(zero), vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
  const __m128 vbig = _mm_set1_ps(4194304.f), vnbig = _mm_set1_ps(-4194304.f);  // +-2^22: no int overflow
  alignas(16) int32_t q[4];
  for (; i + 4 <= n; i += 4) {
    __m128 v = _mm_mul_ps(_mm_cvtepi32_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + i))),
                          per_element ? _mm_loadu_ps(mult + i) : vm);
    v = _mm_min_ps(_mm_max_ps(v, vnbig), vbig);
    v = _mm_add_ps(_mm_cvtepi32_ps(_mm_cvtps_epi32(v)), vz);
    v = _mm_min_ps(_mm_max_ps(v, vlo), vhi);
    _mm_store_si128(reinterpret_cast<__m128i*>(q), _mm_cvttps_epi32(v));
    for (int j = 0; j < 4; ++j) out[i + j] = static_cast<Q>(q[j]);
  }
#endif
  for (; i < n; ++i) {
    float v = round_half_even(static_cast<float>(acc[i]) * mult[per_element ? i : 0]) + zero;
    out[i] = static_cast<Q>(static_cast<int32_t>(std::min(std::max(v, lo), hi)));
  }
}

// One multiplier for every element.
template <class Q>
void requantize(const int32_t* acc, int64_t n, float mult, float zero, Q* out) {
  requantize_with(acc, n, &mult, false, zero, out);
}

// One multiplier per element: out[i] uses mult[i].
template <class Q>
void requantize_each(const int32_t* acc, int64_t n, const float* mult, float zero, Q* out) {
  requantize_with(acc, n, mult, true, zero, out);
}

}  // namespace onyx
