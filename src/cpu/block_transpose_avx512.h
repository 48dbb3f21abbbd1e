// One channel block between the blocked layout ([S][16]: 16 channels per
// position) and planes ([16][S]: one plane per channel), with AVX-512 16x16
// transposes; the scalar loops they replace ran at ~1 element per cycle
// (reordering a 64x55x55 output took 4x onnxruntime's time).
#pragma once
#include <cstdint>

namespace onyx::nchwc {

// Whether this CPU runs the functions below (AVX-512F, checked once).
bool block_transpose_available();

// blocked [S][16] -> planes: channel j < channels goes to dst[j * ld + s]
// (ld >= S: planes of a channel's depth slice lie D planes apart).
void block_to_planes16(const float* src, int64_t S, int64_t channels, float* dst, int64_t ld);

// planes -> blocked [S][16]: channel j < channels from src[j * ld + s]; the
// block's other channels are zero.
void planes_to_block16(const float* src, int64_t S, int64_t channels, float* dst, int64_t ld);

// A general 2-D transpose of 4-byte elements (the Transpose kernel's tiles):
// dst[i * dst_ld + j] = src[j * src_ld + i] for i < rows, j < cols, in 16x16
// register tiles; edge tiles use masked loads and stores.
void transpose_tile32(const float* src, int64_t src_ld, int64_t rows, int64_t cols, float* dst, int64_t dst_ld);

// dst[m * dst_ld + j] = rows[j][m] + bias[m] (bias may be null) for j < count,
// m < M: a transpose whose source rows lie anywhere (a ConvTranspose output
// row, each position read from its own place in the GEMM's result).
void gather_transpose(const float* const* rows, int64_t count, int64_t M, const float* bias, float* dst,
                      int64_t dst_ld);

}  // namespace onyx::nchwc
