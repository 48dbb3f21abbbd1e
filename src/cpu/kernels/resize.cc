// Resize (opset 10, 11, 13, 18, 19 semantics) and Upsample (opset 1, 7, 9).
//
// Every output coordinate on each axis maps to a short list of (input index,
// weight) taps; the N-D result is the sum over the product of the per-axis
// taps (nearest: one tap per axis, linear: 2, cubic: 4, wider with antialias).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/cpu_features.h"
#include "cpu/block_transpose_avx512.h"
#include "cpu/cpu_provider.h"
#include "cpu/dnnl_conv.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Coord { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNN, TfCropAndResize,
                   HalfPixelSymmetric };
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

struct ResizeParams {
  Mode mode = Mode::Nearest;
  Coord coord = Coord::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  float extrapolation = 0.f;
  bool antialias = false;
};

struct AxisTaps {
  // Per output coordinate: offset range [begin, end) into idx/w; extrapolate flag.
  std::vector<int64_t> begin, end;
  std::vector<char> extrap;
  std::vector<int64_t> idx;
  std::vector<double> w;
};

double cubic_kernel(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

AxisTaps make_taps(const ResizeParams& p, int64_t in, int64_t out, double scale, double roi_start,
                   double roi_end) {
  AxisTaps t;
  t.begin.resize(out);
  t.end.resize(out);
  t.extrap.assign(out, 0);
  // Coordinates are computed in float32, in the same order of operations as
  // ONNX Runtime, so that ties in nearest rounding agree with it.
  const float sf = static_cast<float>(scale);
  const float in_f = static_cast<float>(in);
  const float out_i = static_cast<float>(out);
  const float out_f = sf * in_f;  // the (fractional) resized length
  const float rs = static_cast<float>(roi_start), re = static_cast<float>(roi_end);
  std::vector<double> c;
  for (int64_t xo = 0; xo < out; ++xo) {
    t.begin[xo] = static_cast<int64_t>(t.idx.size());
    const float x = static_cast<float>(xo);
    float xf = 0;
    switch (p.coord) {
      case Coord::HalfPixel: xf = ((x + 0.5f) / sf) - 0.5f; break;
      case Coord::PytorchHalfPixel: xf = out_i > 1 ? (x + 0.5f) / sf - 0.5f : 0.0f; break;
      case Coord::AlignCorners: xf = out_f == 1.0f ? 0.0f : x * (in_f - 1) / (out_f - 1); break;
      case Coord::Asymmetric: xf = x / sf; break;
      case Coord::TfHalfPixelForNN: xf = (x + 0.5f) / sf; break;
      case Coord::TfCropAndResize:
        xf = out_i > 1 ? rs * (in_f - 1) + (x * (re - rs) * (in_f - 1)) / (out_i - 1)
                       : static_cast<float>(0.5 * (rs + re) * (in_f - 1));
        break;
      case Coord::HalfPixelSymmetric: {
        const float adjustment = out_i / out_f;
        const float center = in_f / 2;
        const float offset = center * (1 - adjustment);
        xf = offset + (((x + 0.5f) / sf) - 0.5f);
        break;
      }
    }
    const double xi = xf;
    if (p.coord == Coord::TfCropAndResize && (xi < 0 || xi > static_cast<double>(in - 1))) {
      t.extrap[xo] = 1;
      t.end[xo] = t.begin[xo];
      continue;
    }
    if (p.mode == Mode::Nearest) {
      int64_t i;
      double fl = std::floor(xi);
      double r = xi - fl;
      if (p.nearest == NearestMode::Simple) {
        i = scale < 1 ? static_cast<int64_t>(std::ceil(xi)) : static_cast<int64_t>(fl);
      } else if (r == 0) {
        i = static_cast<int64_t>(fl);
      } else {
        bool up = false;
        switch (p.nearest) {
          case NearestMode::RoundPreferFloor: up = r > 0.5; break;
          case NearestMode::RoundPreferCeil: up = r >= 0.5; break;
          case NearestMode::Floor: up = false; break;
          case NearestMode::Ceil: up = true; break;
          case NearestMode::Simple: break;
        }
        i = static_cast<int64_t>(fl) + (up ? 1 : 0);
      }
      t.idx.push_back(std::clamp<int64_t>(i, 0, in - 1));
      t.w.push_back(1.0);
      t.end[xo] = static_cast<int64_t>(t.idx.size());
      continue;
    }
    // linear / cubic: base index x_int = ceil(x) - 1, ratio in (0, 1]
    double x_int = std::ceil(xi) - 1;
    double r = xi - x_int;
    int64_t start;
    c.clear();
    bool aa = p.antialias && scale < 1.0;
    if (p.mode == Mode::Linear) {
      if (!aa) {
        start = 0;
        c = {1 - r, r};
      } else {
        start = static_cast<int64_t>(std::floor(-1 / scale)) + 1;
        int64_t n = 2 - 2 * start;
        for (int64_t j = 0; j < n; ++j)
          c.push_back(std::max(0.0, 1 - std::abs((static_cast<double>(start + j) - r) * scale)));
      }
    } else {
      double a = p.cubic_a;
      if (!aa) {
        start = -1;
        for (int64_t j = 0; j < 4; ++j) c.push_back(cubic_kernel(static_cast<double>(start + j) - r, a));
      } else {
        start = static_cast<int64_t>(std::floor(-2 / scale)) + 1;
        int64_t n = 2 - 2 * start;
        for (int64_t j = 0; j < n; ++j) c.push_back(cubic_kernel(scale * (static_cast<double>(start + j) - r), a));
      }
    }
    if (aa) {
      double s = 0;
      for (double v : c) s += v;
      if (s != 0)
        for (double& v : c) v /= s;
    }
    int64_t base = static_cast<int64_t>(x_int) + start;
    if (p.exclude_outside) {
      double s = 0;
      for (size_t j = 0; j < c.size(); ++j) {
        int64_t id = base + static_cast<int64_t>(j);
        if (id < 0 || id >= in) c[j] = 0;
        s += c[j];
      }
      if (s != 0)
        for (double& v : c) v /= s;
    }
    for (size_t j = 0; j < c.size(); ++j) {
      if (c[j] == 0) continue;
      int64_t id = std::clamp<int64_t>(base + static_cast<int64_t>(j), 0, in - 1);
      // merge with the previous tap when clamping made them equal
      if (static_cast<int64_t>(t.idx.size()) > t.begin[xo] && t.idx.back() == id) {
        t.w.back() += c[j];
      } else {
        t.idx.push_back(id);
        t.w.push_back(c[j]);
      }
    }
    t.end[xo] = static_cast<int64_t>(t.idx.size());
  }
  return t;
}

template <class T>
using Calc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// True when every output index reads exactly one input element, with weight 1.
bool single_taps(const AxisTaps& t) {
  for (size_t o = 0; o < t.begin.size(); ++o)
    if (t.end[o] - t.begin[o] != 1 || t.w[t.begin[o]] != 1.0) return false;
  return true;
}

// True when axis taps map every output index to the same input index with
// weight 1 (the axis is not resized).
bool identity_taps(const AxisTaps& t, int64_t size) {
  if (static_cast<int64_t>(t.begin.size()) != size || !single_taps(t)) return false;
  for (int64_t o = 0; o < size; ++o)
    if (t.extrap[o] || t.idx[t.begin[o]] != o) return false;
  return true;
}

bool any_extrapolated(const AxisTaps& t) {
  for (auto e : t.extrap)
    if (e) return true;
  return false;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// Each product and sum rounded on its own, as in the generic walk.
#define ONYX_RESIZE_EXACT \
  __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3", "fp-contract=off")))
#else
#define ONYX_RESIZE_EXACT
#endif

// e[o] = w0[o] s[i0[o]] + w1[o] s[i1[o]]: vector gathers where the CPU has them.
ONYX_VECTOR_CLONES void gather_pairs(const float* s, float* e, int64_t n, const int32_t* i0, const int32_t* i1,
                                     const float* w0, const float* w1) {
  for (int64_t o = 0; o < n; ++o) e[o] = w0[o] * s[i0[o]] + w1[o] * s[i1[o]];
}

// a = w e (first) or a += w e: the blend of widened rows.
ONYX_VECTOR_CLONES void scale_row(float* a, const float* e, float w, int64_t n, bool first) {
  if (first)
    for (int64_t x = 0; x < n; ++x) a[x] = w * e[x];
  else
    for (int64_t x = 0; x < n; ++x) a[x] += w * e[x];
}

// Per-output taps along W as fixed pairs (index, weight) x 2 when no output reads more than
// two inputs (linear without antialias): the gather along W then runs without a loop over a
// variable tap count, which made widening a row 3x slower than the blend that follows it.
template <class C>
struct TapPairs {
  std::vector<int32_t> i0, i1;
  std::vector<C> w0, w1;
  bool usable = false;
  TapPairs(const AxisTaps& t, const std::vector<C>& w) {
    const size_t n = t.begin.size();
    for (size_t o = 0; o < n; ++o)
      if (t.end[o] - t.begin[o] > 2) return;
    i0.resize(n), i1.resize(n), w0.resize(n), w1.resize(n);
    for (size_t o = 0; o < n; ++o) {
      const int64_t b = t.begin[o], count = t.end[o] - b;
      i0[o] = count > 0 ? static_cast<int32_t>(t.idx[b]) : 0;
      w0[o] = count > 0 ? w[b] : C(0);  // none: an extrapolated output, 0 here
      i1[o] = count > 1 ? static_cast<int32_t>(t.idx[b + 1]) : i0[o];
      w1[o] = count > 1 ? w[b + 1] : C(0);
    }
    usable = true;
  }
  template <class T>
  void gather(const T* s, C* e, int64_t n) const {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<C, float>) {
      gather_pairs(s, e, n, i0.data(), i1.data(), w0.data(), w1.data());
    } else {
      for (int64_t o = 0; o < n; ++o) e[o] = w0[o] * static_cast<C>(s[i0[o]]) + w1[o] * static_cast<C>(s[i1[o]]);
    }
  }
};

// Nearest: each output copies one input element; output rows that read the
// same input row as the row above are copies of it.
template <class T>
void nearest_last_two(const T* in, T* out, int64_t H, int64_t W, int64_t OH, int64_t OW, const AxisTaps& th,
                      const AxisTaps& tw, int64_t rows, ThreadPool* pool) {
  std::vector<int64_t> col(static_cast<size_t>(OW));
  for (int64_t ox = 0; ox < OW; ++ox) col[ox] = tw.idx[tw.begin[ox]];
  parallel_for(rows * OW > (1 << 15) ? pool : nullptr, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / OH, oy = r % OH;
      const int64_t iy = th.idx[th.begin[oy]];
      T* dst = out + r * OW;
      if (r > r0 && oy > 0 && th.idx[th.begin[oy - 1]] == iy) {
        std::copy(dst - OW, dst, dst);
        continue;
      }
      const T* src = in + (plane * H + iy) * W;
      for (int64_t ox = 0; ox < OW; ++ox) dst[ox] = src[col[ox]];
    }
  });
}

// Blends each output row from input rows first, then gathers along it: the
// cheaper order when the image does not grow taller.
template <class T>
void resize_rows_first(const T* in, T* out, int64_t H, int64_t W, int64_t OH, int64_t OW, const AxisTaps& th,
                       const AxisTaps& tw, int64_t rows, ThreadPool* pool) {
  using C = Calc<T>;
  std::vector<C> wh(th.w.begin(), th.w.end()), ww(tw.w.begin(), tw.w.end());
  const TapPairs<C> pairs(tw, ww);
  auto body = [&](int64_t r0, int64_t r1) {
    std::vector<C> row(static_cast<size_t>(W));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / OH, oy = r % OH;
      const T* src = in + plane * H * W;
      std::fill(row.begin(), row.end(), C(0));
      for (int64_t k = th.begin[oy]; k < th.end[oy]; ++k) {
        const T* s = src + th.idx[k] * W;
        const C w = wh[k];
        for (int64_t x = 0; x < W; ++x) row[x] += w * static_cast<C>(s[x]);
      }
      T* dst = out + r * OW;
      if constexpr (std::is_same_v<T, C>) {
        if (pairs.usable) {
          pairs.gather(row.data(), dst, OW);
          continue;
        }
      }
      for (int64_t ox = 0; ox < OW; ++ox) {
        C acc = 0;
        for (int64_t j = tw.begin[ox]; j < tw.end[ox]; ++j) acc += ww[j] * row[tw.idx[j]];
        dst[ox] = static_cast<T>(acc);
      }
    }
  };
  if (rows * (W + OW) > (1 << 15)) parallel_for(pool, rows, body);
  else body(0, rows);
}

// Widens each input row once along W (into a few cached rows), then makes
// every output row a weighted sum of whole widened rows - contiguous loops -
// instead of gathering along W once per output row: the cheaper order when
// the image grows taller (segmentation heads upsampling 8-16x).
template <class T>
void resize_widen_first(const T* in, T* out, int64_t H, int64_t W, int64_t OH, int64_t OW, const AxisTaps& th,
                        const AxisTaps& tw, int64_t rows, ThreadPool* pool) {
  using C = Calc<T>;
  std::vector<C> wh(th.w.begin(), th.w.end()), ww(tw.w.begin(), tw.w.end());
  const TapPairs<C> pairs(tw, ww);
  int64_t slots = 1;
  for (size_t o = 0; o < th.begin.size(); ++o) slots = std::max(slots, th.end[o] - th.begin[o] + 1);
  auto body = [&](int64_t r0, int64_t r1) {
    std::vector<C> wide(static_cast<size_t>(slots * OW)), acc(std::is_same_v<T, C> ? 0 : static_cast<size_t>(OW));
    std::vector<int64_t> held(static_cast<size_t>(slots), -1);  // input row (plane * H + iy) in each slot
    auto widened = [&](int64_t src_row) -> const C* {
      const int64_t slot = src_row % slots;
      C* e = wide.data() + slot * OW;
      if (held[slot] == src_row) return e;
      held[slot] = src_row;
      const T* s = in + src_row * W;
      if (pairs.usable) {
        pairs.gather(s, e, OW);
      } else {
        for (int64_t ox = 0; ox < OW; ++ox) {
          C v = 0;
          for (int64_t j = tw.begin[ox]; j < tw.end[ox]; ++j) v += ww[j] * static_cast<C>(s[tw.idx[j]]);
          e[ox] = v;
        }
      }
      return e;
    };
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / OH, oy = r % OH;
      T* dst = out + r * OW;
      C* a = nullptr;
      if constexpr (std::is_same_v<T, C>) a = dst;  // sum in place
      else a = acc.data();
      for (int64_t k = th.begin[oy]; k < th.end[oy]; ++k) {
        const C* e = widened(plane * H + th.idx[k]);
        const C w = wh[k];
        if constexpr (std::is_same_v<C, float>) {
          scale_row(a, e, w, OW, k == th.begin[oy]);
        } else if (k == th.begin[oy]) {
          for (int64_t x = 0; x < OW; ++x) a[x] = w * e[x];
        } else {
          for (int64_t x = 0; x < OW; ++x) a[x] += w * e[x];
        }
      }
      if constexpr (!std::is_same_v<T, C>)
        for (int64_t x = 0; x < OW; ++x) dst[x] = static_cast<T>(a[x]);
    }
  };
  if (rows * (W + OW) > (1 << 15)) parallel_for(pool, rows, body);
  else body(0, rows);
}

// acc[o] += (wy w0[o]) s[i0[o]], then += (wy w1[o]) s[i1[o]]: one input row's share of an
// output row, in the order and rounding of the generic walk (no fused multiply-add).
ONYX_RESIZE_EXACT void add_row_pairs(float* __restrict acc, const float* __restrict s, int64_t n, const int32_t* i0,
                                     const int32_t* i1, const float* w0, const float* w1, float wy) {
  for (int64_t o = 0; o < n; ++o) {
    acc[o] += (wy * w0[o]) * s[i0[o]];
    acc[o] += (wy * w1[o]) * s[i1[o]];
  }
}

// The 8-bit case of store_truncated: clamping first to the (integer) bounds gives the same
// integer, and the float-to-int conversion truncates.
ONYX_VECTOR_CLONES void truncate_to_8bit(const float* acc, uint8_t* dst, int64_t n, bool is_signed) {
  const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(static_cast<int32_t>(std::min(std::max(acc[i], lo), hi)));
}

// dst = the integers of acc toward zero, saturated to T's range (as the generic walk stores).
template <class T>
void store_truncated(const float* acc, T* dst, int64_t n) {
  if constexpr (sizeof(T) == 1 && !std::is_same_v<T, bool>) {
    truncate_to_8bit(acc, reinterpret_cast<uint8_t*>(dst), n, std::is_signed_v<T>);
  } else {
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(std::clamp(std::trunc(static_cast<double>(acc[i])), lo, hi));
  }
}

// Integer tensors (8-bit activations of quantized segmentation heads and U-Nets) resized
// along the last two axes: the same float sums as the generic walk (y taps outer, x taps
// inner, weight wy * wx, each step rounded), truncated and clamped, but a row at a time
// from input rows widened to float once, instead of walking the tap product per element.
template <class T>
void integral_last_two(const T* in, T* out, int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW,
                       const AxisTaps& th, const AxisTaps& tw, ThreadPool* pool) {
  const std::vector<float> ww(tw.w.begin(), tw.w.end());
  const TapPairs<float> pairs(tw, ww);
  auto body = [&](int64_t r0, int64_t r1) {
    std::vector<float> acc(static_cast<size_t>(OW)), s(static_cast<size_t>(W));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / OH, oy = r % OH;
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t k = th.begin[oy]; k < th.end[oy]; ++k) {
        const T* src = in + (plane * H + th.idx[k]) * W;
        for (int64_t x = 0; x < W; ++x) s[x] = static_cast<float>(src[x]);
        const float wy = static_cast<float>(th.w[k]);
        if (pairs.usable) {
          add_row_pairs(acc.data(), s.data(), OW, pairs.i0.data(), pairs.i1.data(), pairs.w0.data(),
                        pairs.w1.data(), wy);
          continue;
        }
        for (int64_t ox = 0; ox < OW; ++ox)
          for (int64_t j = tw.begin[ox]; j < tw.end[ox]; ++j) {
            const float w = wy * ww[j];
            acc[ox] += w * s[tw.idx[j]];
          }
      }
      store_truncated(acc.data(), out + r * OW, OW);
    }
  };
  const int64_t rows = planes * OH;
  if (rows * (W + OW) > (1 << 15)) parallel_for(pool, rows, body);
  else body(0, rows);
}

double mean_taps(const AxisTaps& t) {
  return t.begin.empty() ? 0.0 : static_cast<double>(t.idx.size()) / static_cast<double>(t.begin.size());
}

// Resizing of the last two axes only (images, segmentation masks): the taps
// are a product of per-axis taps, so the resize runs as two one-axis passes
// instead of walking the whole tap product per output element.
template <class T>
void resize_last_two(const T* in, T* out, int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW,
                     const AxisTaps& th, const AxisTaps& tw, ThreadPool* pool) {
  const int64_t rows = planes * OH;
  if (single_taps(th) && single_taps(tw)) return nearest_last_two(in, out, H, W, OH, OW, th, tw, rows, pool);
  // Multiply-adds per plane of the two orders; a gathered one (along W) costs
  // about four contiguous ones, which vectorize.
  constexpr double kGather = 4;
  const double rows_widened = std::min<double>(H, OH * mean_taps(th));
  const double rows_first = OH * W * mean_taps(th) + kGather * OH * OW * mean_taps(tw);
  const double widen_first = kGather * rows_widened * OW * mean_taps(tw) + OH * OW * mean_taps(th);
  if (widen_first < rows_first) return resize_widen_first(in, out, H, W, OH, OW, th, tw, rows, pool);
  resize_rows_first(in, out, H, W, OH, OW, th, tw, rows, pool);
}

// Resizes when only the last two axes change (images, masks, feature maps): false otherwise, and
// for types with no fast path.
template <class T>
bool resized_last_two_only(const Tensor& x, Tensor& y, const std::vector<AxisTaps>& taps, ThreadPool* pool) {
  if constexpr (!std::is_floating_point_v<T> && !std::is_integral_v<T>) {
    return false;
  } else {
    const int rank = x.rank();
    const Shape &is = x.shape(), &os = y.shape();
    bool last_two = rank >= 2 && !any_extrapolated(taps[rank - 2]) && !any_extrapolated(taps[rank - 1]);
    for (int d = 0; last_two && d < rank - 2; ++d) last_two = is[d] == os[d] && identity_taps(taps[d], os[d]);
    if (!last_two) return false;
    const int64_t H = is[rank - 2], W = is[rank - 1], OH = os[rank - 2], OW = os[rank - 1];
    const int64_t planes = y.numel() / (OH * OW);
    const AxisTaps &th = taps[rank - 2], &tw = taps[rank - 1];
    const T* in = x.data<T>();
    T* out = y.data<T>();
    if constexpr (std::is_floating_point_v<T>) {
      resize_last_two(in, out, planes, H, W, OH, OW, th, tw, pool);
    } else if (single_taps(th) && single_taps(tw)) {
      nearest_last_two(in, out, H, W, OH, OW, th, tw, planes * OH, pool);  // copies, exact for any width
    } else {
      integral_last_two(in, out, planes, H, W, OH, OW, th, tw, pool);
    }
    return true;
  }
}

template <class T>
void resize_typed(const ResizeParams& p, const Tensor& x, Tensor& y, const std::vector<AxisTaps>& taps,
                  ThreadPool* pool) {
  using C = Calc<T>;
  const int rank = x.rank();
  const Shape& os = y.shape();
  const auto strides = contiguous_strides(x.shape());
  const T* in = x.data<T>();
  T* out = y.data<T>();
  const int64_t n = y.numel();
  if (n == 0) return;
  if (resized_last_two_only<T>(x, y, taps, pool)) return;
  const int64_t inner = rank == 0 ? 1 : os[rank - 1];
  const int64_t rows = n / inner;
  const T extrap = static_cast<T>(static_cast<C>(p.extrapolation));
  // per-axis tap offsets premultiplied by strides
  std::vector<std::vector<int64_t>> toff(rank);
  std::vector<std::vector<C>> tw(rank);
  for (int d = 0; d < rank; ++d) {
    toff[d].resize(taps[d].idx.size());
    tw[d].resize(taps[d].idx.size());
    for (size_t k = 0; k < taps[d].idx.size(); ++k) {
      toff[d][k] = taps[d].idx[k] * strides[d];
      tw[d][k] = static_cast<C>(taps[d].w[k]);
    }
  }
  auto body = [&](int64_t rb, int64_t re) {
    std::vector<int64_t> oidx(rank, 0);
    std::vector<int64_t> tk(rank, 0);
    // decode the first row's index
    int64_t rem = rb;
    for (int d = rank - 2; d >= 0; --d) {
      oidx[d] = rem % os[d];
      rem /= os[d];
    }
    for (int64_t row = rb; row < re; ++row) {
      bool row_extrap = false;
      for (int d = 0; d < rank - 1; ++d) row_extrap |= taps[d].extrap[oidx[d]] != 0;
      T* dst = out + row * inner;
      for (int64_t xl = 0; xl < inner; ++xl) {
        oidx[rank - 1] = xl;
        if (row_extrap || taps[rank - 1].extrap[xl]) {
          dst[xl] = extrap;
          continue;
        }
        // sum over the product of taps
        C acc = 0;
        for (int d = 0; d < rank; ++d) tk[d] = taps[d].begin[oidx[d]];
        while (true) {
          int64_t off = 0;
          C w = 1;
          for (int d = 0; d < rank; ++d) {
            off += toff[d][tk[d]];
            w *= tw[d][tk[d]];
          }
          acc += w * static_cast<C>(in[off]);
          int d = rank - 1;
          for (; d >= 0; --d) {
            if (++tk[d] < taps[d].end[oidx[d]]) break;
            tk[d] = taps[d].begin[oidx[d]];
          }
          if (d < 0) break;
        }
        if constexpr (std::is_integral_v<T>) {
          double v = std::trunc(static_cast<double>(acc));
          v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                         static_cast<double>(std::numeric_limits<T>::max()));
          dst[xl] = static_cast<T>(v);
        } else {
          dst[xl] = static_cast<T>(acc);
        }
      }
      for (int d = rank - 2; d >= 0; --d) {
        if (++oidx[d] < os[d]) break;
        oidx[d] = 0;
      }
    }
  };
  if (n > (1 << 15)) {
    parallel_for(pool, rows, body);
  } else {
    body(0, rows);
  }
}

std::vector<double> read_floats(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.float_at(i);
  return v;
}

struct ResizeConfig {
  ResizeParams p;
  int64_t opset = 11;
  bool upsample = false;
  std::vector<float> attr_scales;  // Upsample-1 and -7
  std::vector<int64_t> axes;       // opset 18
  std::string aspect = "stretch";
};

// The output shape and per-axis taps of resizing an input of shape `is` by the
// node's scales or sizes (inputs 1.. of ctx).
struct ResizePlan {
  Shape out;
  std::vector<AxisTaps> taps;
};

ResizePlan plan_resize(const ResizeConfig& cfg, KernelContext& ctx, const Shape& is, const char* op) {
  const int rank = static_cast<int>(is.size());
  ONYX_KERNEL_CHECK(rank >= 1, std::string(op) + ": input must have rank >= 1");
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (cfg.upsample) {
    if (cfg.opset >= 9) {
      scales = read_floats(ctx.input(1));
    } else {
      scales.assign(cfg.attr_scales.begin(), cfg.attr_scales.end());
    }
  } else if (cfg.opset < 11) {
    scales = read_floats(ctx.input(1));
  } else {
    if (ctx.has_input(1)) roi = read_floats(ctx.input(1));
    if (ctx.has_input(2) && ctx.input(2).numel() > 0) scales = read_floats(ctx.input(2));
    if (ctx.has_input(3) && ctx.input(3).numel() > 0) sizes = ctx.input(3).to_int64_vector();
    ONYX_KERNEL_CHECK(scales.empty() || sizes.empty(), "Resize: only one of 'scales' and 'sizes' may be given");
    ONYX_KERNEL_CHECK(!scales.empty() || !sizes.empty(), "Resize: one of 'scales' and 'sizes' must be given");
  }
  std::vector<int64_t> axes;
  if (!cfg.axes.empty()) {
    std::vector<bool> seen(rank, false);
    for (int64_t a : cfg.axes) {
      int64_t ax = normalize_axis(a, rank);
      ONYX_KERNEL_CHECK(!seen[ax], std::string(op) + ": repeated axis in 'axes'");
      seen[ax] = true;
      axes.push_back(ax);
    }
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  const size_t na = axes.size();
  std::vector<double> scale(rank, 1.0), rs(rank, 0.0), re(rank, 1.0);
  Shape os = is;
  if (!roi.empty()) {
    ONYX_KERNEL_CHECK(roi.size() == 2 * na, std::string(op) + ": roi must have 2*" + std::to_string(na) +
                                                " values, got " + std::to_string(roi.size()));
    for (size_t k = 0; k < na; ++k) {
      rs[axes[k]] = roi[k];
      re[axes[k]] = roi[na + k];
    }
  }
  if (!sizes.empty()) {
    ONYX_KERNEL_CHECK(sizes.size() == na, std::string(op) + ": sizes must have " + std::to_string(na) +
                                              " values, got " + std::to_string(sizes.size()));
    for (int64_t s : sizes) ONYX_KERNEL_CHECK(s >= 0, std::string(op) + ": negative output size");
    if (cfg.aspect == "stretch") {
      for (size_t k = 0; k < na; ++k) {
        int64_t d = axes[k];
        os[d] = sizes[k];
        scale[d] = is[d] == 0 ? 1.0f : static_cast<float>(sizes[k]) / static_cast<float>(is[d]);
      }
    } else {
      bool not_larger = cfg.aspect == "not_larger";
      ONYX_KERNEL_CHECK(not_larger || cfg.aspect == "not_smaller",
                        "Resize: unknown keep_aspect_ratio_policy '" + cfg.aspect + "'");
      float s = not_larger ? std::numeric_limits<float>::max() : 0.0f;
      for (size_t k = 0; k < na; ++k) {
        float r = static_cast<float>(sizes[k]) / static_cast<float>(is[axes[k]]);
        s = not_larger ? std::min(s, r) : std::max(s, r);
      }
      for (size_t k = 0; k < na; ++k) {
        int64_t d = axes[k];
        scale[d] = s;
        os[d] = static_cast<int64_t>(std::round(s * static_cast<float>(is[d])));
      }
    }
  } else {
    ONYX_KERNEL_CHECK(scales.size() == na, std::string(op) + ": scales must have " + std::to_string(na) +
                                               " values for input of shape " + shape_to_string(is) + ", got " +
                                               std::to_string(scales.size()));
    for (size_t k = 0; k < na; ++k) {
      int64_t d = axes[k];
      ONYX_KERNEL_CHECK(scales[k] > 0, std::string(op) + ": scales must be positive");
      scale[d] = static_cast<float>(scales[k]);
      const double size = std::floor(static_cast<float>(scales[k]) * static_cast<float>(is[d]));
      ONYX_KERNEL_CHECK(size < 0x1p62, std::string(op) + ": scale " + std::to_string(scales[k]) + " makes axis " +
                                           std::to_string(d) + " of shape " + shape_to_string(is) + " too large");
      os[d] = static_cast<int64_t>(size);
    }
  }
  ResizePlan plan{os, {}};
  check_shape_addressable(os, DataType::Float);  // before tap tables as long as the output axes
  if (shape_numel(os) == 0) return plan;
  ONYX_KERNEL_CHECK(shape_numel(is) > 0, std::string(op) + ": cannot resize an empty input to a non-empty output");
  plan.taps.reserve(rank);
  for (int d = 0; d < rank; ++d) plan.taps.push_back(make_taps(cfg.p, is[d], os[d], scale[d], rs[d], re[d]));
  return plan;
}

void run_resize(const ResizeConfig& cfg, KernelContext& ctx) {
  const char* op = cfg.upsample ? "Upsample" : "Resize";
  const Tensor& x = ctx.input(0);
  ONYX_KERNEL_CHECK(x.rank() >= 1, std::string(op) + ": input must have rank >= 1");
  const ResizePlan plan = plan_resize(cfg, ctx, x.shape(), op);
  Tensor& y = ctx.allocate_output(0, x.dtype(), plan.out);
  if (y.numel() == 0) return;
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    resize_typed<T>(cfg.p, x, y, plan.taps, ctx.thread_pool());
  });
}

// One axis's taps for the blocked layout: output o sums w[k] times the pixel
// vector at offset[k] (input index times the pixel stride) for k in
// [first[o], first[o + 1]); float weights, as the plain resize uses.
struct BlockedTaps {
  std::vector<int64_t> first, offset;
  std::vector<float> w;
  std::vector<char> extrap;  // outputs that take the extrapolation value (and have no taps)
  bool any_extrapolated = false;
  BlockedTaps(const AxisTaps& t, int64_t stride) : first(t.begin.size() + 1, 0), extrap(t.extrap) {
    for (size_t o = 0; o < t.begin.size(); ++o) {
      any_extrapolated = any_extrapolated || extrap[o];
      for (int64_t k = extrap[o] ? t.end[o] : t.begin[o]; k < t.end[o]; ++k) {
        offset.push_back(t.idx[k] * stride);
        w.push_back(static_cast<float>(t.w[k]));
      }
      first[o + 1] = static_cast<int64_t>(offset.size());
    }
  }
  int64_t outputs() const { return static_cast<int64_t>(extrap.size()); }
  bool copies(int64_t o) const { return first[o + 1] - first[o] == 1 && w[first[o]] == 1.f; }
};

// out pixel o (B floats) = the weighted sum of its taps' pixels in row; kB is B
// when known at compile time (one vector register a pixel), 0 otherwise.
template <int64_t kB>
[[gnu::always_inline]] inline void sum_pixel_taps(const float* __restrict row, float* __restrict out, int64_t OW,
                                                  int64_t B, const BlockedTaps& t) {
  const int64_t b = kB ? kB : B;
  const int64_t* first = t.first.data();
  const int64_t* offset = t.offset.data();
  const float* weight = t.w.data();
  for (int64_t o = 0; o < OW; ++o, out += b) {
    int64_t k = first[o];
    const int64_t end = first[o + 1];
    if (k == end) {
      std::fill_n(out, b, 0.f);
      continue;
    }
    const float w0 = weight[k];
    const float* s0 = row + offset[k];
    for (int64_t l = 0; l < b; ++l) out[l] = w0 * s0[l];
    for (++k; k < end; ++k) {
      const float w = weight[k];
      const float* s = row + offset[k];
      for (int64_t l = 0; l < b; ++l) out[l] += w * s[l];
    }
  }
}

ONYX_VECTOR_CLONES void widen_blocked_row(const float* row, float* out, int64_t OW, int64_t B, const BlockedTaps& t) {
  if (B == 16) sum_pixel_taps<16>(row, out, OW, B, t);
  else if (B == 8) sum_pixel_taps<8>(row, out, OW, B, t);
  else sum_pixel_taps<0>(row, out, OW, B, t);
}

// One output row (oh) of a channel block's plane, height first: the row's
// input rows blended into `blend` (W pixels; a row read with weight 1 is used
// in place), then each output pixel summed from its taps along W. Both passes
// run over whole pixel vectors, so neither gathers. Extrapolated pixels get
// the extrapolation value in the block's real lanes.
void nchwc_resize_row(const float* plane, float* out, float* blend, const BlockedTaps& th, const BlockedTaps& tw,
                      int64_t oh, int64_t W, int64_t B, int64_t lanes, float extrapolation) {
  const int64_t OW = tw.outputs();
  auto extrapolate = [&](int64_t ow) {
    for (int64_t l = 0; l < B; ++l) out[ow * B + l] = l < lanes ? extrapolation : 0.f;
  };
  if (th.extrap[oh]) {
    for (int64_t ow = 0; ow < OW; ++ow) extrapolate(ow);
    return;
  }
  const int64_t k0 = th.first[oh], k1 = th.first[oh + 1];
  if (k0 == k1) {
    std::fill_n(out, OW * B, 0.f);
    return;
  }
  const float* row = plane + th.offset[k0];
  if (!th.copies(oh)) {
    for (int64_t k = k0; k < k1; ++k) scale_row(blend, plane + th.offset[k], th.w[k], W * B, k == k0);
    row = blend;
  }
  widen_blocked_row(row, out, OW, B, tw);
  if (tw.any_extrapolated)
    for (int64_t ow = 0; ow < OW; ++ow)
      if (tw.extrap[ow]) extrapolate(ow);
}

// dst[j * plane_stride + ow] = pixels[ow * B + j] for the block's real lanes
// j < lanes: a resized row written straight to the NCHW planes.
void pixels_to_planes(const float* pixels, int64_t OW, int64_t B, int64_t lanes, float* dst, int64_t plane_stride) {
  if (nchwc::block_transpose_available()) return nchwc::transpose_tile32(pixels, B, lanes, OW, dst, plane_stride);
  for (int64_t j = 0; j < lanes; ++j)
    for (int64_t ow = 0; ow < OW; ++ow) dst[j * plane_stride + ow] = pixels[ow * B + j];
}

// com.onyx NchwcResize: Resize (opset 11+ inputs and attributes) of a blocked
// [N, ceil(C / B), H, W, B] tensor, read as the NCHW tensor of `channels` C;
// only H and W may change. The output is blocked, or with `nchw_output` the
// plain NCHW tensor: each row is transposed into the planes while in cache,
// instead of a ReorderOutput reading the whole (larger) output back.
void run_nchwc_resize(const ResizeConfig& cfg, int64_t channels, bool nchw_output, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ONYX_KERNEL_CHECK(x.rank() == 5 && x.dtype() == DataType::Float,
                    "NchwcResize: input must be a blocked float tensor of rank 5, got " + shape_to_string(x.shape()));
  const int64_t N = x.dim(0), Cb = x.dim(1), H = x.dim(2), W = x.dim(3), B = x.dim(4);
  ONYX_KERNEL_CHECK(B > 0 && Cb == (channels + B - 1) / B,
                    "NchwcResize: input " + shape_to_string(x.shape()) + " does not hold " + std::to_string(channels) +
                        " channels");
  const ResizePlan plan = plan_resize(cfg, ctx, {N, channels, H, W}, "NchwcResize");
  const bool spatial_only =
      plan.out[0] == N && plan.out[1] == channels &&
      (plan.taps.empty() || (identity_taps(plan.taps[0], N) && identity_taps(plan.taps[1], channels)));
  ONYX_KERNEL_CHECK(spatial_only, "NchwcResize: only height and width may change, got output shape " +
                                      shape_to_string(plan.out) + " for input " +
                                      shape_to_string(Shape{N, channels, H, W}));
  const int64_t OH = plan.out[2], OW = plan.out[3];
  Tensor& y = ctx.allocate_output(0, DataType::Float, nchw_output ? Shape{N, channels, OH, OW} : Shape{N, Cb, OH, OW, B});
  if (y.numel() == 0) return;
  const float* in = x.data<float>();
  float* out = y.data<float>();
  // To NCHW, an upsampling of 3x or more per axis reorders the input to planes and runs the
  // plain resize, which widens each input row once and blends whole rows: measured on one-node
  // models, 1.1-1.8x faster at 4x and 8x than transposing every blocked row to the planes,
  // which in turn wins by 1.4x at 2x.
  if (nchw_output && OH * OW >= 9 * H * W) {
    Tensor planes(DataType::Float, {N, channels, H, W});
    reorder_from_blocked(in, planes.shape(), static_cast<int>(B), planes.data<float>(), ctx.thread_pool());
    resize_typed<float>(cfg.p, planes, y, plan.taps, ctx.thread_pool());
    return;
  }
  const BlockedTaps th(plan.taps[2], W * B), tw(plan.taps[3], B);
  parallel_for(y.numel() > (1 << 15) ? ctx.thread_pool() : nullptr, N * Cb * OH, [&](int64_t r0, int64_t r1) {
    std::vector<float> blend(static_cast<size_t>(W * B)), pixels(nchw_output ? static_cast<size_t>(OW * B) : 0);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t plane = r / OH, oh = r % OH, lanes = std::min(B, channels - plane % Cb * B);
      const float* src = in + plane * H * W * B;
      if (!nchw_output) {
        nchwc_resize_row(src, out + r * OW * B, blend.data(), th, tw, oh, W, B, lanes, cfg.p.extrapolation);
        continue;
      }
      nchwc_resize_row(src, pixels.data(), blend.data(), th, tw, oh, W, B, lanes, cfg.p.extrapolation);
      const int64_t n = plane / Cb, c0 = plane % Cb * B;
      pixels_to_planes(pixels.data(), OW, B, lanes, out + ((n * channels + c0) * OH + oh) * OW, OH * OW);
    }
  });
}

Mode parse_mode(const std::string& m) {
  if (m == "nearest") return Mode::Nearest;
  if (m == "linear" || m == "bilinear") return Mode::Linear;
  if (m == "cubic") return Mode::Cubic;
  kernel_fail("Resize: unknown mode '" + m + "'");
}

// The attributes of Resize at `opset` (Upsample's when upsample).
ResizeConfig read_resize_config(const KernelInitContext& init, bool upsample, int64_t opset) {
  ResizeConfig cfg;
  cfg.upsample = upsample;
  cfg.opset = opset;
  cfg.p.mode = parse_mode(init.get_string("mode", "nearest"));
  if (upsample || cfg.opset < 11) {
    ONYX_KERNEL_CHECK(cfg.p.mode != Mode::Cubic, "Upsample/Resize-10: cubic mode is not supported");
    cfg.p.coord = Coord::Asymmetric;
    cfg.p.nearest = NearestMode::Simple;
    if (upsample && cfg.opset < 7) {
      // Upsample-1 (experimental) scales the H and W of an NCHW image.
      ONYX_KERNEL_CHECK(init.has("height_scale") && init.has("width_scale"),
                        "Upsample-1: attributes 'height_scale' and 'width_scale' are required");
      cfg.attr_scales = {1.0f, 1.0f, init.get_float("height_scale", 1.0f), init.get_float("width_scale", 1.0f)};
    } else if (upsample && cfg.opset < 9) {
      cfg.attr_scales = init.get_floats("scales");
    }
  } else {
    std::string c = init.get_string("coordinate_transformation_mode", "half_pixel");
    if (c == "half_pixel") cfg.p.coord = Coord::HalfPixel;
    else if (c == "pytorch_half_pixel") cfg.p.coord = Coord::PytorchHalfPixel;
    else if (c == "align_corners") cfg.p.coord = Coord::AlignCorners;
    else if (c == "asymmetric") cfg.p.coord = Coord::Asymmetric;
    else if (c == "tf_half_pixel_for_nn") cfg.p.coord = Coord::TfHalfPixelForNN;
    else if (c == "tf_crop_and_resize") cfg.p.coord = Coord::TfCropAndResize;
    else if (c == "half_pixel_symmetric") cfg.p.coord = Coord::HalfPixelSymmetric;
    else kernel_fail("Resize: unknown coordinate_transformation_mode '" + c + "'");
    std::string nm = init.get_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") cfg.p.nearest = NearestMode::RoundPreferFloor;
    else if (nm == "round_prefer_ceil") cfg.p.nearest = NearestMode::RoundPreferCeil;
    else if (nm == "floor") cfg.p.nearest = NearestMode::Floor;
    else if (nm == "ceil") cfg.p.nearest = NearestMode::Ceil;
    else kernel_fail("Resize: unknown nearest_mode '" + nm + "'");
    cfg.p.cubic_a = init.get_float("cubic_coeff_a", -0.75f);
    cfg.p.exclude_outside = init.get_int("exclude_outside", 0) != 0;
    cfg.p.extrapolation = init.get_float("extrapolation_value", 0.f);
    cfg.p.antialias = init.get_int("antialias", 0) != 0;
    cfg.axes = init.get_ints("axes", {});
    cfg.aspect = init.get_string("keep_aspect_ratio_policy", "stretch");
  }
  return cfg;
}

KernelFactory resize_factory(bool upsample) {
  return [upsample](const KernelInitContext& init) -> std::unique_ptr<Kernel> {
    ResizeConfig cfg = read_resize_config(init, upsample, init.opset());
    return std::make_unique<LambdaKernel>([cfg](KernelContext& ctx) { run_resize(cfg, ctx); });
  };
}

// The blocked form keeps the newest Resize's inputs and attributes (the layout
// pass converts Resize from opset 11 on, whose inputs are the same).
KernelFactory nchwc_resize_factory() {
  return [](const KernelInitContext& init) -> std::unique_ptr<Kernel> {
    ResizeConfig cfg = read_resize_config(init, false, 19);
    const int64_t channels = init.get_int("channels", 0);
    ONYX_KERNEL_CHECK(channels > 0, "NchwcResize: attribute 'channels' must be positive");
    const int64_t nchw_output = init.get_int("nchw_output", 0);
    ONYX_KERNEL_CHECK(nchw_output == 0 || nchw_output == 1, "NchwcResize: attribute 'nchw_output' must be 0 or 1");
    return std::make_unique<LambdaKernel>(
        [cfg, channels, nchw_output](KernelContext& ctx) { run_nchwc_resize(cfg, channels, nchw_output, ctx); });
  };
}

}  // namespace

void register_resize(KernelRegistry& r) {
  r.add("Resize", 10, kMaxOpset, resize_factory(false));
  r.add("Upsample", 1, kMaxOpset, resize_factory(true));
  r.add("NchwcResize", 1, kMaxOpset, nchwc_resize_factory(), "com.onyx");
}

}  // namespace onyx
