// Direct convolution on the blocked activation layout [N, C/16, H, W, 16]
// with AVX-512 micro-kernels (nchwc_conv_avx512.cc), used by NchwcConv in
// place of oneDNN for the shapes where it measured faster (see
// direct_conv_preferred in nchwc_conv.cc).
//
// Handles: 2-D, any kernel / stride / dilation / padding; blocked input
// (block 16), or plain NCHW input with one group (the first conv of a CNN);
// groups whose input and output channels per group are multiples of 16;
// depthwise (group == C == M); bias, residual z and the activations Relu,
// LeakyRelu, Clip, HardSigmoid, HardSwish, Sigmoid, Tanh in the store:
// y = act(conv(x) + b + z). Channels past C / M in the last block are zero.
//
// ONYX_CONV_DIRECT=0 never uses it, =1 whenever it can run, unset: the policy.
#pragma once
#include <memory>

#include "cpu/dnnl_conv.h"

namespace onyx {

// True when this CPU has AVX-512F (checked once).
bool nchwc_direct_available();

// The shape of one convolution, for the selection policy.
struct DirectConvShape {
  int64_t C = 0, M = 0, H = 0, W = 0, OH = 0, OW = 0, KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t group = 1;
  bool plain_input = false;
};
// Whether the direct kernel is expected to beat oneDNN on this shape.
// one_runtime: the pool runs on oneDNN's OpenMP team, so mixing the two
// kernels costs no switch between thread sets.
bool direct_conv_preferred(const DirectConvShape& s, int threads, bool one_runtime);

class NchwcDirectConv {
 public:
  // Null when the configuration can't run here (no AVX-512, block != 16,
  // activation not supported, not 2-D).
  // bias_constant: input 2, when given, is a constant (it is packed once).
  static std::unique_ptr<NchwcDirectConv> create(const DnnlConvConfig& cfg, int block, bool bias_constant = true);
  ~NchwcDirectConv();

  // Whether this call (shapes; weights and bias constant) can run here.
  bool supports(const DnnlConv::Io& io) const;
  // supports() and the policy / ONYX_CONV_DIRECT say to use it (cached per shape).
  bool use_for(const DnnlConv::Io& io, const ThreadPool* pool) const;
  // Same contract as DnnlConv::run with y_block == 16; requires supports(io).
  // The weights (and bias) are packed on the first call and kept: they must
  // be constants that stay at the same address.
  void run(const DnnlConv::Io& io, float* y, ThreadPool* pool) const;

 private:
  NchwcDirectConv() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
