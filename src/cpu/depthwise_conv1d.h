// Depthwise 1-D convolution (group == input channels == output channels), direct: every
// channel's row is a sum of shifted copies of its input row, one per tap. Conformer and
// wav2vec2-style models use it with long kernels (31-128 taps), where oneDNN 2.6 falls back to
// im2col + one tiny GEMM per channel (0.7 ms for a Conformer block's 144 x 100 x 31; this: ~0.03).
#pragma once
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/conv_geometry.h"

namespace onyx {

// Whether a convolution of input rank `x_rank` with weights `w_shape` and `group` is depthwise 1-D.
inline bool is_depthwise_conv1d(int64_t x_rank, const std::vector<int64_t>& w_shape, int64_t group) {
  return x_rank == 3 && w_shape.size() == 3 && w_shape[1] == 1 && w_shape[0] == group && group > 1;
}

// y[n, c, o] = b[c] + sum_k w[c, k] * x[n, c, o * s + k * d - pad] (zero outside the input);
// x is [N, C, g.in[0]], y [N, C, g.out[0]]; b may be null.
void depthwise_conv1d(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t C,
                      const SpatialGeometry& g, ThreadPool* pool);

}  // namespace onyx
