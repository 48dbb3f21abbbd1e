// Requantization of int32 sums on 16 AVX-512 lanes, shared by the 8-bit
// requantize loops and the int8 GEMM's fused epilogue. Include only where
// <immintrin.h> is available (x86-64 with GCC or Clang).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace onyx {

// requantize's steps on 16 lanes, reordered: clamping acc * m to
// [lo - zero, hi - zero] before rounding gives the same integers as clamping
// after (the bounds are integers and rounding is monotonic), and keeps the
// conversion in int32 range; the zero point is then an integer add and
// vpmovdb's truncation the narrowing.
struct Requant16 {
  __m512 lo, hi;
  __m512i zero;
};

__attribute__((target("avx512f"))) inline Requant16 requant16_setup(float zero, float lo, float hi) {
  return {_mm512_set1_ps(lo - zero), _mm512_set1_ps(hi - zero), _mm512_set1_epi32(static_cast<int32_t>(zero))};
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) inline void requant16_store(const Requant16& q, __m512i acc,
                                                                                __m512 m, __mmask16 k, uint8_t* out) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), m);
  v = _mm512_min_ps(_mm512_max_ps(v, q.lo), q.hi);
  // Narrowed in a register: vpmovdb straight to memory is a slow store.
  const __m128i bytes = _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), q.zero));
  if (k == 0xFFFF) _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes);
  else _mm_mask_storeu_epi8(out, k, bytes);
}

}  // namespace onyx
