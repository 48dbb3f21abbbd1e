// oneDNN-backed float convolution and pooling (built when ONYX_WITH_DNNL is
// on). Activations come in one of two layouts:
//   plain   [N, C, H, W]                 (ONNX's NCHW)
//   blocked [N, ceil(C/b), H, W, b]      (nChw16c / nChw8c, b = 16 or 8;
//                                         channels past C are padding)
// The com.onyx Nchwc* ops (docs/fused_ops.md) keep the blocked layout through
// chains of convolutions and pools; Conv / FusedConv use the same code with
// plain inputs and outputs. Primitives are created once per input shape and
// thread count and cached (run is const and may be called concurrently);
// constant weights are reordered into the primitive's layout once.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/conv_geometry.h"
#include "onyx/tensor.h"

namespace onyx {

// True when this build has oneDNN.
bool dnnl_available();

// Whether the CPU kernel of this op type may hand convolutions to oneDNN,
// whose OpenMP threads then live beside the session's pool.
bool runs_dnnl_convolutions(const std::string& op_type);

// The channel block this CPU prefers: 16 with AVX-512, else 8.
int dnnl_preferred_block();

struct DnnlConvConfig {
  SpatialAttrs attrs;
  int64_t group = 1;
  std::string activation;  // as FusedConv's attribute; empty for none
  std::vector<float> activation_params;
  // Weights are a constant of the model: reorder them once and keep them.
  bool constant_weights = false;
};

class DnnlConv {
 public:
  // Throws (kernel_fail) when the configuration can't be handled; check
  // `supports` first.
  explicit DnnlConv(DnnlConvConfig cfg);
  ~DnnlConv();
  // Whether a conv with this config / weight rank can run here (float, 2-D).
  static bool supports(const DnnlConvConfig& cfg, int weight_rank);

  // x: plain (x_block == 0) or blocked with x_block; y likewise with y_block.
  // z (optional) has y's layout and shape; y = act(conv(x) + b + z).
  // Returns the output shape through `y` (allocated by the caller via alloc).
  struct Io {
    const float* x = nullptr;
    Shape x_shape;  // the tensor's shape as stored (rank 4 plain, 5 blocked)
    int x_block = 0;
    const Tensor* w = nullptr;
    const Tensor* b = nullptr;
    const float* z = nullptr;
    int y_block = 0;
  };
  // The logical output shape [N, M, OH, OW] for an input of logical shape [N, C, H, W].
  Shape output_shape(const Shape& x_logical, const Shape& w_shape) const;
  // False where y still lacks the config's activation (a plain y only): the
  // caller applies it (oneDNN's GEMM-based convolution applies it slowly).
  [[nodiscard]] bool run(const Io& io, float* y, ThreadPool* pool) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Max / average pooling and global average pooling on blocked tensors.
struct DnnlPoolConfig {
  enum Kind { Max, Average, GlobalAverage } kind = Max;
  SpatialAttrs attrs;
  bool count_include_pad = false;
};

class DnnlPool {
 public:
  explicit DnnlPool(DnnlPoolConfig cfg);
  ~DnnlPool();
  // Logical output shape [N, C, OH, OW] for logical input [N, C, H, W].
  Shape output_shape(const Shape& x_logical) const;
  void run(const float* x, const Shape& x_logical, int block, float* y, ThreadPool* pool) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Layout conversions between plain NCHW (any rank >= 3: N, C, spatial...) and
// blocked [N, ceil(C/b), spatial..., b]; blocked padding is written as zeros.
void reorder_to_blocked(const float* x, const Shape& plain, int block, float* y, ThreadPool* pool);
void reorder_from_blocked(const float* x, const Shape& plain, int block, float* y, ThreadPool* pool);
// The same over depth planes (cpu/depth_planes_conv.h): planes od * depth_stride
// (od < OD) of plain x [N, C, D, S] (S positions per plane) as the blocked
// images n * OD + od of [N * OD, ceil(C/b), S, b]; and those images back into
// planes od of plain y [N, C, OD, S].
void reorder_depth_planes_to_blocked(const float* x, int64_t N, int64_t C, int64_t D, int64_t S, int64_t depth_stride,
                                     int64_t OD, int block, float* y, ThreadPool* pool);
void reorder_blocked_to_depth_planes(const float* x, int64_t N, int64_t C, int64_t OD, int64_t S, int block, float* y,
                                     ThreadPool* pool);
// The same between channels-last [N, spatial..., C] and blocked: `nhwc` is the
// channels-last shape. Each position's channels are contiguous on both sides,
// so these are copies of block-wide runs (ConvNeXt's permutes around convs).
void reorder_channels_last_to_blocked(const float* x, const Shape& nhwc, int block, float* y, ThreadPool* pool);
void reorder_blocked_to_channels_last(const float* x, const Shape& nhwc, int block, float* y, ThreadPool* pool);

// Shape helpers.
Shape blocked_shape(const Shape& plain, int block);

}  // namespace onyx
