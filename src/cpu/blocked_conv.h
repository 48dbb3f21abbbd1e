// One convolution on the blocked layout [N, C/16, spatial..., 16]: Onyx's
// AVX-512 Winograd (nchwc_winograd.h) or direct kernel (nchwc_conv.h) where
// their policies say they beat oneDNN, else oneDNN. The NchwcConv kernel and
// the depth-plane path of 3-D convs (depth_planes_conv.h) run through it.
#pragma once
#include <memory>

#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_conv.h"
#include "cpu/nchwc_winograd.h"
#include "kernels/kernel.h"

namespace onyx {

class BlockedConv {
 public:
  BlockedConv(const DnnlConvConfig& cfg, int block, bool bias_constant)
      : conv_(cfg),
        direct_(NchwcDirectConv::create(cfg, block, bias_constant)),
        winograd_(NchwcWinogradConv::create(cfg, block, bias_constant)) {}
  Shape output_shape(const Shape& x_logical, const Shape& w_shape) const { return conv_.output_shape(x_logical, w_shape); }
  // Whether run(io) takes the Winograd kernel.
  bool runs_winograd(const DnnlConv::Io& io, const ThreadPool* pool) const {
    return winograd_ && winograd_->use_for(io, pool);
  }
  void run(const DnnlConv::Io& io, float* y, ThreadPool* pool) const {
    if (winograd_ && winograd_->use_for(io, pool)) winograd_->run(io, y, pool);
    else if (direct_ && direct_->use_for(io, pool)) direct_->run(io, y, pool);
    else if (!conv_.run(io, y, pool)) kernel_fail("a blocked convolution's output lacks its activation");
  }

 private:
  DnnlConv conv_;
  std::unique_ptr<NchwcDirectConv> direct_;
  std::unique_ptr<NchwcWinogradConv> winograd_;
};

}  // namespace onyx
