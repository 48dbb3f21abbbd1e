// int8 x 4-bit GEMM with a scale per block of K, for MatMulNBits at
// accuracy_level 4 (the level onnxruntime-genai's CPU int4 models use):
//
//   Y[m, n] = sum_j sa[m, j] sb[n, j] sum_{k in block j} qa[m, k] (qb[n, k] - zb[n, j]) + bias[n]
//
// where A is quantized to int8 per block here, as ORT does (scale
// max|a| / 127, rounded to nearest even). The zero-point term is kept as
// -sb zb * (sa sum qa), so each block costs one vpdpbusd pass over the
// unsigned codes times A's signed bytes and a few float operations.
// AVX-512 VNNI, or AVX-VNNI's vpdpbusd on 256-bit vectors (the same
// operations lane for lane); MatMulNBits keeps its other paths elsewhere.
#pragma once
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"

namespace onyx {

// B's codes, scales and zero points packed for the kernel: tiles of 16
// columns; per tile and 8 values of k, 64 bytes whose low nibbles hold
// k..k+3 and high nibbles k+4..k+7 of each column (4 bytes per column, as
// vpdpbusd's lanes take them); scales and -scale * zero point per block as
// 16-column rows.
class PackedInt4B {
 public:
  // codes: column n's 4-bit codes from codes + n * row_bytes, two per byte
  // (low nibble first, k ascending; values past K are ignored). scales and
  // zero_points: [N, ceil(K / block)] floats.
  PackedInt4B(const uint8_t* codes, int64_t row_bytes, int64_t N, int64_t K, int64_t block, const float* scales,
              const float* zero_points);

  int64_t N() const { return N_; }
  int64_t K() const { return K_; }
  int64_t block() const { return block_; }
  int64_t k_blocks() const { return k_blocks_; }
  int64_t padded_k() const { return k_blocks_ * block_; }
  int64_t tiles() const { return (N_ + 15) / 16; }
  const uint8_t* tile_codes(int64_t t) const { return codes_.data() + t * padded_k() * 8; }
  const float* tile_scales(int64_t t) const { return scales_.data() + t * k_blocks_ * 16; }
  const float* tile_offsets(int64_t t) const { return offsets_.data() + t * k_blocks_ * 16; }

 private:
  int64_t N_ = 0, K_ = 0, block_ = 0, k_blocks_ = 0;
  std::vector<uint8_t> codes_;
  std::vector<float> scales_, offsets_;
};

// Whether this CPU runs the kernel for this block size (AVX-512 VNNI or
// AVX-VNNI, block a multiple of 16).
bool int4_block_gemm_supported(int64_t block);

// Y[m * N + n] for the M rows of A (row-major, K floats each); bias: N
// values or null.
void int4_block_gemm(int64_t M, const float* A, const PackedInt4B& b, const float* bias, float* Y, ThreadPool* pool);

}  // namespace onyx
