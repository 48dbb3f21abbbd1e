#include "cpu/leading_axis_conv.h"

#include <cstring>

namespace onyx {

namespace {

// Below this many positions per plane, oneDNN's blocked kernel measured
// level or up to 9% faster (8 planes of 28x28 or 40x40, 64..288 channels,
// whose tensors stay in cache); from 56x56 on, these GEMMs were 1.2-1.5x
// faster than it.
constexpr int64_t kMinPlane = 2048;

int64_t plane_size(const SpatialGeometry& g) {
  int64_t p = 1;
  for (int d = 1; d < g.nd; ++d) p *= g.in[d];
  return p;
}

}  // namespace

bool runs_as_leading_axis_gemm(const std::vector<int64_t>& w_shape, const SpatialGeometry& g, int64_t group) {
  if (group != 1 || g.nd < 2 || static_cast<int>(w_shape.size()) != g.nd + 2 || w_shape[2] <= 1) return false;
  for (int d = 1; d < g.nd; ++d)
    if (w_shape[d + 2] != 1 || g.strides[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0) return false;
  return plane_size(g) >= kMinPlane;
}

void leading_axis_conv(const float* x, int64_t N, int64_t C, const float* w, int64_t M, const float* bias,
                       const float* z, const SpatialGeometry& g, GemmActivation act, float* y, ThreadPool* pool) {
  const int64_t K = g.kernel[0], in_planes = g.in[0], out_planes = g.out[0], P = plane_size(g);
  // W [M, C, K] as [M, K, C]: the taps that read inside the input, a
  // contiguous run of them, are then a contiguous run of A's columns.
  std::vector<float> a(static_cast<size_t>(M * K * C));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < K; ++k) a[(m * K + k) * C + c] = w[(m * C + c) * K + k];
  const GemmEpilogue epilogue{nullptr, bias, act};
  std::vector<const float*> rows(static_cast<size_t>(K * C));
  for (int64_t n = 0; n < N; ++n) {
    const float* xn = x + n * C * in_planes * P;
    float* yn = y + n * M * out_planes * P;
    if (z && z + n * M * out_planes * P != yn)
      std::memcpy(yn, z + n * M * out_planes * P, static_cast<size_t>(M * out_planes * P) * sizeof(float));
    for (int64_t o = 0; o < out_planes; ++o) {
      // Taps [k0, k1) read input planes first + k * dilation; the others fall in the padding.
      const int64_t first = o * g.strides[0] - g.pad_begin[0], dil = g.dilations[0];
      int64_t k0 = 0, k1 = K;
      while (k0 < K && first + k0 * dil < 0) ++k0;
      while (k1 > k0 && first + (k1 - 1) * dil >= in_planes) --k1;
      for (int64_t k = k0; k < k1; ++k)
        for (int64_t c = 0; c < C; ++c) rows[(k - k0) * C + c] = xn + (c * in_planes + first + k * dil) * P;
      gemm_f32_rows(M, P, (k1 - k0) * C, 1.0f, a.data() + k0 * C, K * C, rows.data(), z ? 1.0f : 0.0f, yn + o * P,
                    out_planes * P, pool, epilogue);
    }
  }
}

}  // namespace onyx
