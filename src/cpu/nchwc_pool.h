// Max / average / global average pooling on blocked activations
// [N, C/b, H, W, b] (b = 8 or 16), written for the blocked layout itself: a
// window of b channels is one vector, so every output pixel is a handful of
// vector max/add instructions and the pass is bound by memory bandwidth.
// oneDNN 2.6's pooling ran these at half that speed (SqueezeNet's first
// MaxPool: 0.28 ms against 0.13 ms for ONNX Runtime, 1 thread).
#pragma once
#include "base/thread_pool.h"
#include "cpu/conv_geometry.h"
#include "onyx/tensor.h"

namespace onyx {

struct BlockedPoolConfig {
  enum Kind { Max, Average, GlobalAverage } kind = Max;
  SpatialAttrs attrs;
  bool count_include_pad = false;
};

class BlockedPool {
 public:
  explicit BlockedPool(BlockedPoolConfig cfg) : cfg_(std::move(cfg)) {}
  // Logical output shape [N, C, OH, OW] for logical input [N, C, H, W].
  Shape output_shape(const Shape& x_logical) const;
  // x: [N, C/b, H, W, b]; y: [N, C/b, OH, OW, b]. 2-D pooling only.
  void run(const float* x, const Shape& x_logical, int block, float* y, ThreadPool* pool) const;

 private:
  SpatialGeometry geometry(const Shape& x_logical) const;
  BlockedPoolConfig cfg_;
};

}  // namespace onyx
