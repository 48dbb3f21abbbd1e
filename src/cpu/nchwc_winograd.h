// Winograd F(4x4, 3x3) and F(2x2, 3x3) convolution on the blocked activation
// layout [N, C/16, H, W, 16]: 3x3 kernels, stride 1, dilation 1, one group or
// groups whose input and output channels are whole blocks, any padding,
// blocked input and output (block 16), constant weights; bias, residual z and
// the activations of the direct kernel (nchwc_conv.h) applied in the output
// transform.
//
// Per chunk of m x m output tiles, on one thread: the input tiles are
// transformed ((m+2)^2 positions), each position is a 1x1 convolution over
// the chunk's tiles run by the direct kernel's tile kernels against weights
// transformed and packed at the first call, and the products are transformed
// back into the output rows. 2.25 (F(2,3)) to 4 (F(4,3)) times fewer
// multiplications than the direct kernel, for more memory traffic: the
// policy (winograd_conv_preferred) says where that wins.
//
// ONYX_CONV_WINOGRAD_OWN=0 never uses it, =1 whenever it can run, unset: the policy.
#pragma once
#include <memory>

#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_conv.h"

namespace onyx {

// Whether this kernel is expected to beat both the direct kernel and oneDNN
// (s must be a 3x3 stride-1 single-group shape); one_runtime as for
// direct_conv_preferred.
bool winograd_conv_preferred(const DirectConvShape& s, int threads, bool one_runtime);

class NchwcWinogradConv {
 public:
  // Null when the configuration can't run here (no AVX-512, block != 16, not
  // 3x3 with one group, activation not supported). tile: the output tile
  // side m of F(m, 3), 2 or 4; 0: chosen per output size.
  static std::unique_ptr<NchwcWinogradConv> create(const DnnlConvConfig& cfg, int block, bool bias_constant = true,
                                                   int tile = 0);
  ~NchwcWinogradConv();

  // Whether this call (shapes; weights and bias constant) can run here.
  bool supports(const DnnlConv::Io& io) const;
  // supports() and the policy / ONYX_CONV_WINOGRAD_OWN say to use it.
  bool use_for(const DnnlConv::Io& io, const ThreadPool* pool) const;
  // Same contract as NchwcDirectConv::run; requires supports(io).
  void run(const DnnlConv::Io& io, float* y, ThreadPool* pool) const;

 private:
  NchwcWinogradConv() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
