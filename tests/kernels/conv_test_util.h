// Helpers of the convolution tests: a double-precision loop reference for
// 2-D convolution (groups, strides, dilations, pads per side, bias, residual
// and the fused activations of FusedConv / NchwcConv), the blocked layout
// and a scaled comparison.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/dnnl_conv.h"
#include "onyx/tensor.h"

namespace onyx::test {

inline double reference_activation(double v, const std::string& act, const std::vector<float>& p) {
  if (act == "Relu") return v > 0 ? v : 0;
  if (act == "LeakyRelu") return v > 0 ? v : v * p[0];
  if (act == "Clip") return std::min<double>(std::max<double>(v, p[0]), p[1]);
  if (act == "HardSigmoid") return std::min(1.0, std::max(0.0, p[0] * v + p[1]));
  if (act == "HardSwish") return v * std::min(1.0, std::max(0.0, v / 6 + 0.5));
  if (act == "Sigmoid") return 1.0 / (1.0 + std::exp(-v));
  if (act == "Tanh") return std::tanh(v);
  if (act == "Swish") return v / (1.0 + std::exp(-p[0] * v));
  return v;
}

struct ReferenceConv {
  int64_t group = 1, stride = 1, dil = 1;
  std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
  const Tensor* b = nullptr;
  const Tensor* z = nullptr;  // residual, the output's shape
  std::string act;            // empty: none
  std::vector<float> act_params;
};

// y = act(conv(x, w) + b + z) for plain NCHW x and w [M, C / group, KH, KW].
inline Tensor reference_conv(const Tensor& x, const Tensor& w, const ReferenceConv& c) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), M = w.dim(0), KH = w.dim(2), KW = w.dim(3);
  const int64_t OH = (H + c.pads[0] + c.pads[2] - (KH - 1) * c.dil - 1) / c.stride + 1;
  const int64_t OW = (W + c.pads[1] + c.pads[3] - (KW - 1) * c.dil - 1) / c.stride + 1;
  const int64_t Cg = C / c.group, Mg = M / c.group;
  Tensor y(DataType::Float, {N, M, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = c.b ? c.b->data<float>()[m] : 0.0;
          const int64_t g = m / Mg;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t ih = oh * c.stride - c.pads[0] + i * c.dil, iw = ow * c.stride - c.pads[1] + j * c.dil;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += static_cast<double>(x.data<float>()[((n * C + g * Cg + ci) * H + ih) * W + iw]) *
                       w.data<float>()[((m * Cg + ci) * KH + i) * KW + j];
              }
          const int64_t k = ((n * M + m) * OH + oh) * OW + ow;
          if (c.z) acc += c.z->data<float>()[k];
          y.data<float>()[k] = static_cast<float>(reference_activation(acc, c.act, c.act_params));
        }
  return y;
}

// x (plain NCHW) in the blocked layout.
inline Tensor to_blocked(const Tensor& x, int block) {
  Tensor y(DataType::Float, blocked_shape(x.shape(), block));
  reorder_to_blocked(x.data<float>(), x.shape(), block, y.data<float>(), nullptr);
  return y;
}

// Every value of `got` within tol * max|want| of `want`.
inline void expect_close(const Tensor& got, const Tensor& want, float tol, const std::string& what = "") {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  float scale = 1e-6f;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(want.data<float>()[i]));
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], tol * scale) << what << " at " << i;
}

}  // namespace onyx::test
