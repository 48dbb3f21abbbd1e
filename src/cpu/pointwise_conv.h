// A pointwise convolution (every kernel dim 1, no padding, one group) on
// plain NC... tensors, as one GEMM per image: y[n] = act(W [M, C] x[n] [C, S]
// + b + z[n]), bias, residual and activation folded into the GEMM's epilogue.
// A strided one first gathers the input positions it reads. oneDNN, given
// plain 3-D tensors, reorders both to blocked ones around its kernel: a video
// model's 64 -> 64 channels over 8x56x56 took 2.07 ms there, 1.4 ms here, and
// a stride-2 one 0.8 -> 0.4 ms.
#pragma once
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/conv_geometry.h"
#include "cpu/gemm.h"

namespace onyx {

// Whether a convolution with weights `w_shape` [M, C, 1...] and geometry `g`
// is pointwise, with enough output positions per image (`g.out`) that this
// path beats oneDNN's; few positions with many channels (a video model's
// last 2x7x7 blocks) stay there.
bool runs_as_pointwise_gemm(const std::vector<int64_t>& w_shape, const SpatialGeometry& g, int64_t group);

// x [N, C, g.in...], w [M, C], y [N, M, g.out...]; bias [M] and z (y's
// shape) may be null.
void pointwise_conv(const float* x, int64_t N, int64_t C, const float* w, int64_t M, const float* bias, const float* z,
                    const SpatialGeometry& g, GemmActivation act, float* y, ThreadPool* pool);

}  // namespace onyx
