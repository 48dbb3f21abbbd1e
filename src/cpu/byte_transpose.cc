#include "cpu/byte_transpose.h"
#include "base/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define ONYX_CONV_X86 1
#endif

namespace onyx {

namespace {

#ifdef ONYX_CONV_X86

// One 16 x 16 byte block: four rounds of interleaving.
void transpose_16x16(const uint8_t* src, int64_t lds, uint8_t* dst, int64_t ldd) {
  __m128i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * lds));
  for (int i = 0; i < 8; ++i) {
    t[i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    t[i + 8] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm_unpacklo_epi16(t[2 * i], t[2 * i + 1]);
    r[i + 8] = _mm_unpackhi_epi16(t[2 * i], t[2 * i + 1]);
  }
  for (int i = 0; i < 8; ++i) {
    t[i] = _mm_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[i + 8] = _mm_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm_unpacklo_epi64(t[2 * i], t[2 * i + 1]);
    r[i + 8] = _mm_unpackhi_epi64(t[2 * i], t[2 * i + 1]);
  }
  // r[k] now holds source column perm(k); see the index map below.
  static constexpr int col[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
  for (int k = 0; k < 16; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + col[k] * ldd), r[k]);
}

// Four side-by-side 16 x 16 blocks (16 rows of 64 bytes) in one pass: the
// unpacks of transpose_16x16 work on each 128-bit lane separately.
__attribute__((target("avx512f,avx512bw"))) void transpose_16x64(const uint8_t* src, int64_t lds, uint8_t* dst,
                                                                 int64_t ldd) {
  __m512i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + i * lds);
  for (int i = 0; i < 8; ++i) {
    t[i] = _mm512_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    t[i + 8] = _mm512_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_unpacklo_epi16(t[2 * i], t[2 * i + 1]);
    r[i + 8] = _mm512_unpackhi_epi16(t[2 * i], t[2 * i + 1]);
  }
  for (int i = 0; i < 8; ++i) {
    t[i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[i + 8] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_unpacklo_epi64(t[2 * i], t[2 * i + 1]);
    r[i + 8] = _mm512_unpackhi_epi64(t[2 * i], t[2 * i + 1]);
  }
  static constexpr int col[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
  for (int k = 0; k < 16; ++k) {
    uint8_t* d = dst + col[k] * ldd;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm512_castsi512_si128(r[k]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16 * ldd), _mm512_extracti32x4_epi32(r[k], 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 32 * ldd), _mm512_extracti32x4_epi32(r[k], 2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 48 * ldd), _mm512_extracti32x4_epi32(r[k], 3));
  }
}

bool has_avx512bw() { return cpu_features().avx512f && cpu_features().avx512bw; }
#endif

}  // namespace

void transpose_8bit(const uint8_t* src, int64_t rows, int64_t cols, int64_t lds, uint8_t* dst, int64_t ldd) {
#ifdef ONYX_CONV_X86
  const int64_t r16 = rows / 16 * 16, c16 = cols / 16 * 16;
  const int64_t c64 = has_avx512bw() ? cols / 64 * 64 : 0;
  for (int64_t r = 0; r < r16; r += 16) {
    for (int64_t c = 0; c < c64; c += 64) transpose_16x64(src + r * lds + c, lds, dst + c * ldd + r, ldd);
    for (int64_t c = c64; c < c16; c += 16) transpose_16x16(src + r * lds + c, lds, dst + c * ldd + r, ldd);
  }
  if (c16 < cols) transpose_block(src + c16, rows, cols - c16, lds, dst + c16 * ldd, ldd);
  if (r16 < rows) transpose_block(src + r16 * lds, rows - r16, c16, lds, dst + r16, ldd);
#else
  transpose_block(src, rows, cols, lds, dst, ldd);
#endif
}

}  // namespace onyx
