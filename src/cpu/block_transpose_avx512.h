// One channel block between the blocked layout ([S][16]: 16 channels per
// position) and planes ([16][S]: one plane per channel), with AVX-512 16x16
// transposes; the scalar loops they replace ran at ~1 element per cycle
// (reordering a 64x55x55 output took 4x onnxruntime's time).
#pragma once
#include <cstdint>

namespace onyx::nchwc {

// Whether this CPU runs the functions below (AVX-512F, checked once).
bool block_transpose_available();

// blocked [S][16] -> planes: channel j < channels goes to dst[j * S + s].
void block_to_planes16(const float* src, int64_t S, int64_t channels, float* dst);

// planes -> blocked [S][16]: channel j < channels from src[j * S + s]; the
// block's other channels are zero.
void planes_to_block16(const float* src, int64_t S, int64_t channels, float* dst);

}  // namespace onyx::nchwc
