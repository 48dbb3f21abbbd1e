#include "cpu/depth_planes_conv.h"

#include "base/aligned_memory.h"
#include "cpu/block_transpose_avx512.h"
#include "cpu/dnnl_conv.h"

namespace onyx {

namespace {

constexpr int kBlock = 16;

// Below these, a channel block is mostly padding.
constexpr int64_t kMinChannels = 16;

int64_t ceil_blocks(int64_t c) { return (c + kBlock - 1) / kBlock; }

// The 2-D attribute of a 3-D one ([d, h, w] -> [h, w]); `def` when absent.
std::vector<int64_t> spatial_2d(const std::vector<int64_t>& v, int64_t def) {
  if (v.size() != 3) return {def, def};
  return {v[1], v[2]};
}

}  // namespace

std::unique_ptr<DepthPlanesConv> DepthPlanesConv::create(const DnnlConvConfig& cfg, const Tensor* w,
                                                         bool bias_constant) {
  if (!w || w->dtype() != DataType::Float || w->rank() != 5 || w->dim(2) != 1 || cfg.group != 1 ||
      !cfg.constant_weights || !dnnl_available() || !nchwc_direct_available() ||
      !nchwc::block_transpose_available())
    return nullptr;
  const SpatialAttrs& a = cfg.attrs;
  if (!a.kernel.empty() && a.kernel != std::vector<int64_t>{1, w->dim(3), w->dim(4)}) return nullptr;
  if (!a.pads.empty() && (a.pads.size() != 6 || a.pads[0] != 0 || a.pads[3] != 0)) return nullptr;
  if (!a.strides.empty() && a.strides.size() != 3) return nullptr;
  // A kernel one plane deep pads no planes under SAME_* either: the output
  // has ceil(D / stride) planes, which plane (OD - 1) * stride < D covers.
  DnnlConvConfig planes = cfg;
  planes.attrs.kernel = {w->dim(3), w->dim(4)};
  planes.attrs.strides = spatial_2d(a.strides, 1);
  planes.attrs.dilations = spatial_2d(a.dilations, 1);
  planes.attrs.pads = a.pads.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{a.pads[1], a.pads[2], a.pads[4], a.pads[5]};
  if (!DnnlConv::supports(planes, 4)) return nullptr;
  const int64_t depth_stride = a.strides.empty() ? 1 : a.strides[0];
  if (depth_stride < 1) return nullptr;
  const Tensor w2d = w->reshaped({w->dim(0), w->dim(1), w->dim(3), w->dim(4)});
  return std::unique_ptr<DepthPlanesConv>(new DepthPlanesConv(planes, w2d, depth_stride, bias_constant));
}

DnnlConv::Io DepthPlanesConv::planes_io(const Shape& x_shape, const Tensor* b) const {
  DnnlConv::Io io;
  io.x_shape = {x_shape[0] * ((x_shape[2] - 1) / depth_stride_ + 1), ceil_blocks(x_shape[1]), x_shape[3], x_shape[4],
                kBlock};
  io.x_block = kBlock;
  io.w = &w_;
  io.b = b;
  io.y_block = kBlock;
  return io;
}

bool DepthPlanesConv::use_for(const Shape& x_shape, const Tensor* b, const ThreadPool* pool) const {
  return x_shape.size() == 5 && x_shape[1] == w_.dim(1) && x_shape[1] >= kMinChannels &&
         w_.dim(0) >= kMinChannels && shape_numel(x_shape) > 0 && conv_.runs_winograd(planes_io(x_shape, b), pool);
}

Shape DepthPlanesConv::output_shape(const Shape& x_shape) const {
  const Shape plane = conv_.output_shape({x_shape[0], x_shape[1], x_shape[3], x_shape[4]}, w_.shape());
  return {x_shape[0], w_.dim(0), (x_shape[2] - 1) / depth_stride_ + 1, plane[2], plane[3]};
}

void DepthPlanesConv::run(const float* x, const Shape& x_shape, const Tensor* b, const float* z, float* y,
                          ThreadPool* pool) const {
  const Shape ys = output_shape(x_shape);
  const int64_t N = x_shape[0], C = x_shape[1], D = x_shape[2], M = ys[1], OD = ys[2];
  const int64_t S = x_shape[3] * x_shape[4], OS = ys[3] * ys[4];
  const int64_t images = N * OD, y_size = images * ceil_blocks(M) * OS * kBlock;
  thread_local AlignedScratch x_scratch, y_scratch, z_scratch;
  float* xb = x_scratch.get(static_cast<size_t>(images * ceil_blocks(C) * S * kBlock));
  float* yb = y_scratch.get(static_cast<size_t>(y_size));
  reorder_depth_planes_to_blocked(x, N, C, D, S, depth_stride_, OD, kBlock, xb, pool);
  DnnlConv::Io io = planes_io(x_shape, b);
  io.x = xb;
  if (z) {
    float* zb = z_scratch.get(static_cast<size_t>(y_size));
    reorder_depth_planes_to_blocked(z, N, M, OD, OS, 1, OD, kBlock, zb, pool);
    io.z = zb;
  }
  conv_.run(io, yb, pool);
  reorder_blocked_to_depth_planes(yb, N, M, OD, OS, kBlock, y, pool);
}

}  // namespace onyx
