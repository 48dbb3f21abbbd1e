// Exact 8-bit convolution (QLinearConv, ConvInteger): int32 sums of
// (x - x_zp) * (w - w_zp) over 1-D and 2-D kernels (3-D ones as the GEMM),
// equal to the plain loop.
// Convolutions with several output channels per group run as the int8 GEMM
// on channel-last rows of the input (im2col only when the kernel is not a
// plain 1x1); one output channel per group (depthwise) is a direct loop, over
// planes for channels-first input and over channel vectors for channels-last.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/byte_transpose.h"
#include "cpu/conv_geometry.h"
#include "cpu/int8_gemm.h"
#include "cpu/requantize_8bit.h"

namespace onyx {

struct Int8DepthwisePlan;  // int8_depthwise.cc

// Weights [M, Cg, kernel...] of uint8 / int8, prepared once: packed GEMM
// operands per group (rows k = kernel position * Cg + channel), or for one
// output channel per group the plain values for the direct loop (and, for
// depthwise weights with known zero points, the depthwise kernels' plan).
struct Int8ConvWeights {
  Int8ConvWeights(const void* w, bool is_signed, int64_t M, int64_t Cg, int64_t ksize, int64_t group);
  bool direct() const { return M == group; }

  int64_t M, Cg, ksize, group;
  std::vector<PackedInt8B> packed;  // GEMM
  std::vector<int32_t> raw;         // direct: [M][Cg * ksize]
  std::shared_ptr<const Int8DepthwisePlan> depthwise;
};

struct Int8ConvInput {
  const void* x = nullptr;  // [N, C, spatial...], or [N, spatial..., C] when channels_last
  bool is_signed = false;
  int32_t zero_point = 0;
  int64_t N = 0, C = 0;
  bool channels_last = false;
};

// Receives the int32 sums of image n, output channels [m0, m1), output pixels
// [p0, p0 + count): acc[(m - m0) * m_stride + i * p_stride], which it may
// change. Called concurrently for disjoint blocks.
// With `requant` set (M output channels), convolutions that run as the GEMM
// requantize in it instead and write bytes: into `channels_last_out`
// ([N, pixels, M]) when given, else to `bytes` (rows [count][M] of image n
// from pixel p0).
struct Int8ConvSink {
  std::function<void(int64_t n, int64_t m0, int64_t m1, int64_t p0, int64_t count, int32_t* acc, int64_t m_stride,
                     int64_t p_stride)>
      fn;
  const Int8Requant* requant = nullptr;
  uint8_t* channels_last_out = nullptr;
  std::function<void(int64_t n, int64_t p0, int64_t count, const uint8_t* rows)> bytes;
};

// Geometries the fast path takes: 1-D and 2-D kernels, and 3-D ones with several output channels
// per group (the GEMM on im2col rows; M output channels in `group` groups).
inline bool int8_conv_supported(const SpatialGeometry& g, int64_t M, int64_t group) {
  return g.nd == 1 || g.nd == 2 || (g.nd == 3 && group > 0 && M != group);
}

// The weights of an 8-bit convolution (rank 3 or 4, uint8 / int8) prepared
// for int8_conv, or null when `w` is not such a tensor. w_zero_point (may be
// null: not known yet) lets depthwise weights be planned here, not per run.
std::shared_ptr<const Int8ConvWeights> prepare_int8_conv_weights(const Tensor* w, int64_t group,
                                                                 const Tensor* w_zero_point = nullptr);

// w_zero_points: 1 or M values.
void int8_conv(const Int8ConvInput& x, const SpatialGeometry& g, const Int8ConvWeights& w,
               const std::vector<int32_t>& w_zero_points, const Int8ConvSink& sink, ThreadPool* pool);
// The same with a chosen kernel family (tests compare all the CPU runs).
void int8_conv(const Int8ConvInput& x, const SpatialGeometry& g, const Int8ConvWeights& w,
               const std::vector<int32_t>& w_zero_points, const Int8ConvSink& sink, ThreadPool* pool, Int8Isa isa);


}  // namespace onyx
