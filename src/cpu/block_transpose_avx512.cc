#include "cpu/block_transpose_avx512.h"
#include "base/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wuninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#define ONYX_BLOCK_TRANSPOSE 1
#endif

namespace onyx::nchwc {

#ifdef ONYX_BLOCK_TRANSPOSE

namespace {

// r[i] = row i of a 16x16 tile -> r[j] = column j.
inline void transpose16(__m512 r[16]) {
  __m512 a[16], b[16];
  for (int k = 0; k < 8; ++k) {  // pairs of rows interleaved, per 128-bit lane
    a[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    a[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 4; ++k) {  // lane l of b[4k+m]: column 4l+m of rows 4k..4k+3
    b[4 * k + 0] = _mm512_shuffle_ps(a[4 * k], a[4 * k + 2], 0x44);
    b[4 * k + 1] = _mm512_shuffle_ps(a[4 * k], a[4 * k + 2], 0xEE);
    b[4 * k + 2] = _mm512_shuffle_ps(a[4 * k + 1], a[4 * k + 3], 0x44);
    b[4 * k + 3] = _mm512_shuffle_ps(a[4 * k + 1], a[4 * k + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) {  // gather lane l of b[m], b[4+m], b[8+m], b[12+m]
    __m512 c0 = _mm512_shuffle_f32x4(b[m], b[4 + m], 0x88), c1 = _mm512_shuffle_f32x4(b[m], b[4 + m], 0xDD);
    __m512 d0 = _mm512_shuffle_f32x4(b[8 + m], b[12 + m], 0x88), d1 = _mm512_shuffle_f32x4(b[8 + m], b[12 + m], 0xDD);
    r[m] = _mm512_shuffle_f32x4(c0, d0, 0x88);
    r[8 + m] = _mm512_shuffle_f32x4(c0, d0, 0xDD);
    r[4 + m] = _mm512_shuffle_f32x4(c1, d1, 0x88);
    r[12 + m] = _mm512_shuffle_f32x4(c1, d1, 0xDD);
  }
}

}  // namespace

bool block_transpose_available() { return cpu_features().avx512f; }

void block_to_planes16(const float* src, int64_t S, int64_t channels, float* dst, int64_t ld) {
  int64_t s0 = 0;
  for (; s0 + 16 <= S; s0 += 16) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + (s0 + i) * 16);
    transpose16(r);
    for (int64_t j = 0; j < channels; ++j) _mm512_storeu_ps(dst + j * ld + s0, r[j]);
  }
  for (; s0 < S; ++s0)
    for (int64_t j = 0; j < channels; ++j) dst[j * ld + s0] = src[s0 * 16 + j];
}

void planes_to_block16(const float* src, int64_t S, int64_t channels, float* dst, int64_t ld) {
  int64_t s0 = 0;
  for (; s0 + 16 <= S; s0 += 16) {
    __m512 r[16];
    for (int j = 0; j < 16; ++j) {
      r[j] = j < channels ? _mm512_loadu_ps(src + j * ld + s0) : _mm512_setzero_ps();
      // 16 planes read at once are more streams than the hardware prefetcher
      // follows (NCHW -> NCHWc of 32x112x112: 55 -> 44 us)
      if (j < channels) _mm_prefetch(reinterpret_cast<const char*>(src + j * ld + s0 + 64), _MM_HINT_T0);
    }
    transpose16(r);
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + (s0 + i) * 16, r[i]);
  }
  for (; s0 < S; ++s0)
    for (int64_t j = 0; j < 16; ++j) dst[s0 * 16 + j] = j < channels ? src[j * ld + s0] : 0.0f;
}

void transpose_tile32(const float* src, int64_t src_ld, int64_t rows, int64_t cols, float* dst, int64_t dst_ld) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16) {
    int64_t ni = rows - i0 < 16 ? rows - i0 : 16;
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      int64_t nj = cols - j0 < 16 ? cols - j0 : 16;
      __m512 r[16];  // r[k]: source row j0 + k, elements i0 .. i0 + 15
      if (ni == 16 && nj == 16) {
        // Plain loads and stores: masked ones are much slower on some CPUs (AMD Zen 4). Each
        // source row's next line is fetched ahead: the reads walk C rows at once, more streams
        // than the hardware prefetcher follows (NCHW -> NHWC of 64x56x56: 30 -> 27 us).
        for (int k = 0; k < 16; ++k) {
          r[k] = _mm512_loadu_ps(src + (j0 + k) * src_ld + i0);
          _mm_prefetch(reinterpret_cast<const char*>(src + (j0 + k) * src_ld + i0 + 32), _MM_HINT_T0);
        }
        transpose16(r);  // r[m]: destination row i0 + m, elements j0 .. j0 + 15
        for (int m = 0; m < 16; ++m) _mm512_storeu_ps(dst + (i0 + m) * dst_ld + j0, r[m]);
        continue;
      }
      __mmask16 load_mask = static_cast<__mmask16>((1u << ni) - 1);
      __mmask16 store_mask = static_cast<__mmask16>((1u << nj) - 1);
      for (int k = 0; k < 16; ++k)
        r[k] = k < nj ? _mm512_maskz_loadu_ps(load_mask, src + (j0 + k) * src_ld + i0) : _mm512_setzero_ps();
      transpose16(r);
      for (int m = 0; m < ni; ++m) _mm512_mask_storeu_ps(dst + (i0 + m) * dst_ld + j0, store_mask, r[m]);
    }
  }
}

void gather_transpose(const float* const* rows, int64_t count, int64_t M, const float* bias, float* dst,
                      int64_t dst_ld) {
  for (int64_t j0 = 0; j0 < count; j0 += 16) {
    const int64_t nj = count - j0 < 16 ? count - j0 : 16;
    const __mmask16 store_mask = static_cast<__mmask16>((1u << nj) - 1);
    for (int64_t m0 = 0; m0 < M; m0 += 16) {
      const int64_t nm = M - m0 < 16 ? M - m0 : 16;
      const __mmask16 load_mask = static_cast<__mmask16>((1u << nm) - 1);
      __m512 r[16];  // r[k]: position j0 + k, channels m0 .. m0 + 15
      for (int k = 0; k < 16; ++k)
        r[k] = k < nj ? _mm512_maskz_loadu_ps(load_mask, rows[j0 + k] + m0) : _mm512_setzero_ps();
      transpose16(r);  // r[m]: channel m0 + m, positions j0 .. j0 + 15
      for (int m = 0; m < nm; ++m) {
        const __m512 v = bias ? _mm512_add_ps(r[m], _mm512_set1_ps(bias[m0 + m])) : r[m];
        if (nj == 16) _mm512_storeu_ps(dst + (m0 + m) * dst_ld + j0, v);
        else _mm512_mask_storeu_ps(dst + (m0 + m) * dst_ld + j0, store_mask, v);
      }
    }
  }
}

#else

bool block_transpose_available() { return false; }
void gather_transpose(const float* const*, int64_t, int64_t, const float*, float*, int64_t) {}
void transpose_tile32(const float*, int64_t, int64_t, int64_t, float*, int64_t) {}
void block_to_planes16(const float*, int64_t, int64_t, float*, int64_t) {}
void planes_to_block16(const float*, int64_t, int64_t, float*, int64_t) {}

#endif

}  // namespace onyx::nchwc
