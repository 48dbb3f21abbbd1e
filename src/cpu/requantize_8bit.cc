#include "cpu/requantize_8bit.h"
#include "base/cpu_features.h"

#include <algorithm>

#include "cpu/quant_round.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "cpu/requantize_avx512.h"
#define ONYX_REQUANT_X86 1
#endif

namespace onyx {

namespace {

#ifdef ONYX_REQUANT_X86
// 16 at a time, the last, partial vector masked.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void requantize_avx512(const int32_t* acc, int64_t n, const int32_t* bias,
                                                          const float* mult, bool per_element, float zero, float lo,
                                                          float hi, uint8_t* out) {
  const Requant16 q = requant16_setup(zero, lo, hi);
  const __m512 one = _mm512_set1_ps(mult[0]);
  const __m512i one_bias = _mm512_set1_epi32(bias ? bias[0] : 0);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 m = per_element ? _mm512_maskz_loadu_ps(k, mult + i) : one;
    const __m512i b = bias && per_element ? _mm512_maskz_loadu_epi32(k, bias + i) : one_bias;
    requant16_store(q, _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, acc + i), b), m, k, out + i);
  }
}

// requantize_avx512 over a [rows][cols] block with one multiplier and bias
// per column: each 16-column slice loads them once for all rows.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void requantize_rows_avx512(const int32_t* acc, int64_t rows, int64_t cols,
                                                               int64_t lda, const int32_t* bias, const float* mult,
                                                               float zero, float lo, float hi, uint8_t* out,
                                                               int64_t ldo) {
  const Requant16 q = requant16_setup(zero, lo, hi);
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 k = cols - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (cols - c)) - 1);
    const __m512 m = _mm512_maskz_loadu_ps(k, mult + c);
    const __m512i b = bias ? _mm512_maskz_loadu_epi32(k, bias + c) : _mm512_setzero_si512();
    for (int64_t r = 0; r < rows; ++r)
      requant16_store(q, _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, acc + r * lda + c), b), m, k,
                      out + r * ldo + c);
  }
}

// requant16_store's steps on 8 AVX2 lanes (the same float operations, so the
// same bytes), narrowed by two saturating packs: the values are in range by then.
struct Requant8 {
  __m256 lo, hi;
  __m256i zero;
  bool is_signed;
};

__attribute__((target("avx2"))) inline Requant8 requant8_setup(float zero, bool is_signed) {
  const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
  return {_mm256_set1_ps(lo - zero), _mm256_set1_ps(hi - zero), _mm256_set1_epi32(static_cast<int32_t>(zero)),
          is_signed};
}

__attribute__((target("avx2"))) inline void requant8_store(const Requant8& q, __m256i acc, __m256 m, uint8_t* out) {
  __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), m);
  v = _mm256_min_ps(_mm256_max_ps(v, q.lo), q.hi);
  const __m256i i = _mm256_add_epi32(_mm256_cvtps_epi32(v), q.zero);
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
  const __m128i bytes = q.is_signed ? _mm_packs_epi16(words, words) : _mm_packus_epi16(words, words);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), bytes);
}

// n values, 8 at a time; the last partial vector through a buffer.
__attribute__((target("avx2"))) void requantize_avx2(const int32_t* acc, int64_t n, const int32_t* bias,
                                                     const float* mult, bool per_element, float zero, bool is_signed,
                                                     uint8_t* out) {
  const Requant8 q = requant8_setup(zero, is_signed);
  const __m256 one = _mm256_set1_ps(mult[0]);
  const __m256i one_bias = _mm256_set1_epi32(bias ? bias[0] : 0);
  alignas(32) int32_t a_tail[8] = {}, b_tail[8] = {};
  alignas(32) float m_tail[8] = {};
  alignas(8) uint8_t o_tail[8];
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t len = std::min<int64_t>(8, n - i);
    const int32_t* a = acc + i;
    const int32_t* b = per_element && bias ? bias + i : nullptr;
    const float* m = per_element ? mult + i : nullptr;
    uint8_t* o = out + i;
    if (len < 8) {
      std::copy(a, a + len, a_tail);
      a = a_tail;
      if (b) {
        std::copy(b, b + len, b_tail);
        b = b_tail;
      }
      if (m) {
        std::copy(m, m + len, m_tail);
        m = m_tail;
      }
      o = o_tail;
    }
    const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i bv = b ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)) : one_bias;
    requant8_store(q, _mm256_add_epi32(av, bv), m ? _mm256_loadu_ps(m) : one, o);
    if (len < 8) std::copy(o_tail, o_tail + len, out + i);
  }
}

// requantize_avx2 over a [rows][cols] block with one multiplier and bias per
// column, each 8-column slice loading them once for all rows.
__attribute__((target("avx2"))) void requantize_rows_avx2(const int32_t* acc, int64_t rows, int64_t cols, int64_t lda,
                                                          const int32_t* bias, const float* mult, float zero,
                                                          bool is_signed, uint8_t* out, int64_t ldo) {
  const int64_t full = cols / 8 * 8;
  const Requant8 q = requant8_setup(zero, is_signed);
  for (int64_t c = 0; c < full; c += 8) {
    const __m256 m = _mm256_loadu_ps(mult + c);
    const __m256i b =
        bias ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + c)) : _mm256_setzero_si256();
    for (int64_t r = 0; r < rows; ++r)
      requant8_store(q, _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * lda + c)), b),
                     m, out + r * ldo + c);
  }
  if (full < cols)
    for (int64_t r = 0; r < rows; ++r)
      requantize_avx2(acc + r * lda + full, cols - full, bias ? bias + full : nullptr, mult + full, true, zero,
                      is_signed, out + r * ldo + full);
}

#endif

}  // namespace

void requantize_8bit(const int32_t* acc, int64_t n, const int32_t* bias, const float* mult, bool per_element,
                     float zero, bool is_signed, uint8_t* out) {
#ifdef ONYX_REQUANT_X86
  if (has_avx512bw_vl())
    return requantize_avx512(acc, n, bias, mult, per_element, zero, is_signed ? -128.f : 0.f,
                             is_signed ? 127.f : 255.f, out);
  if (cpu_features().avx2) return requantize_avx2(acc, n, bias, mult, per_element, zero, is_signed, out);
#endif
  for (int64_t i = 0; i < n; i += 64) {  // the rest, through a small buffer holding acc + bias
    int32_t buf[64];
    const int64_t len = std::min<int64_t>(64, n - i);
    for (int64_t j = 0; j < len; ++j) {
      const int32_t b = bias ? bias[per_element ? i + j : 0] : 0;
      buf[j] = static_cast<int32_t>(static_cast<uint32_t>(acc[i + j]) + static_cast<uint32_t>(b));
    }
    if (is_signed) {
      auto* o = reinterpret_cast<int8_t*>(out + i);
      if (per_element) requantize_each(buf, len, mult + i, zero, o);
      else requantize(buf, len, mult[0], zero, o);
    } else {
      if (per_element) requantize_each(buf, len, mult + i, zero, out + i);
      else requantize(buf, len, mult[0], zero, out + i);
    }
  }
}

void requantize_rows_8bit(const int32_t* acc, int64_t rows, int64_t cols, int64_t lda, const int32_t* bias,
                          const float* mult, float zero, bool is_signed, uint8_t* out, int64_t ldo) {
#ifdef ONYX_REQUANT_X86
  if (has_avx512bw_vl())
    return requantize_rows_avx512(acc, rows, cols, lda, bias, mult, zero, is_signed ? -128.f : 0.f,
                                  is_signed ? 127.f : 255.f, out, ldo);
  if (cpu_features().avx2) return requantize_rows_avx2(acc, rows, cols, lda, bias, mult, zero, is_signed, out, ldo);
#endif
  for (int64_t r = 0; r < rows; ++r) requantize_8bit(acc + r * lda, cols, bias, mult, true, zero, is_signed, out + r * ldo);
}

}  // namespace onyx
