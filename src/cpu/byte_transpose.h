// Transposes of byte matrices (8-bit activations between channel-first and
// channel-last layouts), in 16 x 16 SSE2 blocks and 16 x 64 AVX-512 ones.
#pragma once
#include <cstdint>

namespace onyx {

// dst[c * ldd + r] = src[r * lds + c] for bytes, r < rows, c < cols.
void transpose_8bit(const uint8_t* src, int64_t rows, int64_t cols, int64_t lds, uint8_t* dst, int64_t ldd);

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols.
template <class T>
void transpose_block(const T* src, int64_t rows, int64_t cols, int64_t lds, T* dst, int64_t ldd) {
  constexpr int64_t B = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += B)
    for (int64_t c0 = 0; c0 < cols; c0 += B) {
      const int64_t r1 = r0 + B < rows ? r0 + B : rows, c1 = c0 + B < cols ? c0 + B : cols;
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) dst[c * ldd + r] = src[r * lds + c];
    }
}

}  // namespace onyx
