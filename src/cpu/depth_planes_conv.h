// A 3-D convolution whose kernel is one plane deep and which pads no planes
// (the (1,k,k) spatial conv of R(2+1)D, S3D and other factorized video
// nets): output plane od of image n is the 2-D convolution of input plane
// od * stride_d. Where that 2-D conv runs as Winograd (3x3, spatial stride
// and dilation 1), the planes are reordered into one batch of blocked 2-D
// images [N * OD, C/16, H, W, 16], run as one BlockedConv and reordered back.
// oneDNN, given the plain 5-D tensors, runs them at the direct kernel's rate:
// 64 -> 144 channels, (1,3,3) over 8x56x56, took 19.5 ms against 10.0 ms
// this way. Without Winograd, the reorders cost more than the blocked
// kernels gain: spatial stride 2, a 5x5 or a dilated 3x3 took 1.05-1.18x
// oneDNN's time.
#pragma once
#include <memory>

#include "cpu/blocked_conv.h"

namespace onyx {

class DepthPlanesConv {
 public:
  // Null where this path does not apply: no AVX-512 or oneDNN, weights not a
  // constant [M, C, 1, KH, KW], more than one group, depth padding, or an
  // activation the blocked kernels lack. cfg: the 3-D conv's.
  static std::unique_ptr<DepthPlanesConv> create(const DnnlConvConfig& cfg, const Tensor* w_constant,
                                                 bool bias_constant);
  // Whether a float input of this shape, with this bias (may be null), runs here.
  bool use_for(const Shape& x_shape, const Tensor* b, const ThreadPool* pool) const;
  // The output [N, M, OD, OH, OW] of an input of shape x_shape.
  Shape output_shape(const Shape& x_shape) const;
  // y = act(conv(x) + b + z), z (y's shape) and b optional; requires use_for.
  void run(const float* x, const Shape& x_shape, const Tensor* b, const float* z, float* y, ThreadPool* pool) const;

 private:
  // The blocked 2-D batch's input (io.x left null).
  DnnlConv::Io planes_io(const Shape& x_shape, const Tensor* b) const;

  DepthPlanesConv(const DnnlConvConfig& cfg2d, const Tensor& w2d, int64_t depth_stride, bool bias_constant)
      : w_(w2d), depth_stride_(depth_stride), conv_(cfg2d, 16, bias_constant) {}
  Tensor w_;  // the constant weights as [M, C, KH, KW]
  int64_t depth_stride_;
  BlockedConv conv_;
};

}  // namespace onyx
