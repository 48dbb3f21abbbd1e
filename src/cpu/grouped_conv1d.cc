#include "cpu/grouped_conv1d.h"

#include <algorithm>
#include <cstring>

#include "base/cpu_features.h"

namespace onyx {
namespace {

constexpr int64_t kTile = 64;  // outputs summed in registers at a time (4 AVX-512 vectors)

// 16 floats as one value (GCC vector extension): the four accumulators stay in registers,
// where a float[64] was kept on the stack and reloaded at every tap (5x slower). v16u is the
// same at float alignment, for loads from any position.
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));

// One output row from its group's input rows, zero-padded in `xp` ([Cg][padded_len], the
// input's position i at i + pad, room for whole tiles past the end). Compiled for AVX-512,
// AVX2 and baseline x86-64.
ONYX_VECTOR_CLONES
void conv_row(const float* xp, int64_t padded_len, int64_t Cg, const float* w, int64_t taps, float bias, float* y,
              int64_t out, int64_t stride, int64_t dilation) {
  for (int64_t o0 = 0; o0 < out; o0 += kTile) {
    float acc[kTile];
    if (stride == 1) {
      v16 a0 = v16{} + bias, a1 = a0, a2 = a0, a3 = a0;
      for (int64_t c = 0; c < Cg; ++c) {
        const float* xc = xp + c * padded_len + o0;
        for (int64_t k = 0; k < taps; ++k) {
          const float wk = w[c * taps + k];
          const float* xk = xc + k * dilation;
          a0 += wk * *reinterpret_cast<const v16u*>(xk);
          a1 += wk * *reinterpret_cast<const v16u*>(xk + 16);
          a2 += wk * *reinterpret_cast<const v16u*>(xk + 32);
          a3 += wk * *reinterpret_cast<const v16u*>(xk + 48);
        }
      }
      std::memcpy(acc, &a0, sizeof a0);
      std::memcpy(acc + 16, &a1, sizeof a1);
      std::memcpy(acc + 32, &a2, sizeof a2);
      std::memcpy(acc + 48, &a3, sizeof a3);
    } else {
      for (int64_t j = 0; j < kTile; ++j) acc[j] = bias;
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t k = 0; k < taps; ++k) {
          const float wk = w[c * taps + k];
          const float* xk = xp + c * padded_len + o0 * stride + k * dilation;
          for (int64_t j = 0; j < kTile; ++j) acc[j] += wk * xk[j * stride];
        }
    }
    std::memcpy(y + o0, acc, std::min(kTile, out - o0) * sizeof(float));
  }
}

}  // namespace

void grouped_conv1d(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t C, int64_t M,
                    int64_t group, const SpatialGeometry& g, ThreadPool* pool) {
  const int64_t in = g.in[0], out = g.out[0], taps = g.kernel[0], s = g.strides[0], d = g.dilations[0];
  const int64_t pad = g.pad_begin[0], Cg = C / group, Mg = M / group;
  const int64_t tiles_end = (out + kTile - 1) / kTile * kTile;
  const int64_t padded_len = std::max(pad + in, (tiles_end - 1) * s + (taps - 1) * d + 1);
  // Rows of one (batch, group) in a task, so that they pad the group's input once.
  parallel_for(N * M * out * Cg * taps > (1 << 16) ? pool : nullptr, N * group, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> xp;
    xp.assign(static_cast<size_t>(Cg * padded_len), 0.0f);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / group, gi = r % group;
      for (int64_t c = 0; c < Cg; ++c)
        std::memcpy(xp.data() + c * padded_len + pad, x + (n * C + gi * Cg + c) * in, in * sizeof(float));
      for (int64_t mg = 0; mg < Mg; ++mg) {
        const int64_t m = gi * Mg + mg;
        conv_row(xp.data(), padded_len, Cg, w + m * Cg * taps, taps, b ? b[m] : 0.0f, y + (n * M + m) * out, out, s,
                 d);
      }
    }
  });
}

}  // namespace onyx
