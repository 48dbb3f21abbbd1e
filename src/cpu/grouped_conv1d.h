// Grouped 1-D convolution with few input channels per group (depthwise included), direct:
// each output row sums its group's input rows, shifted once per tap, in registers. oneDNN 2.6
// has no jit kernel for these and falls back to im2col + one tiny GEMM per group: a Conformer
// block's depthwise 144 x 100 x 31 took 0.7 ms (this: ~0.03), wav2vec2's positional conv
// (4 groups of 16 channels, 16 taps) 0.39 ms.
#pragma once
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/conv_geometry.h"

namespace onyx {

// Whether a convolution of input rank `x_rank` with weights `w_shape` [M, C / group, k] and
// `group` is 1-D, grouped, with at most 16 input channels per group.
inline bool is_small_group_conv1d(int64_t x_rank, const std::vector<int64_t>& w_shape, int64_t group) {
  return x_rank == 3 && w_shape.size() == 3 && group > 1 && w_shape[1] <= 16 && w_shape[0] % group == 0;
}

// y[n, m, o] = b[m] + sum over the Cg channels c of m's group and taps k of
// w[m, c, k] * x[n, group(m) * Cg + c, o * s + k * d - pad] (zero outside the input);
// x is [N, C, g.in[0]], w [M, Cg, k], y [N, M, g.out[0]]; b may be null.
void grouped_conv1d(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t C, int64_t M,
                    int64_t group, const SpatialGeometry& g, ThreadPool* pool);

}  // namespace onyx
