#include "cpu/interleave_bytes.h"
#include "base/cpu_features.h"

#include <array>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONYX_INTERLEAVE_X86 1
#endif

namespace onyx {

namespace {

void interleave3_scalar(const uint8_t* src, int64_t src_ld, int64_t rows, uint8_t* dst) {
  for (int64_t i = 0; i < rows; ++i)
    for (int j = 0; j < 3; ++j) dst[i * 3 + j] = src[j * src_ld + i];
}

#ifdef ONYX_INTERLEAVE_X86
// pshufb masks: byte o of output vector k takes byte (16k + o) / 3 of plane
// (16k + o) % 3; the other planes' masks put zero there (0x80) for the OR.
struct Masks {
  std::array<std::array<std::array<int8_t, 16>, 3>, 3> m;  // [k][plane][o]
  Masks() {
    for (int k = 0; k < 3; ++k)
      for (int plane = 0; plane < 3; ++plane)
        for (int o = 0; o < 16; ++o) {
          const int at = 16 * k + o;
          m[k][plane][o] = static_cast<int8_t>(at % 3 == plane ? at / 3 : 0x80);
        }
  }
};

__attribute__((target("ssse3"))) void interleave3_ssse3(const uint8_t* src, int64_t src_ld, int64_t rows,
                                                        uint8_t* dst) {
  static const Masks masks;
  __m128i m[3][3];
  for (int k = 0; k < 3; ++k)
    for (int p = 0; p < 3; ++p) m[k][p] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(masks.m[k][p].data()));
  int64_t i = 0;
  for (; i + 16 <= rows; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + src_ld + i));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * src_ld + i));
    for (int k = 0; k < 3; ++k) {
      const __m128i v = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, m[k][0]), _mm_shuffle_epi8(b, m[k][1])),
                                     _mm_shuffle_epi8(c, m[k][2]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * 3 + 16 * k), v);
    }
  }
  interleave3_scalar(src + i, src_ld, rows - i, dst + i * 3);
}
#endif

}  // namespace

void interleave3_bytes(const uint8_t* src, int64_t src_ld, int64_t rows, uint8_t* dst) {
#ifdef ONYX_INTERLEAVE_X86
  if (cpu_features().avx2) return interleave3_ssse3(src, src_ld, rows, dst);  // every AVX2 CPU has SSSE3
#endif
  interleave3_scalar(src, src_ld, rows, dst);
}

}  // namespace onyx
