// Pooling: MaxPool (with Indices), AveragePool, LpPool, their Global forms,
// MaxUnpool and MaxRoiPool. N-D over the spatial dims of [N, C, D1, ...].
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/aligned_memory.h"
#include "base/cpu_features.h"
#include "cpu/block_transpose_avx512.h"
#include "cpu/conv_geometry.h"
#include "cpu/cpu_provider.h"
#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_pool.h"
#include "cpu/row_reduce.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

enum class PoolKind { Max, Avg, Lp };

template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
T lowest_value() {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return T(-std::numeric_limits<float>::infinity());
  else if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}

struct PoolParams {
  PoolKind kind = PoolKind::Max;
  bool count_include_pad = false;
  double p = 2;
  int64_t storage_order = 0;
};

// 1-, 2- and 3-D max / average pooling without indices, one axis at a time:
// a box's max (or sum) is the max along W, then along H, then along D, so a
// 3x3x3 window costs 9 reductions instead of 27. Each pass, per kernel tap,
// makes one branch-free pass over the outputs that tap reaches; on the outer
// axes those are whole rows or planes, long vectors. The per-window loop ran
// 30-60x slower than onnxruntime on 2-D pools (mispredicted branches) and
// 100x on 3-D ones; per-row taps still ran 5x slower on video models' short
// 3-D rows.
struct PoolAxis {
  int64_t in = 1, out = 1, k = 1, stride = 1, dil = 1, pad = 0, pad_end = 0;
  // For a strided pass over whole rows read from memory: all taps of one
  // output row before the next, so the rows stream in order. Tap by tap, a
  // pass read every stride-th row, and the rows it skipped came from memory
  // again on the next tap's pass. (Over rows in cache, tap by tap is faster.)
  bool taps_by_row = false;

  static PoolAxis of(const SpatialGeometry& g, int d) {
    return {g.in[d], g.out[d], g.kernel[d], g.strides[d], g.dilations[d], g.pad_begin[d], g.pad_end[d]};
  }
  bool is_identity() const { return k == 1 && stride == 1 && pad == 0 && in == out; }
  // The input position tap t of output o reads.
  int64_t at(int64_t o, int64_t t) const { return o * stride - pad + t * dil; }
  // Window taps of output o that read the input (or padding, when counted).
  int64_t count(int64_t o, bool include_pad) const {
    int64_t n = 0;
    for (int64_t t = 0; t < k; ++t) {
      const int64_t p = at(o, t);
      n += include_pad ? (p >= -pad && p < in + pad_end) : (p >= 0 && p < in);
    }
    return n;
  }
  // Outputs in [o0, o1) whose tap t reads the input: [lo, hi).
  std::pair<int64_t, int64_t> reach(int64_t t, int64_t o0, int64_t o1) const {
    const int64_t off = t * dil - pad;  // input position at output 0
    const int64_t lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
    const int64_t hi = in - 1 - off < 0 ? 0 : (in - 1 - off) / stride + 1;
    return {std::max(lo, o0), std::max(std::max(lo, o0), std::min(hi, o1))};
  }
  // Input positions that outputs [o0, o1) read: [lo, hi).
  std::pair<int64_t, int64_t> inputs_of(int64_t o0, int64_t o1) const {
    return {std::clamp<int64_t>(at(o0, 0), 0, in), std::clamp<int64_t>(at(o1 - 1, k - 1) + 1, 0, in)};
  }
};

template <bool kMax, class Acc, class Src>
__attribute__((always_inline)) inline void combine(Acc* __restrict d, const Src* __restrict s, int64_t n,
                                                   int64_t step) {
  if (step == 1) {
    for (int64_t e = 0; e < n; ++e)
      d[e] = kMax ? (d[e] < static_cast<Acc>(s[e]) ? static_cast<Acc>(s[e]) : d[e]) : d[e] + static_cast<Acc>(s[e]);
  } else if (step == 2) {  // a constant stride vectorizes as shuffles; a variable one as single loads
    for (int64_t e = 0; e < n; ++e)
      d[e] = kMax ? (d[e] < static_cast<Acc>(s[2 * e]) ? static_cast<Acc>(s[2 * e]) : d[e])
                  : d[e] + static_cast<Acc>(s[2 * e]);
  } else {
    for (int64_t e = 0; e < n; ++e)
      d[e] = kMax ? (d[e] < static_cast<Acc>(s[e * step]) ? static_cast<Acc>(s[e * step]) : d[e])
                  : d[e] + static_cast<Acc>(s[e * step]);
  }
}

// One axis of [outer, rows, inner] blocks: dst[b][o - o0][:] = reduce over
// taps of src[b][at(o, t) - i0][:] for the outputs o in [o0, o1); src holds
// src_rows input rows from row i0.
template <bool kMax, class Src, class Acc>
__attribute__((always_inline)) inline void pool_axis(const Src* src, Acc* dst, int64_t outer, const PoolAxis& a,
                                                     int64_t inner, int64_t o0, int64_t o1, int64_t i0,
                                                     int64_t src_rows, Acc init) {
  const int64_t dst_rows = o1 - o0;
  std::fill(dst, dst + outer * dst_rows * inner, init);
  // Short rows whose outputs tile them exactly (a stride-1 "same" pool, or a
  // stride-2 one over an even width) run as one long row: each tap's pass
  // then crosses row ends, and the few border outputs, whose taps do not all
  // read their own row, are redone row by row below.
  const bool as_one_row = inner == 1 && a.in == a.stride * a.out && dst_rows == a.out && i0 == 0 && outer > 1;
  if (a.taps_by_row && inner > 1) {
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t t = 0; t < a.k; ++t) {
          const int64_t row = a.at(o, t);
          if (row >= 0 && row < a.in)
            combine<kMax>(dst + (b * dst_rows + o - o0) * inner, src + (b * src_rows + row - i0) * inner, inner, 1);
        }
    return;
  }
  for (int64_t t = 0; t < a.k; ++t) {
    if (as_one_row) {
      // output e reads src[e * stride + off] (e0, e1 keep that inside src)
      const int64_t off = t * a.dil - a.pad, total = outer * a.out, st = a.stride;
      const int64_t e0 = off >= 0 ? 0 : (-off + st - 1) / st;
      const int64_t last = total * st - 1 - off;  // the last src position a tap may read, less off
      const int64_t e1 = last < 0 ? 0 : std::min(total, last / st + 1);
      if (e1 > e0) combine<kMax>(dst + e0, src + e0 * st + off, e1 - e0, st);
      continue;
    }
    const auto [lo, hi] = a.reach(t, o0, o1);
    if (hi <= lo) continue;
    for (int64_t b = 0; b < outer; ++b) {
      Acc* d = dst + (b * dst_rows + lo - o0) * inner;
      const Src* s = src + (b * src_rows + a.at(lo, t) - i0) * inner;
      if (a.stride == 1 || inner == 1) {  // one run: consecutive outputs read rows `stride` apart
        combine<kMax>(d, s, (hi - lo) * inner, a.stride == 1 ? 1 : a.stride);
      } else {
        for (int64_t o = 0; o < hi - lo; ++o) combine<kMax>(d + o * inner, s + o * a.stride * inner, inner, 1);
      }
    }
  }
  if (!as_one_row) return;
  int64_t left = 0, right = a.out;  // outputs whose every tap reads their own row: [left, right)
  for (int64_t t = 0; t < a.k; ++t) {
    const auto [lo, hi] = a.reach(t, 0, a.out);
    left = std::max(left, lo);
    right = std::min(right, hi);
  }
  right = std::max(left, right);
  auto redo = [&](int64_t b, int64_t o) {
    Acc v = init;
    for (int64_t t = 0; t < a.k; ++t) {
      const int64_t at = a.at(o, t);
      if (at < 0 || at >= a.in) continue;
      const Acc x = static_cast<Acc>(src[b * a.in + at]);
      v = kMax ? (v < x ? x : v) : v + x;
    }
    dst[b * a.out + o] = v;
  };
  for (int64_t b = 0; b < outer; ++b) {
    for (int64_t o = 0; o < left; ++o) redo(b, o);
    for (int64_t o = right; o < a.out; ++o) redo(b, o);
  }
}

template <class Src, class Acc>
__attribute__((always_inline)) inline void pool_axis_any(const Src* src, Acc* dst, int64_t outer, const PoolAxis& a,
                                                         int64_t inner, int64_t o0, int64_t o1, int64_t i0,
                                                         int64_t src_rows, bool is_max, Acc init) {
  if (is_max) pool_axis<true>(src, dst, outer, a, inner, o0, o1, i0, src_rows, init);
  else pool_axis<false>(src, dst, outer, a, inner, o0, o1, i0, src_rows, init);
}

// The float instance, compiled for AVX-512, AVX2 and baseline x86-64 (picked
// at load time) so the tap loops vectorize.
ONYX_VECTOR_CLONES
void pool_axis_f32(const float* src, float* dst, int64_t outer, const PoolAxis& a, int64_t inner, int64_t o0,
                   int64_t o1, int64_t i0, int64_t src_rows, bool is_max, float init) {
  pool_axis_any<float, float>(src, dst, outer, a, inner, o0, o1, i0, src_rows, is_max, init);
}

template <class Src, class Acc>
void reduce_axis(const Src* src, Acc* dst, int64_t outer, const PoolAxis& a, int64_t inner, int64_t o0, int64_t o1,
                 int64_t i0, int64_t src_rows, bool is_max, Acc init) {
  if constexpr (std::is_same_v<Src, float> && std::is_same_v<Acc, float>)
    pool_axis_f32(src, dst, outer, a, inner, o0, o1, i0, src_rows, is_max, init);
  else pool_axis_any<Src, Acc>(src, dst, outer, a, inner, o0, o1, i0, src_rows, is_max, init);
}

// The pool as three axes D, H, W (missing ones of size 1). A 2-D pool puts
// its H in the D slot, so that the outermost axis, which work is split along,
// is always a real one.
struct SeparablePool {
  PoolAxis d, h, w;
  bool is_max, include_pad;
  std::vector<float> w_count;  // taps an average counts, per output column, at least 1 (exact as float)

  SeparablePool(const SpatialGeometry& g, const PoolParams& pp)
      : is_max(pp.kind == PoolKind::Max), include_pad(pp.count_include_pad) {
    w = PoolAxis::of(g, g.nd - 1);
    if (g.nd >= 2) d = PoolAxis::of(g, g.nd - 2);
    if (g.nd == 3) {
      h = d;
      d = PoolAxis::of(g, 0);
    }
    for (int64_t o = 0; o < w.out; ++o)
      w_count.push_back(static_cast<float>(std::max<int64_t>(1, w.count(o, include_pad))));
  }
  int64_t out_plane() const { return h.out * w.out; }  // outputs per output depth
};

// Max pools compare in T (exact for 64-bit ints); averages, and 16-bit
// floats, accumulate in float (double for double).
template <class T>
using PoolAcc = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

// Sums to averages along one output row, in place where T is the
// accumulator (one pointer, so the loop vectorizes). Counts are at least 1:
// a window that counts no taps summed nothing, and 0 / 1 is its average.
template <class T, class Acc>
__attribute__((always_inline)) inline void average_row(const Acc* sum, T* out, const float* __restrict counts,
                                                       Acc outer, int64_t n) {
  if constexpr (std::is_same_v<T, Acc>) {
    if (sum == out) {
      Acc* __restrict v = out;
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] / (outer * static_cast<Acc>(counts[i]));
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(sum[i] / (outer * static_cast<Acc>(counts[i])));
}

ONYX_VECTOR_CLONES
void average_row_f32(const float* sum, float* out, const float* counts, float outer, int64_t n) {
  average_row(sum, out, counts, outer, n);
}

// The narrowest rows a strided H pass reading the input takes taps by row
// (PoolAxis::taps_by_row). Measured (scripts/ab_binaries.py, 1 thread): rows
// of 56 and 112 floats 1.13x and 1.27x faster that way; of 14 and 28, 0.81x
// and 0.87x.
constexpr int64_t kTapsByRowMinWidth = 48;

// Output depths [o0, o1) of `planes` planes (several only whole: o0 == 0,
// o1 == p.d.out): W and H (in the order that shrinks the rows first) over
// the input depths they read, then D, each pass one call over all the
// planes; scratch is reused across calls.
template <class T>
void pool_depth_chunk(const SeparablePool& p, const T* x, T* y, int64_t planes, int64_t o0, int64_t o1,
                      std::vector<PoolAcc<T>>& scratch) {
  using Acc = PoolAcc<T>;
  const Acc init = p.is_max ? static_cast<Acc>(lowest_value<T>()) : Acc(0);
  const auto [i0, i1] = planes > 1 ? std::pair<int64_t, int64_t>{0, p.d.in} : p.d.inputs_of(o0, o1);
  const int64_t depths = i1 - i0, plane = p.out_plane(), runs = planes * (o1 - o0);
  // Each pass writes where the next reads; a pass over an axis the window
  // leaves alone is skipped, and the last one writes y itself where y holds
  // the accumulator type.
  const size_t for_d = std::is_same_v<T, Acc> ? 0 : runs * plane;
  const size_t for_h = p.d.is_identity() ? 0 : planes * depths * plane;
  // H before W where H shrinks the rows at least as much as W does: the W
  // pass's strided taps, its costly part, then run over fewer rows.
  const bool h_first = !p.h.is_identity() && p.h.in * p.w.out >= p.w.in * p.h.out;
  const size_t for_first =
      p.h.is_identity() ? 0 : planes * depths * (h_first ? p.h.out * p.w.in : p.h.in * p.w.out);
  scratch.resize(for_d + for_h + for_first);
  T* out = y + o0 * plane;
  Acc* t3 = scratch.data();
  if constexpr (std::is_same_v<T, Acc>) t3 = out;
  Acc* t2 = p.d.is_identity() ? t3 : scratch.data() + for_d;
  Acc* t1 = p.h.is_identity() ? t2 : scratch.data() + for_d + for_h;
  const int64_t in_plane = p.h.in * p.w.in, n = runs * plane;
  const T* xs = x + i0 * in_plane;
  if (h_first) {
    PoolAxis h_from_memory = p.h;
    // Rows of a few cache lines or more: a skipped row is whole lines skipped.
    h_from_memory.taps_by_row = p.h.stride > 1 && p.w.in >= kTapsByRowMinWidth;
    reduce_axis(xs, t1, planes * depths, h_from_memory, p.w.in, 0, p.h.out, 0, p.h.in, p.is_max, init);
    reduce_axis(t1, t2, planes * depths * p.h.out, p.w, 1, 0, p.w.out, 0, p.w.in, p.is_max, init);
  } else {
    reduce_axis(xs, t1, planes * depths * p.h.in, p.w, 1, 0, p.w.out, 0, p.w.in, p.is_max, init);
    if (!p.h.is_identity()) reduce_axis(t1, t2, planes * depths, p.h, p.w.out, 0, p.h.out, 0, p.h.in, p.is_max, init);
  }
  if (!p.d.is_identity()) reduce_axis(t2, t3, planes, p.d, plane, o0, o1, i0, depths, p.is_max, init);
  if (p.is_max) {
    if constexpr (!std::is_same_v<T, Acc>)
      for (int64_t e = 0; e < n; ++e) out[e] = static_cast<T>(t3[e]);
    return;
  }
  for (int64_t r = 0; r < runs; ++r) {
    const int64_t od = o0 + r % (o1 - o0);
    for (int64_t oh = 0; oh < p.h.out; ++oh) {
      const int64_t counted = p.d.count(od, p.include_pad) * p.h.count(oh, p.include_pad);
      const Acc outer = static_cast<Acc>(std::max<int64_t>(1, counted));
      const int64_t row = (r * p.h.out + oh) * p.w.out;
      if constexpr (std::is_same_v<T, float>) average_row_f32(t3 + row, out + row, p.w_count.data(), outer, p.w.out);
      else average_row(t3 + row, out + row, p.w_count.data(), outer, p.w.out);
    }
  }
}

// Work is split into tasks of outputs that keep a task's scratch in cache
// (16K outputs), and enough of them to share among the threads: runs of
// output depths of one plane, or where whole planes are small, groups of
// planes, each pass then one call over the group (one call per plane cost
// 215 ns per 13x13 plane, 6x onnxruntime's time).
template <class T>
void pool_separable(const T* x, T* y, int64_t NC, const SpatialGeometry& g, const PoolParams& pp, ThreadPool* pool) {
  const SeparablePool p(g, pp);
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  const int64_t by_cache = std::max<int64_t>(1, (int64_t{16} << 10) / std::max<int64_t>(1, p.out_plane()));
  const int64_t by_threads = std::max<int64_t>(1, p.d.out * NC / (int64_t{4} * threads));
  const int64_t run = std::min({p.d.out, by_cache, by_threads});
  const int64_t runs = (p.d.out + run - 1) / run;
  // planes of up to 4K inputs together: more streamed the passes' buffers out
  // of L1 (192 planes of 35x35 took 1.16x the time in groups of 13)
  const int64_t by_l1 = (int64_t{4} << 10) / std::max<int64_t>(1, in_size);
  const int64_t group =
      run < p.d.out ? 1 : std::max<int64_t>(1, std::min(by_l1, std::min(by_cache, by_threads) / p.d.out));
  const int64_t tasks = runs > 1 ? NC * runs : (NC + group - 1) / group;
  ThreadPool* tp = NC * out_size * g.kernel_size() > 65536 ? pool : nullptr;
  parallel_for(tp, tasks, [&](int64_t t0, int64_t t1) {
    std::vector<PoolAcc<T>> scratch;
    for (int64_t t = t0; t < t1; ++t) {
      if (runs > 1) {
        const int64_t c = t / runs, o0 = t % runs * run;
        pool_depth_chunk(p, x + c * in_size, y + c * out_size, 1, o0, std::min(p.d.out, o0 + run), scratch);
      } else {
        const int64_t c = t * group, planes = std::min(group, NC - c);
        pool_depth_chunk(p, x + c * in_size, y + c * out_size, planes, 0, p.d.out, scratch);
      }
    }
  });
}

// x, y are [NC, spatial...]; idx (optional) receives MaxPool's flat indices.
template <class T>
void pool_nd(const T* x, T* y, int64_t* idx, int64_t NC, const SpatialGeometry& g, const PoolParams& pp,
             ThreadPool* pool) {
  using Acc = AccOf<T>;
  const int nd = g.nd;
  const int64_t is = g.in_size(), os = g.out_size();
  // strides of the input, row-major and column-major (for storage_order 1)
  std::vector<int64_t> rstride(nd, 1), cstride(nd, 1);
  for (int d = nd - 2; d >= 0; --d) rstride[d] = rstride[d + 1] * g.in[d + 1];
  for (int d = 1; d < nd; ++d) cstride[d] = cstride[d - 1] * g.in[d - 1];
  ThreadPool* tp = NC * os * g.kernel_size() > 65536 ? pool : nullptr;
  if (nd <= 3 && pp.kind != PoolKind::Lp && !idx) {
    pool_separable(x, y, NC, g, pp, pool);
    return;
  }
  if (nd == 2 && pp.kind == PoolKind::Max) {
    // 2-D MaxPool with Indices: each window, tracking where its max is
    const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
    const int64_t kh = g.kernel[0], kw = g.kernel[1], sh = g.strides[0], sw = g.strides[1];
    const int64_t dh = g.dilations[0], dw = g.dilations[1], ph = g.pad_begin[0], pw = g.pad_begin[1];
    parallel_for(tp, NC, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const T* xc = x + c * is;
        for (int64_t oh = 0; oh < OH; ++oh) {
          int64_t h0 = oh * sh - ph;
          int64_t kh0 = 0, kh1 = kh;  // valid k range: 0 <= h0 + k*dh < H
          while (kh0 < kh && h0 + kh0 * dh < 0) ++kh0;
          while (kh1 > kh0 && h0 + (kh1 - 1) * dh >= H) --kh1;
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t w0 = ow * sw - pw;
            int64_t kw0 = 0, kw1 = kw;
            while (kw0 < kw && w0 + kw0 * dw < 0) ++kw0;
            while (kw1 > kw0 && w0 + (kw1 - 1) * dw >= W) --kw1;
            int64_t out_i = c * os + oh * OW + ow;
            if (kh1 <= kh0 || kw1 <= kw0) {
              y[out_i] = lowest_value<T>();
              idx[out_i] = 0;
              continue;
            }
            T best = xc[(h0 + kh0 * dh) * W + w0 + kw0 * dw];
            int64_t bh = h0 + kh0 * dh, bw = w0 + kw0 * dw;
            for (int64_t i = kh0; i < kh1; ++i) {
              const T* row = xc + (h0 + i * dh) * W + w0;
              for (int64_t j = kw0; j < kw1; ++j) {
                T v = row[j * dw];
                if (v > best) {
                  best = v;
                  bh = h0 + i * dh;
                  bw = w0 + j * dw;
                }
              }
            }
            y[out_i] = best;
            idx[out_i] = c * is + (pp.storage_order == 1 ? bw * H + bh : bh * W + bw);
          }
        }
      }
    });
    return;
  }
  parallel_for(tp, NC, [&](int64_t c0, int64_t c1) {
    std::vector<std::vector<int64_t>> coords(nd);
    std::vector<int64_t> o(nd), pos(nd);
    for (int64_t c = c0; c < c1; ++c) {
      const T* xc = x + c * is;
      std::fill(o.begin(), o.end(), 0);
      for (int64_t op = 0; op < os; ++op) {
        int64_t padded_count = 1;
        bool empty = false;
        for (int d = 0; d < nd; ++d) {
          coords[d].clear();
          int64_t start = o[d] * g.strides[d] - g.pad_begin[d];
          int64_t in_pad = 0;
          for (int64_t k = 0; k < g.kernel[d]; ++k) {
            int64_t id = start + k * g.dilations[d];
            if (id >= 0 && id < g.in[d]) coords[d].push_back(id);
            if (id >= -g.pad_begin[d] && id < g.in[d] + g.pad_end[d]) ++in_pad;
          }
          padded_count *= in_pad;
          if (coords[d].empty()) empty = true;
        }
        int64_t out_i = c * os + op;
        if (empty) {
          y[out_i] = pp.kind == PoolKind::Max ? lowest_value<T>() : T(0);
          if (idx) idx[out_i] = 0;
        } else {
          // odometer over the valid window positions
          std::fill(pos.begin(), pos.end(), 0);
          T best = lowest_value<T>();
          int64_t best_off = -1;
          Acc sum = 0;
          int64_t count = 0;
          while (true) {
            int64_t off = 0;
            for (int d = 0; d < nd; ++d) off += coords[d][pos[d]] * rstride[d];
            T v = xc[off];
            if (pp.kind == PoolKind::Max) {
              if (best_off < 0 || v > best) {
                best = v;
                best_off = off;
              }
            } else if (pp.kind == PoolKind::Avg) {
              sum += static_cast<Acc>(v);
            } else {
              sum += static_cast<Acc>(std::pow(std::fabs(static_cast<double>(v)), pp.p));
            }
            ++count;
            int d = nd - 1;
            for (; d >= 0; --d) {
              if (++pos[d] < static_cast<int64_t>(coords[d].size())) break;
              pos[d] = 0;
            }
            if (d < 0) break;
          }
          if (pp.kind == PoolKind::Max) {
            y[out_i] = best;
            if (idx) {
              int64_t flat = best_off;
              if (pp.storage_order == 1) {
                flat = 0;
                int64_t rem = best_off;
                for (int d = 0; d < nd; ++d) {
                  flat += (rem / rstride[d]) * cstride[d];
                  rem %= rstride[d];
                }
              }
              idx[out_i] = c * is + flat;
            }
          } else if (pp.kind == PoolKind::Avg) {
            int64_t div = pp.count_include_pad ? padded_count : count;
            y[out_i] = T(sum / static_cast<Acc>(div));
          } else {
            y[out_i] = T(static_cast<Acc>(std::pow(static_cast<double>(sum), 1.0 / pp.p)));
          }
        }
        for (int d = nd - 1; d >= 0; --d) {
          if (++o[d] < g.out[d]) break;
          o[d] = 0;
        }
      }
    }
  });
}

// ---- Global pools ----

// y[c] = the pool of plane c of x [NC, inner] as a whole: the global pools,
// and windows that cover their whole input unpadded (an AveragePool 7x7 over
// 7x7 ran its separable passes at 180 ns per plane, 22x onnxruntime's time).
template <class T>
void pool_whole_planes(PoolKind kind, double p, const T* x, T* y, int64_t NC, int64_t inner, ThreadPool* pool) {
  using Acc = AccOf<T>;
  parallel_for(NC * inner > 65536 ? pool : nullptr, NC, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const T* xc = x + c * inner;
      T& out = y[c];
      if constexpr (std::is_same_v<T, float>) {
        if (kind == PoolKind::Max) {
          out = rr::max(xc, inner);
          continue;
        }
        if (kind == PoolKind::Avg) {
          out = static_cast<float>(rr::sum(xc, inner) / static_cast<double>(inner));
          continue;
        }
      }
      if (kind == PoolKind::Max) {
        Acc m = static_cast<Acc>(xc[0]);
        for (int64_t i = 1; i < inner; ++i) m = std::max(m, static_cast<Acc>(xc[i]));
        out = T(m);
      } else if (kind == PoolKind::Avg) {
        Acc s = 0;
        for (int64_t i = 0; i < inner; ++i) s += static_cast<Acc>(xc[i]);
        out = T(s / static_cast<Acc>(inner));
      } else {
        double s = 0;
        for (int64_t i = 0; i < inner; ++i) s += std::pow(std::fabs(static_cast<double>(xc[i])), p);
        out = T(static_cast<Acc>(std::pow(s, 1.0 / p)));
      }
    }
  });
}

// Whether g's one window is its whole input: one output per axis, each tap
// of it one input position, no padding.
bool window_is_whole_input(const SpatialGeometry& g) {
  for (int d = 0; d < g.nd; ++d)
    if (g.out[d] != 1 || g.kernel[d] != g.in[d] || (g.kernel[d] > 1 && g.dilations[d] != 1) || g.pad_begin[d] != 0 ||
        g.pad_end[d] != 0)
      return false;
  return true;
}

// 2-D float max and average pools of planes of at most this many positions
// run on the blocked layout (nchwc_pool.h), 16 channels per vector, between
// two reorders. The separable passes spend most of their time per row and
// tap on such planes (scripts/ab_binaries.py, 1 thread: MaxPool 3x3/2 over
// 256x13x13 4.3x faster this way, AveragePool 3x3 over 1024x7x7 3.9x,
// 192x35x35 1.43x, MaxPool 3x3/2 over 96x55x55 1.16x); over 64x112x112 the
// reorders' traffic made it 0.95x.
constexpr int64_t kMaxBlockedPoolPlane = 64 * 64;
// Below this many inputs its three passes run on one thread: their syncs
// cost more than a second thread saves. (At 2 threads, 43K-100K inputs ran
// 1.11-1.2x faster on both than on one: MaxPool 3x3/2 over 256x13x13, 2x2/2
// over 512x14x14, AveragePool 3x3 over 1024x7x7.)
constexpr int64_t kMinParallelPool = int64_t{1} << 15;

bool pool_via_blocked(const Tensor& x, const SpatialAttrs& attrs, const PoolParams& pp, Tensor& y, ThreadPool* pool) {
  if (x.dtype() != DataType::Float || x.rank() != 4 || pp.kind == PoolKind::Lp || !nchwc::block_transpose_available() ||
      x.dim(2) * x.dim(3) > kMaxBlockedPoolPlane)
    return false;
  // A window all padding would give -FLT_MAX there, not the passes' -inf.
  const SpatialGeometry g = compute_geometry({x.dim(2), x.dim(3)}, attrs, attrs.kernel);
  for (int d = 0; d < 2; ++d) {
    const int64_t extent = (g.kernel[d] - 1) * g.dilations[d] + 1;
    if (g.pad_begin[d] >= extent || g.pad_end[d] >= extent) return false;
  }
  constexpr int kBlock = 16;
  BlockedPoolConfig cfg;
  cfg.kind = pp.kind == PoolKind::Max ? BlockedPoolConfig::Max : BlockedPoolConfig::Average;
  cfg.attrs = attrs;
  cfg.count_include_pad = pp.count_include_pad;
  thread_local AlignedScratch x_scratch, y_scratch;
  float* xb = x_scratch.get(static_cast<size_t>(shape_numel(blocked_shape(x.shape(), kBlock))));
  float* yb = y_scratch.get(static_cast<size_t>(shape_numel(blocked_shape(y.shape(), kBlock))));
  if (x.numel() < kMinParallelPool) pool = nullptr;
  reorder_to_blocked(x.data<float>(), x.shape(), kBlock, xb, pool);
  BlockedPool(cfg).run(xb, x.shape(), kBlock, yb, pool);
  reorder_from_blocked(yb, y.shape(), kBlock, y.data<float>(), pool);
  return true;
}

// Taps that only ever read padding add nothing to a max, an Lp norm or an
// average that leaves padding out: dropping them bounds the work by the
// input (a kernel_shape of 2^40 under SAME padding ran for hours).
void drop_padding_only_taps(SpatialGeometry& g) {
  auto floor_div = [](int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0); };
  for (int d = 0; d < g.nd; ++d) {
    const int64_t k = g.kernel[d], s = g.strides[d], dil = g.dilations[d], pb = g.pad_begin[d];
    if (g.out[d] <= 0 || g.in[d] <= 0) continue;
    // tap j reads column o * s - pb + j * dil for the outputs o in [0, out)
    int64_t first = std::max<int64_t>(0, -floor_div((g.out[d] - 1) * s - pb, dil));
    int64_t last = std::min(k - 1, floor_div(g.in[d] - 1 + pb, dil));
    if (last < first) first = last = 0;  // every window is padding; one tap, reading nothing, is left
    g.kernel[d] = last - first + 1;
    g.pad_begin[d] = pb - first * dil;
    g.pad_end[d] -= (k - 1 - last) * dil;
  }
}

KernelFactory make_pool(PoolKind kind) {
  return [kind](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
    SpatialAttrs attrs = SpatialAttrs::read(ic);
    if (attrs.kernel.empty()) kernel_fail("pooling requires the kernel_shape attribute");
    PoolParams pp;
    pp.kind = kind;
    pp.count_include_pad = ic.get_int("count_include_pad", 0) != 0;
    pp.storage_order = ic.get_int("storage_order", 0);
    if (kind == PoolKind::Lp) {
      const Attribute* a = ic.node().attr("p");
      if (a && a->type == AttrType::Float) pp.p = a->f;
      else pp.p = static_cast<double>(ic.get_int("p", 2));
    }
    return std::make_unique<LambdaKernel>([attrs, pp](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      if (X.rank() < 3) kernel_fail("pooling input must have rank >= 3 ([N, C, D1, ...]), got " + shape_to_string(X.shape()));
      SpatialGeometry g = compute_geometry(Shape(X.shape().begin() + 2, X.shape().end()), attrs, attrs.kernel);
      if (pp.kind != PoolKind::Avg || !pp.count_include_pad) drop_padding_only_taps(g);
      Shape out_shape = {X.dim(0), X.dim(1)};
      for (auto v : g.out) out_shape.push_back(v);
      if (pp.kind != PoolKind::Max && !dtype_is_float(X.dtype()))
        unsupported_type(X.dtype(), "a floating-point type");
      Tensor& Y = ctx.allocate_output(0, X.dtype(), out_shape);
      int64_t* idx = nullptr;
      if (pp.kind == PoolKind::Max && ctx.wants_output(1))
        idx = ctx.allocate_output(1, DataType::Int64, out_shape).data<int64_t>();
      if (Y.numel() == 0) return;
      if (!idx && window_is_whole_input(g) && dtype_is_float(X.dtype())) {
        dispatch_float(X.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          pool_whole_planes<T>(pp.kind, pp.p, X.data<T>(), Y.data<T>(), X.dim(0) * X.dim(1), g.in_size(),
                               ctx.thread_pool());
        });
        return;
      }
      if (!idx && pool_via_blocked(X, attrs, pp, Y, ctx.thread_pool())) return;
      dispatch_numeric(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        pool_nd<T>(X.data<T>(), Y.data<T>(), idx, X.dim(0) * X.dim(1), g, pp, ctx.thread_pool());
      });
    });
  };
}

KernelFactory make_global_pool(PoolKind kind) {
  return [kind](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
    double p = 2;
    if (kind == PoolKind::Lp) {
      const Attribute* a = ic.node().attr("p");
      if (a && a->type == AttrType::Float) p = a->f;
      else p = static_cast<double>(ic.get_int("p", 2));
    }
    return std::make_unique<LambdaKernel>([kind, p](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      if (X.rank() < 2) kernel_fail("global pooling input must have rank >= 2, got " + shape_to_string(X.shape()));
      Shape out_shape = {X.dim(0), X.dim(1)};
      int64_t inner = 1;
      for (int d = 2; d < X.rank(); ++d) {
        out_shape.push_back(1);
        inner *= X.dim(d);
      }
      Tensor& Y = ctx.allocate_output(0, X.dtype(), out_shape);
      int64_t NC = X.dim(0) * X.dim(1);
      if (NC == 0) return;
      if (inner == 0) kernel_fail("global pooling over an empty spatial extent");
      dispatch_float(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        pool_whole_planes<T>(kind, p, X.data<T>(), Y.data<T>(), NC, inner, ctx.thread_pool());
      });
    });
  };
}

// ---- MaxUnpool ----

std::unique_ptr<Kernel> make_max_unpool(const KernelInitContext& ic) {
  SpatialAttrs attrs = SpatialAttrs::read(ic);
  if (attrs.kernel.empty()) kernel_fail("MaxUnpool requires the kernel_shape attribute");
  return std::make_unique<LambdaKernel>([attrs](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& I = ctx.input(1);
    if (X.rank() < 3) kernel_fail("MaxUnpool input must have rank >= 3, got " + shape_to_string(X.shape()));
    if (I.shape() != X.shape())
      kernel_fail("MaxUnpool indices " + shape_to_string(I.shape()) + " must have the shape of X " +
                  shape_to_string(X.shape()));
    int nd = X.rank() - 2;
    if (static_cast<int>(attrs.kernel.size()) != nd) kernel_fail("kernel_shape does not match the input rank");
    // The indices address the natural unpooled shape; an explicit output_shape
    // places those coordinates into a (possibly larger) tensor.
    Shape natural = {X.dim(0), X.dim(1)};
    for (int d = 0; d < nd; ++d) {
      int64_t s = attrs.strides.empty() ? 1 : attrs.strides[d];
      int64_t pb = attrs.pads.empty() ? 0 : attrs.pads[d], pe = attrs.pads.empty() ? 0 : attrs.pads[d + nd];
      natural.push_back((X.dim(d + 2) - 1) * s + attrs.kernel[d] - pb - pe);
    }
    Shape out_shape = natural;
    if (ctx.has_input(2)) {
      out_shape = ctx.input(2).to_int64_vector();
      if (static_cast<int>(out_shape.size()) != X.rank())
        kernel_fail("MaxUnpool output_shape " + shape_to_string(out_shape) + " must have rank " + std::to_string(X.rank()));
    }
    for (auto v : out_shape)
      if (v < 0) kernel_fail("MaxUnpool output_shape " + shape_to_string(out_shape) + " has a negative dim");
    bool remap = out_shape != natural;
    int64_t natural_total = shape_numel(natural);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), out_shape);
    int64_t total = Y.numel();
    std::memset(Y.raw(), 0, Y.nbytes());
    dispatch_by_size(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, std::string>) {
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        for (int64_t i = 0; i < X.numel(); ++i) {
          int64_t k = I.int_at(i);
          if (remap && k >= 0 && k < natural_total) {
            int64_t rem = k, flat = 0, mul = 1;
            bool inside = true;
            std::vector<int64_t> coord(natural.size());
            for (int d = static_cast<int>(natural.size()) - 1; d >= 0; --d) {
              coord[d] = rem % natural[d];
              rem /= natural[d];
            }
            for (int d = static_cast<int>(natural.size()) - 1; d >= 0; --d) {
              if (coord[d] >= out_shape[d]) inside = false;
              flat += coord[d] * mul;
              mul *= out_shape[d];
            }
            k = inside ? flat : -1;
          } else if (remap) {
            k = -1;
          }
          if (k < 0 || k >= total)
            kernel_fail("MaxUnpool index " + std::to_string(k) + " is out of range for output " + shape_to_string(out_shape));
          y[k] = x[i];
        }
      } else {
        unsupported_type(X.dtype(), "a numeric type");
      }
    });
  });
}

// ---- MaxRoiPool ----

std::unique_ptr<Kernel> make_max_roi_pool(const KernelInitContext& ic) {
  std::vector<int64_t> pooled = ic.get_ints("pooled_shape");
  float spatial_scale = ic.get_float("spatial_scale", 1.0f);
  if (pooled.size() != 2 || pooled[0] <= 0 || pooled[1] <= 0) kernel_fail("MaxRoiPool pooled_shape must be 2 positive values");
  return std::make_unique<LambdaKernel>([pooled, spatial_scale](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& R = ctx.input(1);
    if (X.rank() != 4) kernel_fail("MaxRoiPool input must be 4-D, got " + shape_to_string(X.shape()));
    if (R.rank() != 2 || R.dim(1) != 5) kernel_fail("MaxRoiPool rois must be [num_rois, 5], got " + shape_to_string(R.shape()));
    int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), nr = R.dim(0);
    int64_t PH = pooled[0], PW = pooled[1];
    Tensor& Y = ctx.allocate_output(0, X.dtype(), {nr, C, PH, PW});
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      T* y = Y.data<T>();
      for (int64_t r = 0; r < nr; ++r) {
        int64_t b = static_cast<int64_t>(R.float_at(r * 5));
        if (b < 0 || b >= N) kernel_fail("MaxRoiPool roi batch index " + std::to_string(b) + " is out of range");
        int64_t x1 = std::llround(R.float_at(r * 5 + 1) * spatial_scale);
        int64_t y1 = std::llround(R.float_at(r * 5 + 2) * spatial_scale);
        int64_t x2 = std::llround(R.float_at(r * 5 + 3) * spatial_scale);
        int64_t y2 = std::llround(R.float_at(r * 5 + 4) * spatial_scale);
        int64_t rh = std::max<int64_t>(y2 - y1 + 1, 1), rw = std::max<int64_t>(x2 - x1 + 1, 1);
        double bh = static_cast<double>(rh) / PH, bw = static_cast<double>(rw) / PW;
        for (int64_t c = 0; c < C; ++c) {
          const T* xc = x + (b * C + c) * H * W;
          for (int64_t ph = 0; ph < PH; ++ph) {
            int64_t hs = std::clamp<int64_t>(static_cast<int64_t>(std::floor(ph * bh)) + y1, 0, H);
            int64_t he = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((ph + 1) * bh)) + y1, 0, H);
            for (int64_t pw = 0; pw < PW; ++pw) {
              int64_t ws = std::clamp<int64_t>(static_cast<int64_t>(std::floor(pw * bw)) + x1, 0, W);
              int64_t we = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((pw + 1) * bw)) + x1, 0, W);
              float m = 0;
              bool any = false;
              for (int64_t h = hs; h < he; ++h)
                for (int64_t w = ws; w < we; ++w) {
                  float v = static_cast<float>(xc[h * W + w]);
                  if (!any || v > m) m = v;
                  any = true;
                }
              y[((r * C + c) * PH + ph) * PW + pw] = T(m);
            }
          }
        }
      }
    });
  });
}

}  // namespace

void register_pool(KernelRegistry& r) {
  r.add("MaxPool", 1, kMaxOpset, make_pool(PoolKind::Max));
  r.add("AveragePool", 1, kMaxOpset, make_pool(PoolKind::Avg));
  r.add("LpPool", 1, kMaxOpset, make_pool(PoolKind::Lp));
  r.add("GlobalMaxPool", 1, kMaxOpset, make_global_pool(PoolKind::Max));
  r.add("GlobalAveragePool", 1, kMaxOpset, make_global_pool(PoolKind::Avg));
  r.add("GlobalLpPool", 1, kMaxOpset, make_global_pool(PoolKind::Lp));
  r.add("MaxUnpool", 9, kMaxOpset, make_max_unpool);
  r.add("MaxRoiPool", 1, kMaxOpset, make_max_roi_pool);
}

}  // namespace onyx
