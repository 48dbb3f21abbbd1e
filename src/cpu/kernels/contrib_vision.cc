// com.microsoft image ops of ONNX Runtime's CPU provider that no exporter
// fuses into: CropAndResize (TensorFlow's tf.image.crop_and_resize) and
// MaxpoolWithMask (a max pool that stops at masked positions). Both follow
// ORT's CPU kernels, quirks included, so that a model gives ORT's numbers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

const char* const kMsDomain = "com.microsoft";


// ---- CropAndResize ----

// Where output row (or column) `p` of `pooled` samples the input, in input
// pixels, for a box edge pair [start, end] in normalized coordinates. The
// arithmetic mirrors ORT's: float products, except the one-sample centre,
// which ORT computes in double (0.5 is a double literal there) and rounds.
float crop_sample_coord(float start, float end, int64_t size, int64_t pooled, int64_t p) {
  const float extent = static_cast<float>(size - 1);
  if (pooled <= 1) return static_cast<float>(0.5 * static_cast<double>(start + end) * static_cast<double>(size - 1));
  if (p == 0) return start * extent;
  if (p == pooled - 1) return end * extent;
  const float scale = (end - start) * extent / static_cast<float>(pooled - 1);
  return start * extent + static_cast<float>(p) * scale;
}

struct CropAndResizeAttrs {
  bool bilinear = true;
  float extrapolation_value = 0.f;
};

// Fills output pixel (ph, pw) of every channel of one box: `plane(c)` is the
// box's batch image channel c, `out` the box's first output channel.
void crop_pixel(const CropAndResizeAttrs& a, const float* image, int64_t channels, int64_t height, int64_t width,
                float in_y, float in_x, float* out, int64_t plane_out) {
  const int64_t plane_in = height * width;
  if (in_y < 0 || in_y > static_cast<float>(height - 1) || in_x < 0 || in_x > static_cast<float>(width - 1)) {
    for (int64_t c = 0; c < channels; ++c) out[c * plane_out] = a.extrapolation_value;
    return;
  }
  if (!a.bilinear) {  // nearest: roundf, halves away from zero
    const int64_t at = static_cast<int64_t>(std::round(in_y)) * width + static_cast<int64_t>(std::round(in_x));
    for (int64_t c = 0; c < channels; ++c) out[c * plane_out] = image[c * plane_in + at];
    return;
  }
  const int64_t y0 = static_cast<int64_t>(std::floor(in_y)), y1 = static_cast<int64_t>(std::ceil(in_y));
  const int64_t x0 = static_cast<int64_t>(std::floor(in_x)), x1 = static_cast<int64_t>(std::ceil(in_x));
  const float y_lerp = in_y - static_cast<float>(y0), x_lerp = in_x - static_cast<float>(x0);
  for (int64_t c = 0; c < channels; ++c) {
    const float* p = image + c * plane_in;
    const float top = p[y0 * width + x0] + (p[y0 * width + x1] - p[y0 * width + x0]) * x_lerp;
    const float bottom = p[y1 * width + x0] + (p[y1 * width + x1] - p[y1 * width + x0]) * x_lerp;
    out[c * plane_out] = top + (bottom - top) * y_lerp;
  }
}

void run_crop_and_resize(KernelContext& ctx, const CropAndResizeAttrs& a) {
  const Tensor& X = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& batch_indices = ctx.input(2);
  const Tensor& crop_size = ctx.input(3);
  check_dtype("CropAndResize", "X", X, DataType::Float);
  check_dtype("CropAndResize", "rois", rois, DataType::Float);
  check_dtype("CropAndResize", "batch_indices", batch_indices, DataType::Int32);
  check_dtype("CropAndResize", "crop_size", crop_size, DataType::Int32);
  ONYX_KERNEL_CHECK(X.rank() == 4, "CropAndResize: X must be 4-D [N, C, H, W], got " + shape_to_string(X.shape()));
  ONYX_KERNEL_CHECK(rois.rank() == 2 && rois.dim(1) == 4,
                    "CropAndResize: rois must be [num_rois, 4], got " + shape_to_string(rois.shape()));
  ONYX_KERNEL_CHECK(batch_indices.rank() == 1 && batch_indices.dim(0) == rois.dim(0),
                    "CropAndResize: batch_indices must be [num_rois] = [" + std::to_string(rois.dim(0)) + "], got " +
                        shape_to_string(batch_indices.shape()));
  ONYX_KERNEL_CHECK(
      crop_size.rank() == 1 && crop_size.dim(0) == 2,
      "CropAndResize: crop_size must hold 2 values (height, width), got shape " + shape_to_string(crop_size.shape()));
  const int64_t crop_h = crop_size.data<int32_t>()[0], crop_w = crop_size.data<int32_t>()[1];
  ONYX_KERNEL_CHECK(crop_h > 0 && crop_w > 0, "CropAndResize: crop_size must be positive, got " +
                                                  std::to_string(crop_h) + " x " + std::to_string(crop_w));
  const int64_t num_rois = rois.dim(0), batch = X.dim(0), channels = X.dim(1), height = X.dim(2), width = X.dim(3);
  const int32_t* bidx = batch_indices.data<int32_t>();
  for (int64_t n = 0; n < num_rois; ++n)
    ONYX_KERNEL_CHECK(bidx[n] >= 0 && bidx[n] < batch, "CropAndResize: batch_indices[" + std::to_string(n) +
                                                           "] = " + std::to_string(bidx[n]) + " is outside [0, " +
                                                           std::to_string(batch) + ")");
  Tensor& Y = ctx.allocate_output(0, DataType::Float, {num_rois, channels, crop_h, crop_w});
  const float* x = X.data<float>();
  const float* boxes = rois.data<float>();
  float* y = Y.data<float>();
  const int64_t plane_out = crop_h * crop_w;
  parallel_for(ctx.thread_pool(), num_rois, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const float* box = boxes + n * 4;  // y1, x1, y2, x2
      const float* image = x + bidx[n] * channels * height * width;
      float* out = y + n * channels * plane_out;
      for (int64_t ph = 0; ph < crop_h; ++ph) {
        const float in_y = crop_sample_coord(box[0], box[2], height, crop_h, ph);
        for (int64_t pw = 0; pw < crop_w; ++pw) {
          const float in_x = crop_sample_coord(box[1], box[3], width, crop_w, pw);
          crop_pixel(a, image, channels, height, width, in_y, in_x, out + ph * crop_w + pw, plane_out);
        }
      }
    }
  });
}

// ---- MaxpoolWithMask ----

// One spatial dimension of the pool as ORT's PoolAttributes sizes it
// (dilation 1, no ceil_mode: the op has neither attribute). ORT's SAME pads
// halve a possibly negative total with C++ truncation, and its output size
// truncates too, so a window can start past the left edge; kept as is.
struct PoolDim {
  int64_t in, kernel, stride, pad_begin, out;
};

PoolDim pool_dim(const std::string& auto_pad, int64_t in, int64_t kernel, int64_t stride, int64_t pad_b,
                 int64_t pad_e) {
  PoolDim d{in, kernel, stride, pad_b, 0};
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const int64_t target = (in + stride - 1) / stride;
    const int64_t needed = (target - 1) * stride + kernel - in;
    d.pad_begin = auto_pad == "SAME_LOWER" ? (needed + 1) / 2 : needed / 2;
    d.out = (in + needed - kernel) / stride + 1;
  } else if (auto_pad == "VALID") {
    d.pad_begin = 0;
    d.out = (in - kernel) / stride + 1;
  } else if (auto_pad == "NOTSET" || auto_pad.empty()) {
    d.out = (in + pad_b + pad_e - kernel) / stride + 1;
  } else {
    kernel_fail("MaxpoolWithMask: unknown auto_pad '" + auto_pad + "'");
  }
  if (d.out < 0) d.out = 0;
  return d;
}

struct MaskPoolAttrs {
  std::string auto_pad;
  std::vector<int64_t> kernel, strides, pads;
};

// Max over one window of one channel, scanning in row-major order. ORT stops
// the innermost loop (the last spatial dimension) at a masked position, not
// the whole window, and never treats the channel's first element as masked in
// 2-D and 3-D (its test is `index > 0`), whereas in 1-D it does; a window
// that sees nothing gives the lowest float.
float masked_window_max(const float* x, const int32_t* m, const std::vector<PoolDim>& d,
                        const std::vector<int64_t>& start, const std::vector<int64_t>& end) {
  const size_t nd = d.size();
  float best = std::numeric_limits<float>::lowest();
  std::vector<int64_t> at(start);
  for (size_t i = 0; i < nd; ++i)
    if (start[i] >= end[i]) return best;
  for (;;) {
    int64_t base = 0;  // index of the row's first position at[0..nd-2], at[nd-1] = start
    for (size_t i = 0; i + 1 < nd; ++i) base = base * d[i].in + at[i];
    base *= d[nd - 1].in;
    for (int64_t w = start[nd - 1]; w < end[nd - 1]; ++w) {
      const int64_t idx = base + w;
      if ((nd == 1 || idx > 0) && m[idx] == 0) break;
      if (x[idx] > best) best = x[idx];
    }
    int i = static_cast<int>(nd) - 2;  // advance the outer dimensions like an odometer
    for (; i >= 0; --i) {
      if (++at[i] < end[i]) break;
      at[i] = start[i];
    }
    if (i < 0) return best;
  }
}

void run_maxpool_with_mask(KernelContext& ctx, const MaskPoolAttrs& a) {
  const Tensor& X = ctx.input(0);
  const Tensor& M = ctx.input(1);
  check_dtype("MaxpoolWithMask", "X", X, DataType::Float);
  check_dtype("MaxpoolWithMask", "M", M, DataType::Int32);
  const int rank = X.rank();
  const std::string shapes = shape_to_string(X.shape()) + " and " + shape_to_string(M.shape());
  ONYX_KERNEL_CHECK(rank >= 3 && rank <= 5, "MaxpoolWithMask: X must have rank 3 to 5, got " + shapes);
  ONYX_KERNEL_CHECK(M.rank() == rank, "MaxpoolWithMask: M must have X's rank, got " + shapes);
  const size_t nd = static_cast<size_t>(rank - 2);
  ONYX_KERNEL_CHECK(a.kernel.size() == nd, "MaxpoolWithMask: kernel_shape has " + std::to_string(a.kernel.size()) +
                                               " values for " + std::to_string(nd) + " spatial dimensions");
  for (size_t i = 2; i < static_cast<size_t>(rank); ++i)
    ONYX_KERNEL_CHECK(M.dim(i) == X.dim(i), "MaxpoolWithMask: M's spatial dimensions must equal X's, got " + shapes);
  const int64_t channels = X.dim(0) * X.dim(1);
  // ORT steps the mask by a channel's element count modulo M's N * C (a count
  // of channels, not of elements): a [1, 1, ...] mask serves every channel;
  // a full one is read at those offsets. Kept for ORT's numbers.
  const int64_t mask_channels = M.dim(0) * M.dim(1);
  ONYX_KERNEL_CHECK(channels == 0 || mask_channels > 0, "MaxpoolWithMask: M's N and C must be nonzero, got " + shapes);
  std::vector<PoolDim> d(nd);
  Shape out_shape{X.dim(0), X.dim(1)};
  for (size_t i = 0; i < nd; ++i) {
    const int64_t stride = a.strides.empty() ? 1 : a.strides[i];
    const int64_t pb = a.pads.empty() ? 0 : a.pads[i], pe = a.pads.empty() ? 0 : a.pads[i + nd];
    d[i] = pool_dim(a.auto_pad, X.dim(static_cast<int>(i) + 2), a.kernel[i], stride, pb, pe);
    out_shape.push_back(d[i].out);
  }
  Tensor& Y = ctx.allocate_output(0, DataType::Float, out_shape);
  int64_t in_plane = 1, out_plane = 1;
  for (const PoolDim& pd : d) {
    in_plane *= pd.in;
    out_plane *= pd.out;
  }
  const float* x = X.data<float>();
  const int32_t* m = M.data<int32_t>();
  float* y = Y.data<float>();
  parallel_for(out_plane * channels >= 4096 ? ctx.thread_pool() : nullptr, channels, [&](int64_t c0, int64_t c1) {
    std::vector<int64_t> pos(nd), start(nd), end(nd);
    for (int64_t c = c0; c < c1; ++c) {
      const int32_t* mc = m + (c * in_plane) % mask_channels;
      for (int64_t o = 0; o < out_plane; ++o) {
        int64_t rest = o;
        for (size_t i = nd; i-- > 0;) {
          pos[i] = rest % d[i].out;
          rest /= d[i].out;
          const int64_t s = pos[i] * d[i].stride - d[i].pad_begin;
          start[i] = std::max<int64_t>(s, 0);
          end[i] = std::min(s + d[i].kernel, d[i].in);
        }
        y[c * out_plane + o] = masked_window_max(x + c * in_plane, mc, d, start, end);
      }
    }
  });
}

}  // namespace

void register_contrib_vision(KernelRegistry& r) {
  r.add("CropAndResize", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          CropAndResizeAttrs a;
          const std::string mode = ic.get_string("mode", "bilinear");
          if (mode != "bilinear" && mode != "nearest")
            kernel_fail("CropAndResize: mode must be \"bilinear\" or \"nearest\", got \"" + mode + "\"");
          a.bilinear = mode == "bilinear";
          a.extrapolation_value = ic.get_float("extrapolation_value", 0.f);
          return [a](KernelContext& ctx) { run_crop_and_resize(ctx, a); };
        }),
        kMsDomain);
  r.add("MaxpoolWithMask", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          MaskPoolAttrs a;
          a.auto_pad = ic.get_string("auto_pad", "NOTSET");
          a.kernel = ic.get_ints("kernel_shape");
          a.strides = ic.get_ints("strides");
          a.pads = ic.get_ints("pads");
          const size_t nd = a.kernel.size();
          if (nd < 1 || nd > 3)
            kernel_fail("MaxpoolWithMask: kernel_shape must have 1 to 3 values, got " + std::to_string(nd));
          for (int64_t k : a.kernel)
            if (k <= 0) kernel_fail("MaxpoolWithMask: kernel_shape values must be positive");
          if (!a.strides.empty() && a.strides.size() != nd)
            kernel_fail("MaxpoolWithMask: strides must have " + std::to_string(nd) + " values");
          for (int64_t s : a.strides)
            if (s <= 0) kernel_fail("MaxpoolWithMask: strides must be positive");
          if (!a.pads.empty() && a.pads.size() != 2 * nd)
            kernel_fail("MaxpoolWithMask: pads must have " + std::to_string(2 * nd) + " values");
          for (int64_t p : a.pads)
            if (p < 0) kernel_fail("MaxpoolWithMask: pads must not be negative");
          return [a](KernelContext& ctx) { run_maxpool_with_mask(ctx, a); };
        }),
        kMsDomain);
}

}  // namespace onyx
