// Detection and sampling ops: NonMaxSuppression, RoiAlign, GridSample,
// AffineGrid, Col2Im, CenterCropPad.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "cpu/cpu_provider.h"
#include "cpu/float_values.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {


// ---------------------------------------------------------------- NonMaxSuppression

struct Box {
  float y1, x1, y2, x2;
};

Box read_box(const float* b, bool center) {
  Box r;
  if (center) {
    float xc = b[0], yc = b[1], w = b[2], h = b[3];
    r.x1 = xc - w / 2;
    r.x2 = xc + w / 2;
    r.y1 = yc - h / 2;
    r.y2 = yc + h / 2;
  } else {
    r.y1 = std::min(b[0], b[2]);
    r.y2 = std::max(b[0], b[2]);
    r.x1 = std::min(b[1], b[3]);
    r.x2 = std::max(b[1], b[3]);
  }
  return r;
}

// The boxes NMS has kept so far, as columns (their areas computed once).
struct PickedBoxes {
  std::vector<float> x1, y1, x2, y2, area;
  void clear() { x1.clear(), y1.clear(), x2.clear(), y2.clear(), area.clear(); }
  void push(const Box& b) {
    x1.push_back(b.x1), y1.push_back(b.y1), x2.push_back(b.x2), y2.push_back(b.y2);
    area.push_back((b.x2 - b.x1) * (b.y2 - b.y1));
  }
  int64_t size() const { return static_cast<int64_t>(x1.size()); }
};

// Whether some kept box suppresses b: their IOU is strictly greater than
// the threshold (boxes without area, or apart, never suppress). Branch-free
// over blocks of kept boxes so that it vectorizes (box by box with early
// exits, a detector's NMS over thousands of candidates took most of its run).
ONYX_VECTOR_CLONES
bool any_suppresses(const PickedBoxes& p, const Box& b, float iou_threshold) {
  const float area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  const float* x1 = p.x1.data();
  const float* y1 = p.y1.data();
  const float* x2 = p.x2.data();
  const float* y2 = p.y2.data();
  const float* area = p.area.data();
  const int64_t n = p.size();
  for (int64_t i0 = 0; i0 < n; i0 += 64) {
    const int64_t i1 = std::min(n, i0 + 64);
    int hit = 0;
    for (int64_t i = i0; i < i1; ++i) {
      const float iw = std::min(x2[i], b.x2) - std::max(x1[i], b.x1);
      const float ih = std::min(y2[i], b.y2) - std::max(y1[i], b.y1);
      const float inter = iw * ih, uni = area[i] + area_b - inter;
      hit |= (iw > 0) & (ih > 0) & (area[i] > 0) & (area_b > 0) & (uni > 0) & (inter / uni > iou_threshold);
    }
    if (hit) return true;
  }
  return false;
}

KernelFactory nms_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    int64_t center = ic.get_int("center_point_box", 0);
    if (center != 0 && center != 1) kernel_fail("center_point_box must be 0 or 1");
    return [center](KernelContext& ctx) {
      const Tensor& boxes_t = ctx.input(0);
      const Tensor& scores_t = ctx.input(1);
      if (boxes_t.rank() != 3 || boxes_t.dim(2) != 4)
        kernel_fail("boxes must have shape [batches, boxes, 4], got " + shape_to_string(boxes_t.shape()));
      if (scores_t.rank() != 3 || scores_t.dim(0) != boxes_t.dim(0) || scores_t.dim(2) != boxes_t.dim(1))
        kernel_fail("scores shape " + shape_to_string(scores_t.shape()) + " does not match boxes " +
                    shape_to_string(boxes_t.shape()));
      int64_t max_out = 0;
      if (ctx.has_input(2) && ctx.input(2).numel() > 0) max_out = ctx.input(2).int_at(0);
      float iou_th = 0.f;
      if (ctx.has_input(3) && ctx.input(3).numel() > 0) iou_th = static_cast<float>(ctx.input(3).float_at(0));
      bool has_score_th = ctx.has_input(4) && ctx.input(4).numel() > 0;
      float score_th = has_score_th ? static_cast<float>(ctx.input(4).float_at(0)) : 0.f;
      const int64_t B = boxes_t.dim(0), S = boxes_t.dim(1), K = scores_t.dim(1);
      std::vector<float> bx(static_cast<size_t>(boxes_t.numel())), sc(static_cast<size_t>(scores_t.numel()));
      for (size_t i = 0; i < bx.size(); ++i) bx[i] = static_cast<float>(boxes_t.float_at(i));
      for (size_t i = 0; i < sc.size(); ++i) sc[i] = static_cast<float>(scores_t.float_at(i));
      std::vector<int64_t> result;
      if (max_out > 0) {
        std::vector<Box> bs(static_cast<size_t>(S));
        std::vector<int64_t> order;
        PickedBoxes picked;
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t s = 0; s < S; ++s) bs[s] = read_box(&bx[(b * S + s) * 4], center == 1);
          for (int64_t k = 0; k < K; ++k) {
            const float* cs = &sc[(b * K + k) * S];
            order.clear();
            for (int64_t s = 0; s < S; ++s)
              if (!has_score_th || cs[s] > score_th) order.push_back(s);
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return cs[a] > cs[c]; });
            picked.clear();
            for (int64_t s : order) {
              if (picked.size() >= max_out) break;
              if (any_suppresses(picked, bs[s], iou_th)) continue;
              picked.push(bs[s]);
              result.insert(result.end(), {b, k, s});
            }
          }
        }
      }
      int64_t n = static_cast<int64_t>(result.size() / 3);
      Tensor& out = ctx.allocate_output(0, DataType::Int64, {n, 3});
      std::copy(result.begin(), result.end(), out.data<int64_t>());
    };
  });
}

// ---------------------------------------------------------------- RoiAlign

KernelFactory roi_align_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::string mode = ic.get_string("mode", "avg");
    if (mode != "avg" && mode != "max") kernel_fail("RoiAlign mode must be 'avg' or 'max', got '" + mode + "'");
    int64_t oh = ic.get_int("output_height", 1), ow = ic.get_int("output_width", 1);
    int64_t sampling = ic.get_int("sampling_ratio", 0);
    float scale = ic.get_float("spatial_scale", 1.f);
    std::string ctm = ic.opset() >= 16 ? ic.get_string("coordinate_transformation_mode", "half_pixel")
                                       : std::string("output_half_pixel");
    if (ctm != "half_pixel" && ctm != "output_half_pixel")
      kernel_fail("unknown coordinate_transformation_mode '" + ctm + "'");
    if (oh <= 0 || ow <= 0) kernel_fail("output_height and output_width must be positive");
    bool half_pixel = ctm == "half_pixel";
    bool is_max = mode == "max";
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      const Tensor& rois = ctx.input(1);
      const Tensor& bidx = ctx.input(2);
      if (X.rank() != 4) kernel_fail("X must be 4-D [N, C, H, W], got " + shape_to_string(X.shape()));
      if (rois.rank() != 2 || rois.dim(1) != 4)
        kernel_fail("rois must have shape [num_rois, 4], got " + shape_to_string(rois.shape()));
      if (bidx.rank() != 1 || bidx.dim(0) != rois.dim(0))
        kernel_fail("batch_indices shape " + shape_to_string(bidx.shape()) + " does not match rois " +
                    shape_to_string(rois.shape()));
      const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = rois.dim(0);
      Tensor& Y = ctx.allocate_output(0, X.dtype(), {R, C, oh, ow});
      dispatch_float(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        struct Sample {
          int64_t p1, p2, p3, p4;
          double w1, w2, w3, w4;
        };
        for (int64_t r = 0; r < R; ++r) {
          const int64_t b = bidx.int_at(r);
          if (b < 0 || b >= N)
            kernel_fail("batch index " + std::to_string(b) + " of roi " + std::to_string(r) + " is out of range [0, " +
                        std::to_string(N) + ")");
        }
        // Rois across the pool (a detector's box head pools a thousand).
        ThreadPool* pool = R * C * oh * ow >= (1 << 14) ? ctx.thread_pool() : nullptr;
        parallel_for(pool, R, [&](int64_t r0, int64_t r1) {
          std::vector<Sample> samples;
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t b = bidx.int_at(r);
            double off = half_pixel ? 0.5 : 0.0;
            double sw = rois.float_at(r * 4 + 0) * scale - off, sh = rois.float_at(r * 4 + 1) * scale - off;
            double ew = rois.float_at(r * 4 + 2) * scale - off, eh = rois.float_at(r * 4 + 3) * scale - off;
            double rw = ew - sw, rh = eh - sh;
            if (!half_pixel) {
              rw = std::max(rw, 1.0);
              rh = std::max(rh, 1.0);
            }
            double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
            int64_t gh = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rh / static_cast<double>(oh)));
            int64_t gw = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rw / static_cast<double>(ow)));
            gh = std::max<int64_t>(gh, 0);
            gw = std::max<int64_t>(gw, 0);
            double count = std::max<int64_t>(gh * gw, 1);
            // precompute the bilinear taps of every sample of every bin
            samples.clear();
            for (int64_t ph = 0; ph < oh; ++ph)
              for (int64_t pw = 0; pw < ow; ++pw)
                for (int64_t iy = 0; iy < gh; ++iy) {
                  double yy = sh + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
                  for (int64_t ix = 0; ix < gw; ++ix) {
                    double xx = sw + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
                    Sample s{0, 0, 0, 0, 0, 0, 0, 0};
                    if (!(yy < -1.0 || yy > H || xx < -1.0 || xx > W)) {
                      double yv = std::max(yy, 0.0), xv = std::max(xx, 0.0);
                      int64_t yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xv), yh, xh;
                      if (yl >= H - 1) {
                        yh = yl = H - 1;
                        yv = static_cast<double>(yl);
                      } else {
                        yh = yl + 1;
                      }
                      if (xl >= W - 1) {
                        xh = xl = W - 1;
                        xv = static_cast<double>(xl);
                      } else {
                        xh = xl + 1;
                      }
                      double ly = yv - yl, lx = xv - xl, hy = 1 - ly, hx = 1 - lx;
                      s = {yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh, hy * hx, hy * lx, ly * hx, ly * lx};
                    }
                    samples.push_back(s);
                  }
                }
            const int64_t per_bin = gh * gw;
            for (int64_t c = 0; c < C; ++c) {
              const T* plane = x + (b * C + c) * H * W;
              T* out = y + (r * C + c) * oh * ow;
              for (int64_t bin = 0; bin < oh * ow; ++bin) {
                const Sample* sp = samples.data() + bin * per_bin;
                double acc = 0;
                bool first = true;
                for (int64_t k = 0; k < per_bin; ++k) {
                  const Sample& s = sp[k];
                  double v1 = s.w1 * to_d(plane[s.p1]), v2 = s.w2 * to_d(plane[s.p2]), v3 = s.w3 * to_d(plane[s.p3]),
                         v4 = s.w4 * to_d(plane[s.p4]);
                  if (is_max) {
                    double v = std::max(std::max(v1, v2), std::max(v3, v4));
                    acc = first ? v : std::max(acc, v);
                    first = false;
                  } else {
                    acc += v1 + v2 + v3 + v4;
                  }
                }
                out[bin] = from_d<T>(is_max ? acc : acc / count);
              }
            }
          }
        });
      });
    };
  });
}

// ---------------------------------------------------------------- GridSample

enum class Interp { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

double gs_reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return lo;
  // Whole reflections counted in double: far-off coordinates must not overflow an int64.
  if (x < lo) {
    double dx = lo - x, n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi, n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_coeffs(double t, double c[4]) {
  const double A = -0.75;
  double x;
  x = t + 1;
  c[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  x = t;
  c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  x = 1 - t;
  c[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
  x = 2 - t;
  c[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

// N-D grid sampling over spatial dims `sp` (row-major), with coordinates in
// the grid's last dim ordered x (innermost dim) first.
struct GridSampler {
  Interp interp;
  Padding padding;
  bool align;
  std::vector<int64_t> sp;  // spatial sizes, outermost first

  double denorm(double v, int64_t size) const {
    return align ? (v + 1) / 2 * (size - 1) : ((v + 1) * size - 1) / 2;
  }
  double lo(int64_t) const { return align ? 0.0 : -0.5; }
  double hi(int64_t size) const { return align ? size - 1.0 : size - 0.5; }

  // Offset in a plane of integer coords (outermost first), honoring the
  // padding mode; -1 where zero padding reads a 0.
  int64_t offset(const int64_t* idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < sp.size(); ++d) {
      int64_t i = idx[d], n = sp[d];
      if (padding == Padding::Zeros) {
        if (i < 0 || i >= n) return -1;
      } else if (padding == Padding::Border) {
        i = std::clamp<int64_t>(i, 0, n - 1);
      } else {
        i = static_cast<int64_t>(gs_reflect(static_cast<double>(i), lo(n), hi(n)));
        i = std::clamp<int64_t>(i, 0, n - 1);
      }
      off = off * n + i;
    }
    return off;
  }

  // taps() for a 2-D bilinear sample at (row, column) c, in the general
  // loop's order; written out, the point's taps cost half as much.
  int64_t bilinear_taps(const double* c, int64_t* offs, double* wts) const {
    const double fy = std::floor(c[0]), fx = std::floor(c[1]);
    const double wy[2] = {1 - (c[0] - fy), c[0] - fy}, wx[2] = {1 - (c[1] - fx), c[1] - fx};
    int64_t count = 0;
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 2; ++i) {
        const double wt = wy[j] * wx[i];
        if (wt == 0) continue;
        const int64_t idx[2] = {static_cast<int64_t>(fy) + j, static_cast<int64_t>(fx) + i};
        offs[count] = offset(idx);
        wts[count++] = wt;
      }
    return count;
  }

  // Most taps a grid point can have.
  int64_t max_taps() const {
    int64_t per = interp == Interp::Nearest ? 1 : interp == Interp::Linear ? 2 : 4, t = 1;
    for (size_t d = 0; d < sp.size(); ++d) t *= per;
    return t;
  }

  // The taps of grid point g (x first): plane offsets (-1: a zero) and
  // weights, zero weights left out; returns how many. The same for every
  // channel, so computed once per point.
  int64_t taps(const double* g, int64_t* offs, double* wts) const {
    const int nd = static_cast<int>(sp.size());
    double c[8];
    for (int d = 0; d < nd; ++d) {
      int64_t n = sp[d];
      double v = denorm(g[nd - 1 - d], n);
      if (!std::isfinite(v)) {
        // As the ONNX reference: NaN weights make the sample NaN, but nearest with zero
        // padding reads the padding.
        offs[0] = -1;
        wts[0] = interp == Interp::Nearest && padding == Padding::Zeros ? 1.0 : std::nan("");
        return 1;
      }
      if (interp == Interp::Nearest) v = std::nearbyint(v);
      if (v < lo(n) || v > hi(n)) {
        if (padding == Padding::Zeros)  // every tap is a zero well before the int64 cast could overflow
          v = std::clamp(v, lo(n) - 4, hi(n) + 4);
        else if (padding == Padding::Border)
          v = std::clamp(v, 0.0, static_cast<double>(n - 1));
        else if (padding == Padding::Reflection)
          v = gs_reflect(v, lo(n), hi(n));
      }
      c[d] = v;
    }
    int64_t idx[8];
    if (interp == Interp::Nearest) {
      for (int d = 0; d < nd; ++d) idx[d] = static_cast<int64_t>(std::nearbyint(c[d]));
      offs[0] = offset(idx);
      wts[0] = 1.0;
      return 1;
    }
    if (interp == Interp::Linear && nd == 2) return bilinear_taps(c, offs, wts);
    const int taps = interp == Interp::Linear ? 2 : 4;  // per dim
    double w[8][4];
    int64_t base[8];
    for (int d = 0; d < nd; ++d) {
      double f = std::floor(c[d]);
      double t = c[d] - f;
      if (interp == Interp::Linear) {
        base[d] = static_cast<int64_t>(f);
        w[d][0] = 1 - t;
        w[d][1] = t;
      } else {
        base[d] = static_cast<int64_t>(f) - 1;
        cubic_coeffs(t, w[d]);
      }
    }
    int64_t total = 1;
    for (int d = 0; d < nd; ++d) total *= taps;
    int64_t count = 0;
    for (int64_t k = 0; k < total; ++k) {
      int64_t rem = k;
      double wt = 1;
      for (int d = nd - 1; d >= 0; --d) {
        int j = static_cast<int>(rem % taps);
        rem /= taps;
        idx[d] = base[d] + j;
        wt *= w[d][j];
      }
      if (wt == 0) continue;
      offs[count] = offset(idx);
      wts[count++] = wt;
    }
    return count;
  }
};

// The four taps of `len` 2-D bilinear points (grid x, y pairs) with zero or
// border padding, tap-major ([4][len]): plane offsets, -1 where the tap reads
// nothing, and weights. Straight-line loops over the points that the
// compiler vectorizes (per point through GridSampler::taps they took 40% of a
// 16-channel sample). The rules are taps()': a zero weight never reads (a
// non-finite pixel must not turn it into NaN), a non-finite coordinate gives
// a NaN weight.
ONYX_VECTOR_CLONES
void bilinear_block_taps(const double* __restrict g, int64_t len, int64_t height, int64_t width, bool align,
                         bool border, int32_t* __restrict offs, float* __restrict wts) {
  const double h = static_cast<double>(height), w = static_cast<double>(width);
  for (int64_t o = 0; o < len; ++o) {
    double x = align ? (g[2 * o] + 1) * 0.5 * (w - 1) : ((g[2 * o] + 1) * w - 1) * 0.5;
    double y = align ? (g[2 * o + 1] + 1) * 0.5 * (h - 1) : ((g[2 * o + 1] + 1) * h - 1) * 0.5;
    const bool finite = std::isfinite(x) && std::isfinite(y);
    // Zeros: far-off points read only padding, clamped well before the integer cast could
    // overflow. Border: clamped into the image (the taps past it get zero weight).
    x = finite ? (border ? std::clamp(x, 0.0, w - 1) : std::clamp(x, -5.0, w + 4)) : 0.0;
    y = finite ? (border ? std::clamp(y, 0.0, h - 1) : std::clamp(y, -5.0, h + 4)) : 0.0;
    const double fx = std::floor(x), fy = std::floor(y), tx = x - fx, ty = y - fy;
    const int64_t ix = static_cast<int64_t>(fx), iy = static_cast<int64_t>(fy);
    for (int k = 0; k < 4; ++k) {
      const int dy = k >> 1, dx = k & 1;
      const int64_t cx = ix + dx, cy = iy + dy;
      const double wt = (dy ? ty : 1 - ty) * (dx ? tx : 1 - tx);
      const bool in = finite && wt != 0 && cx >= 0 && cx < width && cy >= 0 && cy < height;
      offs[k * len + o] = in ? static_cast<int32_t>(cy * width + cx) : -1;
      wts[k * len + o] = finite ? static_cast<float>(wt) : (k == 0 ? std::numeric_limits<float>::quiet_NaN() : 0.f);
    }
  }
}

// y[c][o] = sum over the 4 taps of weight * plane value, for every channel:
// bilinear_block_taps' layout; the float instance vectorizes to masked gathers.
template <class T>
void apply_block_taps(int64_t len, int64_t channels, const int32_t* __restrict offs, const float* __restrict wts,
                      const T* __restrict x, int64_t in_plane, T* __restrict y, int64_t out_plane) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = x + c * in_plane;
    T* out = y + c * out_plane;
    for (int64_t o = 0; o < len; ++o) {
      Acc acc = 0;
      for (int k = 0; k < 4; ++k) {
        const int32_t off = offs[k * len + o];
        acc += static_cast<Acc>(wts[k * len + o]) * (off >= 0 ? static_cast<Acc>(to_d(plane[off])) : Acc(0));
      }
      out[o] = from_d<T>(acc);
    }
  }
}

ONYX_VECTOR_CLONES
void apply_block_taps_f32(int64_t len, int64_t channels, const int32_t* offs, const float* wts, const float* x,
                          int64_t in_plane, float* y, int64_t out_plane) {
  apply_block_taps<float>(len, channels, offs, wts, x, in_plane, y, out_plane);
}

// One point's taps in PER fixed slots (a short list padded with zero weights;
// a tap in a zero-padded border reads 0 through `inside`), applied to every
// channel: the taps are computed once per point, and the channel loop has
// no branch and no per-point count (a variable-length loop in double ran
// 3.7x slower than onnxruntime on a 16-channel 64x64 map).
template <class T, int PER>
void apply_taps(int64_t per_runtime, int64_t len, int64_t channels, const int64_t* offs, const uint8_t* inside,
                const float* wts, const T* x, int64_t in_plane, T* y, int64_t out_plane) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t per = PER > 0 ? PER : per_runtime;
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = x + c * in_plane;
    T* out = y + c * out_plane;
    for (int64_t o = 0; o < len; ++o) {
      Acc acc = 0;
      for (int64_t k = o * per; k < (o + 1) * per; ++k) {
        const Acc v = static_cast<Acc>(to_d(plane[offs[k]]));
        acc += static_cast<Acc>(wts[k]) * (inside[k] ? v : Acc(0));
      }
      out[o] = from_d<T>(acc);
    }
  }
}

template <class T>
void grid_sample_typed(const GridSampler& s, const Tensor& X, const Tensor& G, Tensor& Y, ThreadPool* pool) {
  const int nd = static_cast<int>(s.sp.size());
  const int64_t N = X.dim(0), C = X.dim(1), in_plane = shape_numel(s.sp), out_plane = Y.numel() / std::max<int64_t>(1, N * C);
  const int64_t per = s.max_taps(), chunk = std::max<int64_t>(1, 4096 / per);
  const int64_t chunks = (out_plane + chunk - 1) / chunk;
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  const std::vector<double> grid = load_floats<double>(G);
  // 2-D bilinear, zero or border padding, planes int32 can index: the vectorized taps.
  const bool block_taps = s.interp == Interp::Linear && nd == 2 && s.padding != Padding::Reflection &&
                          in_plane < std::numeric_limits<int32_t>::max();
  parallel_for(N * C * out_plane * per > 65536 ? pool : nullptr, N * chunks, [&](int64_t t0, int64_t t1) {
    // The block path's tap-major int32 offsets, or the general path's per-point slots.
    const size_t slots = static_cast<size_t>(chunk * per), general = block_taps ? 0 : slots;
    std::vector<float> wts(slots);
    std::vector<int32_t> block_offs(block_taps ? slots : 0);
    std::vector<int64_t> offs(general), point_offs(block_taps ? 0 : static_cast<size_t>(per));
    std::vector<uint8_t> inside(general);
    std::vector<double> point_wts(block_taps ? 0 : static_cast<size_t>(per));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / chunks, o0 = (t % chunks) * chunk, len = std::min(chunk, out_plane - o0);
      const double* gv = grid.data() + (n * out_plane + o0) * nd;
      const T* xn = x + n * C * in_plane;
      T* yn = y + n * C * out_plane + o0;
      if (block_taps) {
        bilinear_block_taps(gv, len, s.sp[0], s.sp[1], s.align, s.padding == Padding::Border, block_offs.data(),
                            wts.data());
        if constexpr (std::is_same_v<T, float>) apply_block_taps_f32(len, C, block_offs.data(), wts.data(), xn, in_plane, yn, out_plane);
        else apply_block_taps<T>(len, C, block_offs.data(), wts.data(), xn, in_plane, yn, out_plane);
        continue;
      }
      for (int64_t o = 0; o < len; ++o) {
        const int64_t count = s.taps(gv + o * nd, point_offs.data(), point_wts.data());
        for (int64_t k = 0; k < per; ++k) {
          const bool used = k < count, in = used && point_offs[k] >= 0;
          offs[o * per + k] = in ? point_offs[k] : 0;
          inside[o * per + k] = in;
          wts[o * per + k] = used ? static_cast<float>(point_wts[k]) : 0.f;
        }
      }
      auto apply = per == 4 ? apply_taps<T, 4> : per == 1 ? apply_taps<T, 1> : per == 16 ? apply_taps<T, 16> : apply_taps<T, 0>;
      apply(per, len, C, offs.data(), inside.data(), wts.data(), xn, in_plane, yn, out_plane);
    }
  });
}

KernelFactory grid_sample_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::string mode = ic.get_string("mode", ic.opset() >= 20 ? "linear" : "bilinear");
    std::string pad = ic.get_string("padding_mode", "zeros");
    bool align = ic.get_int("align_corners", 0) != 0;
    Interp interp;
    if (mode == "bilinear" || mode == "linear")
      interp = Interp::Linear;
    else if (mode == "nearest")
      interp = Interp::Nearest;
    else if (mode == "bicubic" || mode == "cubic")
      interp = Interp::Cubic;
    else
      kernel_fail("unknown GridSample mode '" + mode + "'");
    Padding padding;
    if (pad == "zeros")
      padding = Padding::Zeros;
    else if (pad == "border")
      padding = Padding::Border;
    else if (pad == "reflection")
      padding = Padding::Reflection;
    else
      kernel_fail("unknown GridSample padding_mode '" + pad + "'");
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      const Tensor& G = ctx.input(1);
      int r = X.rank();
      if (r < 3 || r > 10) kernel_fail("GridSample input must have rank 3..10, got " + shape_to_string(X.shape()));
      int nd = r - 2;
      if (G.rank() != r || G.dim(0) != X.dim(0) || G.dim(r - 1) != nd)
        kernel_fail("grid shape " + shape_to_string(G.shape()) + " does not match input " + shape_to_string(X.shape()));
      if (interp == Interp::Cubic && nd > 3) kernel_fail("cubic GridSample supports up to 3 spatial dims");
      GridSampler s{interp, padding, align, std::vector<int64_t>(X.shape().begin() + 2, X.shape().end())};
      const int64_t N = X.dim(0), C = X.dim(1);
      Shape yshape = {N, C};
      for (int d = 1; d < r - 1; ++d) yshape.push_back(G.dim(d));
      Tensor& Y = ctx.allocate_output(0, X.dtype(), yshape);
      if (Y.numel() == 0) return;
      if (X.numel() == 0) {  // nothing to sample from: every tap is padding
        std::memset(Y.raw(), 0, Y.nbytes());
        return;
      }
      dispatch_float(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        grid_sample_typed<T>(s, X, G, Y, ctx.thread_pool());
      });
    };
  });
}

// ---------------------------------------------------------------- AffineGrid

KernelFactory affine_grid_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    bool align = ic.get_int("align_corners", 0) != 0;
    return [=](KernelContext& ctx) {
      const Tensor& theta = ctx.input(0);
      std::vector<int64_t> size = ctx.input(1).to_int64_vector();
      if (size.size() != 4 && size.size() != 5)
        kernel_fail("AffineGrid size must have 4 or 5 values, got " + std::to_string(size.size()));
      const int nd = static_cast<int>(size.size()) - 2;
      const int64_t N = size[0];
      if (theta.rank() != 3 || theta.dim(0) != N || theta.dim(1) != nd || theta.dim(2) != nd + 1)
        kernel_fail("theta shape " + shape_to_string(theta.shape()) + " does not match size (expected [" +
                    std::to_string(N) + ", " + std::to_string(nd) + ", " + std::to_string(nd + 1) + "])");
      Shape yshape = {N};
      for (int d = 0; d < nd; ++d) {
        if (size[2 + d] < 0) kernel_fail("AffineGrid size must be non-negative");
        yshape.push_back(size[2 + d]);
      }
      yshape.push_back(nd);
      Tensor& Y = ctx.allocate_output(0, theta.dtype(), yshape);
      auto base = [&](int64_t i, int64_t n) -> double {
        if (align) return n <= 1 ? -1.0 : -1.0 + 2.0 * i / static_cast<double>(n - 1);
        return (2.0 * i + 1) / static_cast<double>(n) - 1.0;
      };
      dispatch_float(theta.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* y = Y.data<T>();
        int64_t pts = 1;
        for (int d = 0; d < nd; ++d) pts *= size[2 + d];
        std::vector<double> th(static_cast<size_t>(nd * (nd + 1)));
        for (int64_t n = 0; n < N; ++n) {
          for (size_t i = 0; i < th.size(); ++i) th[i] = theta.float_at(n * th.size() + i);
          for (int64_t p = 0; p < pts; ++p) {
            // coords of p, outermost first; the grid vector is (x, y[, z]) = innermost first
            double v[4];
            int64_t rem = p;
            for (int d = nd - 1; d >= 0; --d) {
              int64_t sz = size[2 + d];
              v[nd - 1 - d] = base(rem % sz, sz);
              rem /= sz;
            }
            v[nd] = 1.0;
            for (int o = 0; o < nd; ++o) {
              double acc = 0;
              for (int k = 0; k <= nd; ++k) acc += th[o * (nd + 1) + k] * v[k];
              y[(n * pts + p) * nd + o] = from_d<T>(acc);
            }
          }
        }
      });
    };
  });
}

// ---------------------------------------------------------------- Col2Im

KernelFactory col2im_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::vector<int64_t> dil = ic.get_ints("dilations"), pads = ic.get_ints("pads"), strides = ic.get_ints("strides");
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      std::vector<int64_t> img = ctx.input(1).to_int64_vector();
      std::vector<int64_t> blk = ctx.input(2).to_int64_vector();
      const int nd = static_cast<int>(img.size());
      if (nd == 0 || blk.size() != img.size())
        kernel_fail("image_shape and block_shape must have the same non-zero length");
      auto fill = [&](const std::vector<int64_t>& v, size_t n, int64_t def, const char* name) {
        if (v.empty()) return std::vector<int64_t>(n, def);
        if (v.size() != n) kernel_fail(std::string(name) + " has the wrong number of values");
        return v;
      };
      auto d = fill(dil, nd, 1, "dilations"), s = fill(strides, nd, 1, "strides"), p = fill(pads, 2 * nd, 0, "pads");
      int64_t kprod = 1;
      for (auto b : blk) {
        if (b <= 0) kernel_fail("block_shape values must be positive");
        kprod *= b;
      }
      if (X.rank() != 3 || X.dim(1) % kprod != 0)
        kernel_fail("input shape " + shape_to_string(X.shape()) + " must be [N, C*prod(block_shape)=C*" +
                    std::to_string(kprod) + ", L]");
      const int64_t N = X.dim(0), C = X.dim(1) / kprod, L = X.dim(2);
      std::vector<int64_t> nblk(nd);
      int64_t lprod = 1;
      for (int i = 0; i < nd; ++i) {
        if (s[i] <= 0 || d[i] <= 0) kernel_fail("strides and dilations must be positive");
        int64_t eff = d[i] * (blk[i] - 1) + 1;
        nblk[i] = (img[i] + p[i] + p[i + nd] - eff) / s[i] + 1;
        if (nblk[i] <= 0) kernel_fail("image is too small for the block shape");
        lprod *= nblk[i];
      }
      if (lprod != L)
        kernel_fail("input has " + std::to_string(L) + " blocks but the geometry gives " + std::to_string(lprod));
      Shape yshape = {N, C};
      int64_t iprod = 1;
      for (auto v : img) {
        yshape.push_back(v);
        iprod *= v;
      }
      Tensor& Y = ctx.allocate_output(0, X.dtype(), yshape);
      dispatch_numeric(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        std::vector<double> acc(static_cast<size_t>(iprod));
        std::vector<int64_t> ki(nd), li(nd);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c) {
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t k = 0; k < kprod; ++k) {
              int64_t rem = k;
              for (int i = nd - 1; i >= 0; --i) {
                ki[i] = rem % blk[i];
                rem /= blk[i];
              }
              const T* row = x + ((n * C + c) * kprod + k) * L;
              for (int64_t l = 0; l < L; ++l) {
                int64_t r2 = l;
                for (int i = nd - 1; i >= 0; --i) {
                  li[i] = r2 % nblk[i];
                  r2 /= nblk[i];
                }
                int64_t off = 0;
                bool inside = true;
                for (int i = 0; i < nd; ++i) {
                  int64_t pos = li[i] * s[i] - p[i] + ki[i] * d[i];
                  if (pos < 0 || pos >= img[i]) {
                    inside = false;
                    break;
                  }
                  off = off * img[i] + pos;
                }
                if (inside) acc[off] += to_d(row[l]);
              }
            }
            T* out = y + (n * C + c) * iprod;
            for (int64_t i = 0; i < iprod; ++i) out[i] = static_cast<T>(from_d<float>(acc[i]));
            if constexpr (std::is_same_v<T, double>)
              for (int64_t i = 0; i < iprod; ++i) out[i] = acc[i];
          }
      });
    };
  });
}

// ---------------------------------------------------------------- CenterCropPad

KernelFactory center_crop_pad_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::vector<int64_t> axes_attr = ic.get_ints("axes");
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      std::vector<int64_t> shape = ctx.input(1).to_int64_vector();
      const int r = X.rank();
      std::vector<int64_t> axes = axes_attr;
      if (axes.empty()) {
        axes.resize(r);
        std::iota(axes.begin(), axes.end(), 0);
      }
      if (axes.size() != shape.size())
        kernel_fail("shape has " + std::to_string(shape.size()) + " values but there are " +
                    std::to_string(axes.size()) + " axes");
      Shape out_shape = X.shape();
      std::vector<int64_t> in_start(r, 0), out_start(r, 0), copy(X.shape().begin(), X.shape().end());
      std::vector<bool> seen(r, false);
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = normalize_axis(axes[i], r);
        if (seen[a]) kernel_fail("axes contains duplicates");
        seen[a] = true;
        int64_t in = X.dim(static_cast<int>(a)), tgt = shape[i];
        if (tgt < 0) kernel_fail("CenterCropPad target sizes must be non-negative");
        out_shape[a] = tgt;
        if (in > tgt) {
          in_start[a] = (in - tgt) / 2;
          copy[a] = tgt;
        } else {
          out_start[a] = (tgt - in) / 2;
          copy[a] = in;
        }
      }
      Tensor& Y = ctx.allocate_output(0, X.dtype(), out_shape);
      dispatch_by_size(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        int64_t ny = Y.numel();
        for (int64_t i = 0; i < ny; ++i) y[i] = T{};
        int64_t total = 1;
        for (auto v : copy) total *= v;
        if (total == 0) return;
        auto xs = contiguous_strides(X.shape()), ys = contiguous_strides(out_shape);
        std::vector<int64_t> idx(r, 0);
        for (int64_t k = 0; k < total; ++k) {
          int64_t rem = k, xo = 0, yo = 0;
          for (int d = r - 1; d >= 0; --d) {
            int64_t v = rem % copy[d];
            rem /= copy[d];
            xo += (v + in_start[d]) * xs[d];
            yo += (v + out_start[d]) * ys[d];
          }
          y[yo] = x[xo];
        }
      });
    };
  });
}

}  // namespace

void register_object_detection(KernelRegistry& r) {
  r.add("NonMaxSuppression", 10, kMaxOpset, nms_factory());
  r.add("RoiAlign", 10, kMaxOpset, roi_align_factory());
  r.add("GridSample", 16, kMaxOpset, grid_sample_factory());
  r.add("AffineGrid", 20, kMaxOpset, affine_grid_factory());
  r.add("Col2Im", 18, kMaxOpset, col2im_factory());
  r.add("CenterCropPad", 18, kMaxOpset, center_crop_pad_factory());
}

}  // namespace onyx
