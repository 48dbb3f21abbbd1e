#include "cpu/depthwise_conv1d.h"

#include <algorithm>

namespace onyx {
namespace {

// One channel's row; the float loops compiled for AVX-512, AVX2 and baseline x86-64.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))
#endif
void depthwise_row(const float* x, int64_t in, const float* w, int64_t taps, float bias, float* y, int64_t out,
                   int64_t stride, int64_t dilation, int64_t pad) {
  std::fill(y, y + out, bias);
  for (int64_t k = 0; k < taps; ++k) {
    const int64_t off = k * dilation - pad;  // input index of output 0
    // outputs whose input o * stride + off lies in [0, in)
    const int64_t lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
    const int64_t hi = std::min(out, in - 1 - off < 0 ? 0 : (in - 1 - off) / stride + 1);
    const float wk = w[k];
    if (stride == 1) {
      const float* xs = x + off;
      for (int64_t o = lo; o < hi; ++o) y[o] += wk * xs[o];
    } else {
      for (int64_t o = lo; o < hi; ++o) y[o] += wk * x[o * stride + off];
    }
  }
}

}  // namespace

void depthwise_conv1d(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t C,
                      const SpatialGeometry& g, ThreadPool* pool) {
  const int64_t in = g.in[0], out = g.out[0], taps = g.kernel[0];
  parallel_for(N * C * out * taps > (1 << 16) ? pool : nullptr, N * C, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % C;
      depthwise_row(x + r * in, in, w + c * taps, taps, b ? b[c] : 0.0f, y + r * out, out, g.strides[0],
                    g.dilations[0], g.pad_begin[0]);
    }
  });
}

}  // namespace onyx
