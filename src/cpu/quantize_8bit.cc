#include "cpu/quantize_8bit.h"
#include "base/cpu_features.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONYX_Q8_X86 1
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define ONYX_TARGET_AVX2 __attribute__((target("avx2")))
#define ONYX_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
#define ONYX_TARGET_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))
#define ONYX_TARGET_AVX512BW __attribute__((target("avx512f,avx512bw,avx512vl")))
#endif

namespace onyx {

namespace {

uint8_t quantize_one(float x, float scale, float zp, float lo, float hi) {
  float r = std::nearbyint(std::nearbyint(x / scale) + zp);
  if (std::isnan(r)) return 0;
  return static_cast<uint8_t>(static_cast<int32_t>(std::min(std::max(r, lo), hi)));
}

// An 8-bit value (int8 when is_signed) as float.
float value_8(uint8_t q, bool is_signed) {
  return is_signed ? static_cast<float>(static_cast<int8_t>(q)) : static_cast<float>(q);
}

// v clamped to the 8-bit range, rounded half to even, as its byte.
uint8_t store_one(float v, bool is_signed) {
  const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
  v = std::nearbyint(std::min(std::max(v, lo), hi));
  return is_signed ? static_cast<uint8_t>(static_cast<int8_t>(v)) : static_cast<uint8_t>(v);
}

bool has_avx2() { return cpu_features().avx2; }

bool has_avx2_fma() { return cpu_features().avx2 && cpu_features().fma; }

#ifdef ONYX_Q8_X86
// Eight floats clamped to [lo, hi], rounded half to even and stored as 8-bit values. The
// bounds are integers, so clamping before rounding is the same as after; in range, the packs
// never clip.
ONYX_TARGET_AVX2 inline void store_8(__m256 v, __m256 lo, __m256 hi, bool is_signed, uint8_t* y) {
  __m256i q = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
  __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  __m128i b = is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(y), b);
}

ONYX_TARGET_AVX2 int64_t quantize_avx2(const float* x, int64_t n, float scale, float zp, bool is_signed, uint8_t* y) {
  const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps(zp);
  const __m256 lo = _mm256_set1_ps(is_signed ? -128.f : 0.f), hi = _mm256_set1_ps(is_signed ? 127.f : 255.f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), vs), _MM_FROUND_CUR_DIRECTION);
    v = _mm256_add_ps(v, vz);  // an integer plus a small integer: exact below 2^24, far out of range above
    v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0
    store_8(v, lo, hi, is_signed, y + i);
  }
  return i;
}

ONYX_TARGET_AVX2 int64_t dequantize_avx2(const uint8_t* q, int64_t n, bool is_signed, float zp, float scale, float* y) {
  const __m256 vs = _mm256_set1_ps(scale), vz = _mm256_set1_ps(zp);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
    __m256i w = is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
    __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(w), vz), vs);  // no FMA: the scalar rounds twice
    _mm256_storeu_ps(y + i, v);
  }
  return i;
}

// Lanes start at 0 and take x only when it compares below / above, so NaN and
// -0 never enter, as with std::min(lo, x) from 0.
ONYX_TARGET_AVX2 int64_t min_max_avx2(const float* x, int64_t n, float& lo, float& hi) {
  __m256 vlo = _mm256_setzero_ps(), vhi = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    vlo = _mm256_min_ps(v, vlo);  // the second operand wins on NaN and on equal zeros
    vhi = _mm256_max_ps(v, vhi);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, vlo);
  _mm256_store_ps(h, vhi);
  for (int j = 0; j < 8; ++j) {
    lo = std::min(lo, l[j]);
    hi = std::max(hi, h[j]);
  }
  return i;
}
#endif

#ifdef ONYX_Q8_X86
// Eight 8-bit values as floats.
ONYX_TARGET_AVX2 inline __m256 widen_8(const uint8_t* p, bool is_signed) {
  __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v));
}

ONYX_TARGET_AVX2_FMA int64_t qlinear_add_avx2(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, float ra,
                                              float rb, float fixed, uint8_t* y) {
  const __m256 vra = _mm256_set1_ps(ra), vrb = _mm256_set1_ps(rb), vf = _mm256_set1_ps(fixed);
  const __m256 lo = _mm256_set1_ps(is_signed ? -128.f : 0.f), hi = _mm256_set1_ps(is_signed ? 127.f : 255.f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_fmadd_ps(widen_8(a + i, is_signed), vra, _mm256_fmadd_ps(widen_8(b + i, is_signed), vrb, vf));
    store_8(v, lo, hi, is_signed, y + i);
  }
  return i;
}

ONYX_TARGET_AVX2 int64_t qlinear_mul_avx2(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, float za,
                                         float zb, float ratio, float zc, uint8_t* y) {
  const __m256 vza = _mm256_set1_ps(za), vzb = _mm256_set1_ps(zb), vr = _mm256_set1_ps(ratio), vzc = _mm256_set1_ps(zc);
  const __m256 lo = _mm256_set1_ps(is_signed ? -128.f : 0.f), hi = _mm256_set1_ps(is_signed ? 127.f : 255.f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 prod = _mm256_mul_ps(_mm256_sub_ps(widen_8(a + i, is_signed), vza),
                                      _mm256_sub_ps(widen_8(b + i, is_signed), vzb));  // exact: |prod| < 2^18
    store_8(_mm256_add_ps(_mm256_mul_ps(prod, vr), vzc), lo, hi, is_signed, y + i);
  }
  return i;
}
#endif

#ifdef ONYX_Q8_X86
// The AVX2 loops' steps on 16 lanes, in the same float operations (so the same bytes).
template <bool Signed>
ONYX_TARGET_AVX512BW inline __m512 widen_16(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm512_cvtepi32_ps(Signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v));
}

// Clamped, rounded in the current mode and narrowed (in range: vpmovdb's truncation is exact).
template <bool Signed>
ONYX_TARGET_AVX512BW inline void store_16(__m512 v, uint8_t* y) {
  const __m512 lo = _mm512_set1_ps(Signed ? -128.f : 0.f), hi = _mm512_set1_ps(Signed ? 127.f : 255.f);
  const __m512i q = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, lo), hi));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm512_cvtepi32_epi8(q));
}

template <bool Signed>
ONYX_TARGET_AVX512BW int64_t quantize_avx512(const float* x, int64_t n, float scale, float zp, uint8_t* y) {
  const __m512 vs = _mm512_set1_ps(scale), vz = _mm512_set1_ps(zp);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_roundscale_ps(_mm512_div_ps(_mm512_loadu_ps(x + i), vs), _MM_FROUND_CUR_DIRECTION);
    v = _mm512_add_ps(v, vz);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);  // NaN -> 0
    store_16<Signed>(v, y + i);
  }
  return i;
}

template <bool Signed>
ONYX_TARGET_AVX512BW int64_t dequantize_avx512(const uint8_t* q, int64_t n, float zp, float scale, float* y) {
  const __m512 vs = _mm512_set1_ps(scale), vz = _mm512_set1_ps(zp);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_mul_round_ps(_mm512_sub_ps(widen_16<Signed>(q + i), vz), vs,
                                                _MM_FROUND_CUR_DIRECTION));
  return i;
}

template <bool Signed>
ONYX_TARGET_AVX512BW int64_t qlinear_add_avx512(const uint8_t* a, const uint8_t* b, int64_t n, float ra, float rb,
                                              float fixed, uint8_t* y) {
  const __m512 vra = _mm512_set1_ps(ra), vrb = _mm512_set1_ps(rb), vf = _mm512_set1_ps(fixed);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    store_16<Signed>(_mm512_fmadd_ps(widen_16<Signed>(a + i), vra, _mm512_fmadd_ps(widen_16<Signed>(b + i), vrb, vf)),
                     y + i);
  return i;
}

// The multiply and the add rounded apart, as ORT's kernel (the _round forms are never contracted).
template <bool Signed>
ONYX_TARGET_AVX512BW int64_t qlinear_mul_avx512(const uint8_t* a, const uint8_t* b, int64_t n, float za, float zb,
                                              float ratio, float zc, uint8_t* y) {
  const __m512 vza = _mm512_set1_ps(za), vzb = _mm512_set1_ps(zb), vr = _mm512_set1_ps(ratio), vzc = _mm512_set1_ps(zc);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 prod = _mm512_mul_round_ps(_mm512_sub_ps(widen_16<Signed>(a + i), vza),
                                            _mm512_sub_ps(widen_16<Signed>(b + i), vzb), _MM_FROUND_CUR_DIRECTION);
    store_16<Signed>(_mm512_add_round_ps(_mm512_mul_round_ps(prod, vr, _MM_FROUND_CUR_DIRECTION), vzc,
                                         _MM_FROUND_CUR_DIRECTION),
                     y + i);
  }
  return i;
}

#endif

}  // namespace

void qlinear_mul_8bit(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, float za, float zb, float ratio,
                      float zc, uint8_t* y) {
  int64_t i = 0;
#ifdef ONYX_Q8_X86
  if (has_avx512bw_vl())
    i = is_signed ? qlinear_mul_avx512<true>(a, b, n, za, zb, ratio, zc, y)
                  : qlinear_mul_avx512<false>(a, b, n, za, zb, ratio, zc, y);
  if (has_avx2()) i += qlinear_mul_avx2(a + i, b + i, n - i, is_signed, za, zb, ratio, zc, y + i);
#endif
  for (; i < n; ++i) {
    const float prod = (value_8(a[i], is_signed) - za) * (value_8(b[i], is_signed) - zb);
    y[i] = store_one(prod * ratio + zc, is_signed);
  }
}

void qlinear_add_8bit(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, float ra, float rb, float fixed,
                      uint8_t* y) {
  int64_t i = 0;
#ifdef ONYX_Q8_X86
  if (has_avx512bw_vl())
    i = is_signed ? qlinear_add_avx512<true>(a, b, n, ra, rb, fixed, y) : qlinear_add_avx512<false>(a, b, n, ra, rb, fixed, y);
  if (has_avx2_fma()) i += qlinear_add_avx2(a + i, b + i, n - i, is_signed, ra, rb, fixed, y + i);
#endif
  for (; i < n; ++i)  // exact FMA, as the vector path
    y[i] = store_one(std::fma(value_8(a[i], is_signed), ra, std::fma(value_8(b[i], is_signed), rb, fixed)), is_signed);
}

#ifdef ONYX_Q8_X86
// 64 lookups at a time: two 128-entry permutes (index bit 6 picks the half of each pair of
// registers, bits 0-5 the byte), then bit 7 picks between their results.
ONYX_TARGET_VBMI int64_t lookup_vbmi(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i idx = _mm512_loadu_si512(x + i);
    const __m512i low = _mm512_permutex2var_epi8(t0, idx, t1), high = _mm512_permutex2var_epi8(t2, idx, t3);
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), low, high));
  }
  return i;
}

// 16 channels at a time: dword gathers at the aligned word holding each entry (so never past the
// tables' end), shifted down to its byte and narrowed.
ONYX_TARGET_AVX512BW void lookup_channels_avx512(const uint8_t* tables, int64_t channels, const uint8_t* x,
                                                 int64_t rows, uint8_t* y) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i three = _mm512_set1_epi32(3);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* xr = x + r * channels;
    uint8_t* yr = y + r * channels;
    for (int64_t c0 = 0; c0 < channels; c0 += 16) {
      const __mmask16 m = channels - c0 >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (channels - c0)) - 1);
      const __m512i code = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, xr + c0));
      const __m512i channel = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(c0)), lane);
      const __m512i idx = _mm512_add_epi32(_mm512_slli_epi32(channel, 8), code);
      const __m512i word = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, _mm512_andnot_si512(three, idx),
                                                       tables, 1);
      const __m512i value = _mm512_srlv_epi32(word, _mm512_slli_epi32(_mm512_and_si512(idx, three), 3));
      _mm_mask_storeu_epi8(yr + c0, m, _mm512_cvtepi32_epi8(value));
    }
  }
}
#endif

void lookup_8bit_channels(const uint8_t* tables, int64_t channels, const uint8_t* x, int64_t rows, uint8_t* y) {
#ifdef ONYX_Q8_X86
  if (cpu_features().avx512bw && cpu_features().avx512vl && channels * 256 < (int64_t{1} << 31))
    return lookup_channels_avx512(tables, channels, x, rows, y);
#endif
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) y[r * channels + c] = tables[c * 256 + x[r * channels + c]];
}

void lookup_8bit(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y) {
  int64_t i = 0;
#ifdef ONYX_Q8_X86
  if (cpu_features().avx512vbmi) i = lookup_vbmi(table, x, n, y);
#endif
  for (; i < n; ++i) y[i] = table[x[i]];
}

void quantize_8bit(const float* x, int64_t n, float scale, float zp, bool is_signed, uint8_t* y) {
  int64_t i = 0;
#ifdef ONYX_Q8_X86
  if (has_avx512bw_vl())
    i = is_signed ? quantize_avx512<true>(x, n, scale, zp, y) : quantize_avx512<false>(x, n, scale, zp, y);
  if (has_avx2()) i += quantize_avx2(x + i, n - i, scale, zp, is_signed, y + i);
#endif
  const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
  for (; i < n; ++i) y[i] = quantize_one(x[i], scale, zp, lo, hi);
}

void dequantize_8bit(const uint8_t* q, int64_t n, bool is_signed, float zp, float scale, float* y) {
  int64_t i = 0;
#ifdef ONYX_Q8_X86
  if (has_avx512bw_vl())
    i = is_signed ? dequantize_avx512<true>(q, n, zp, scale, y) : dequantize_avx512<false>(q, n, zp, scale, y);
  if (has_avx2()) i += dequantize_avx2(q + i, n - i, is_signed, zp, scale, y + i);
#endif
  for (; i < n; ++i) y[i] = (value_8(q[i], is_signed) - zp) * scale;
}

void min_max_with_zero(const float* x, int64_t n, float& lo, float& hi) {
  lo = 0.f;
  hi = 0.f;
  int64_t i = 0;
#ifdef ONYX_Q8_X86
  if (has_avx2()) i = min_max_avx2(x, n, lo, hi);
#endif
  for (; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
}

float quantize_u8_dynamic(const float* x, int64_t n, uint8_t* y, uint8_t& zero_point) {
  float lo = 0.f, hi = 0.f;
  min_max_with_zero(x, n, lo, hi);
  const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
  const float z = std::nearbyint(std::min(255.f, std::max(0.f, 0.f - lo / scale)));
  zero_point = static_cast<uint8_t>(z);
  quantize_8bit(x, n, scale, z, false, y);
  return scale;
}

}  // namespace onyx
