// A convolution whose kernel spans only the first spatial axis (a video
// model's (k,1,1) temporal conv; a (k,1) conv on plain tensors), with stride
// 1 and no padding on the other axes. Each output plane along that axis is a
// sum over the kernel taps of one GEMM each, W_tap [M, C] times the input
// plane the tap reads [C, P] in place (P: the positions of one plane), so
// nothing is gathered, and the output plane stays in cache across the taps.
// oneDNN, given plain 3-D tensors, reorders both to blocked ones around its
// kernel.
#pragma once
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/conv_geometry.h"
#include "cpu/gemm.h"

namespace onyx {

// Whether a convolution with weights `w_shape` [M, C, K, 1...] and geometry
// `g` runs here: one group, at least two spatial axes, a kernel longer than 1
// on the first only, and planes of enough positions for a GEMM each.
bool runs_as_leading_axis_gemm(const std::vector<int64_t>& w_shape, const SpatialGeometry& g, int64_t group);

// x [N, C, g.in...], w [M, C, K, 1...], y [N, M, g.out...]; bias [M] and z
// (y's shape, added before the activation) may be null.
void leading_axis_conv(const float* x, int64_t N, int64_t C, const float* w, int64_t M, const float* bias,
                       const float* z, const SpatialGeometry& g, GemmActivation act, float* y, ThreadPool* pool);

}  // namespace onyx
