// Three byte planes into pixels (an 8-bit RGB image to channel-last), the
// Transpose every quantized image model starts with.
#pragma once
#include <cstdint>

namespace onyx {

// dst[i * 3 + j] = src[j * src_ld + i] for i < rows, j < 3.
void interleave3_bytes(const uint8_t* src, int64_t src_ld, int64_t rows, uint8_t* dst);

}  // namespace onyx
