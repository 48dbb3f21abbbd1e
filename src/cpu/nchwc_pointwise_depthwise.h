// A 1x1 convolution feeding a depthwise one - the expansion and depthwise
// layers of an inverted residual block (MobileNetV2 / V3, MnasNet,
// EfficientNet) - computed band by band on the blocked layout (block 16,
// AVX-512 micro-kernels of nchwc_conv_kernel.h). Each thread computes a few
// rows of the expanded tensor for a tile of channel blocks into a buffer that
// stays in L2 and runs the depthwise rows that read them at once, so the
// expanded tensor (6x the block's channels: 4.8 MB at MobileNetV2's 112x112)
// is never written to memory and read back.
#pragma once
#include <memory>
#include <vector>

#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_conv.h"

namespace onyx {

class NchwcPointwiseDepthwise {
 public:
  // pointwise: 1x1, stride 1, unpadded, one group, weights [M, C, 1, 1];
  // depthwise: group M, weights [M, 1, KH, KW]; biases optional (length M).
  // Null when this CPU lacks AVX-512, an activation has no micro-kernel or
  // the weights don't have those shapes.
  static std::unique_ptr<NchwcPointwiseDepthwise> create(const DnnlConvConfig& pointwise, const Tensor& w_pointwise,
                                                         const Tensor* b_pointwise, const DnnlConvConfig& depthwise,
                                                         const Tensor& w_depthwise, const Tensor* b_depthwise);
  ~NchwcPointwiseDepthwise();

  // The blocked output shape for a blocked input [N, ceil(C/16), H, W, 16];
  // throws when the input does not fit the weights.
  Shape output_shape(const Shape& x_blocked) const;
  // Whether fusing pays for this input on `pool` (null: one thread)
  // (ONYX_FUSE_POINTWISE_DEPTHWISE=0 / 1 forces it off / on).
  bool pays_for(const Shape& x_blocked, const ThreadPool* pool) const;
  // y (output_shape) = dw_act(depthwise(pw_act(pointwise(x) + b) ) + b_dw).
  void run(const float* x, const Shape& x_blocked, float* y, ThreadPool* pool) const;

 private:
  NchwcPointwiseDepthwise() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
