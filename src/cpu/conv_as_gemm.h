// The convolutions that run as GEMMs straight over the plain input, without
// oneDNN or an im2col of their taps: pointwise ones (cpu/pointwise_conv.h)
// and those whose kernel spans only the first spatial axis
// (cpu/leading_axis_conv.h). Conv and FusedConv both ask here first.
#pragma once
#include <cstdint>
#include <vector>

#include "cpu/leading_axis_conv.h"
#include "cpu/pointwise_conv.h"

namespace onyx {

// x [N, C, g.in...], w [M, C, ...], y [N, M, g.out...]; bias and z may be null.
using ConvAsGemm = void (*)(const float* x, int64_t N, int64_t C, const float* w, int64_t M, const float* bias,
                            const float* z, const SpatialGeometry& g, GemmActivation act, float* y, ThreadPool* pool);

// The GEMM path that runs a float conv with weights `w_shape` and geometry
// `g`, or null where neither does.
inline ConvAsGemm conv_as_gemm(const std::vector<int64_t>& w_shape, const SpatialGeometry& g, int64_t group) {
  if (runs_as_pointwise_gemm(w_shape, g, group)) return pointwise_conv;
  if (runs_as_leading_axis_gemm(w_shape, g, group)) return leading_axis_conv;
  return nullptr;
}

}  // namespace onyx
