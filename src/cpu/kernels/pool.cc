// Pooling: MaxPool (with Indices), AveragePool, LpPool, their Global forms,
// MaxUnpool and MaxRoiPool. N-D over the spatial dims of [N, C, D1, ...].
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/conv_geometry.h"
#include "cpu/cpu_provider.h"
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

// 1-, 2- and 3-D max / average pooling without indices, one output row at a
// time: for each kernel tap, one pass over the outputs it reaches (a
// contiguous range, found once per call), so the inner loops are branch-free
// and vectorize. The per-window loop with its running argmax compare ran
// 30-60x slower than onnxruntime on random data (mispredicted branches), and
// 100x on 3-D pools. Fewer spatial dims are the leading ones of size 1.
struct RowPool {
  // The outer axes (depth, height): their sizes and taps. Axis 0 is depth.
  struct Axis {
    int64_t in = 1, out = 1, k = 1, stride = 1, dil = 1, pad = 0, pad_end = 0;
    // window taps of output o that read the input (or padding, when counted)
    int64_t count(int64_t o, bool include_pad) const {
      int64_t n = 0;
      for (int64_t i = 0; i < k; ++i) {
        const int64_t at = o * stride - pad + i * dil;
        n += include_pad ? (at >= -pad && at < in + pad_end) : (at >= 0 && at < in);
      }
      return n;
    }
  };
  Axis depth, height;
  int64_t W, OW, kw, sw, dw, pw;
  bool is_max, include_pad;
  TapRanges taps;               // outputs [lo[j], hi[j]) read tap j of a row inside the input
  std::vector<int64_t> wcount;  // taps along the row counted by an average

  static Axis axis(const SpatialGeometry& g, int d) {
    if (d < 0) return {};
    return {g.in[d], g.out[d], g.kernel[d], g.strides[d], g.dilations[d], g.pad_begin[d], g.pad_end[d]};
  }
  RowPool(const SpatialGeometry& g, const PoolParams& pp)
      : depth(axis(g, g.nd - 3)), height(axis(g, g.nd - 2)), W(g.in[g.nd - 1]), OW(g.out[g.nd - 1]),
        kw(g.kernel[g.nd - 1]), sw(g.strides[g.nd - 1]), dw(g.dilations[g.nd - 1]), pw(g.pad_begin[g.nd - 1]),
        is_max(pp.kind == PoolKind::Max), include_pad(pp.count_include_pad), taps(W, OW, kw, sw, dw, pw),
        wcount(OW, 0) {
    const Axis row{W, OW, kw, sw, dw, pw, g.pad_end[g.nd - 1]};
    for (int64_t ow = 0; ow < OW; ++ow) wcount[ow] = row.count(ow, include_pad);
  }
  int64_t rows() const { return depth.out * height.out; }  // output rows per plane
};

// Output rows [r0, r1) (row r: plane r / rows(), then depth, then height);
// acc holds OW values.
template <class T, class Acc>
__attribute__((always_inline)) inline void pool_rows(const RowPool& p, const T* x, T* y, int64_t r0, int64_t r1,
                                                     Acc* __restrict acc) {
  const Acc init = p.is_max ? static_cast<Acc>(lowest_value<T>()) : Acc(0);
  const RowPool::Axis &D = p.depth, &H = p.height;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r / p.rows(), od = r % p.rows() / H.out, oh = r % H.out;
    for (int64_t ow = 0; ow < p.OW; ++ow) acc[ow] = init;
    for (int64_t a = 0; a < D.k; ++a) {
      const int64_t depth = od * D.stride - D.pad + a * D.dil;
      if (depth < 0 || depth >= D.in) continue;
      for (int64_t i = 0; i < H.k; ++i) {
        const int64_t row = oh * H.stride - H.pad + i * H.dil;
        if (row < 0 || row >= H.in) continue;
        const T* x_row = x + ((c * D.in + depth) * H.in + row) * p.W;
        for (int64_t j = 0; j < p.kw; ++j) {
          const int64_t lo = p.taps.lo[j], n = p.taps.hi[j] - lo, st = p.sw;
          const T* __restrict s = x_row + lo * st + j * p.dw - p.pw;
          Acc* __restrict acc_j = acc + lo;
          if (p.is_max && st == 1) {
            for (int64_t k = 0; k < n; ++k) acc_j[k] = acc_j[k] < static_cast<Acc>(s[k]) ? static_cast<Acc>(s[k]) : acc_j[k];
          } else if (p.is_max) {
            for (int64_t k = 0; k < n; ++k)
              acc_j[k] = acc_j[k] < static_cast<Acc>(s[k * st]) ? static_cast<Acc>(s[k * st]) : acc_j[k];
          } else if (st == 1) {
            for (int64_t k = 0; k < n; ++k) acc_j[k] += static_cast<Acc>(s[k]);
          } else {
            for (int64_t k = 0; k < n; ++k) acc_j[k] += static_cast<Acc>(s[k * st]);
          }
        }
      }
    }
    T* out = y + r * p.OW;
    if (p.is_max) {
      for (int64_t ow = 0; ow < p.OW; ++ow) out[ow] = static_cast<T>(acc[ow]);
    } else {
      const int64_t outer = D.count(od, p.include_pad) * H.count(oh, p.include_pad);
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const int64_t div = outer * p.wcount[ow];
        out[ow] = static_cast<T>(div > 0 ? acc[ow] / static_cast<Acc>(div) : Acc(0));
      }
    }
  }
}

// The float instance, compiled for AVX-512, AVX2 and baseline x86-64 (picked
// at load time) so the row loops vectorize.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))
#endif
void pool_rows_f32(const RowPool& p, const float* x, float* y, int64_t r0, int64_t r1, float* acc) {
  pool_rows<float, float>(p, x, y, r0, r1, acc);
}

template <class T>
void pool_by_rows(const T* x, T* y, int64_t NC, const SpatialGeometry& g, const PoolParams& pp, ThreadPool* pool) {
  using Acc = AccOf<T>;
  const RowPool p(g, pp);
  ThreadPool* tp = NC * g.out_size() * g.kernel_size() > 65536 ? pool : nullptr;
  parallel_for(tp, NC * p.rows(), [&](int64_t r0, int64_t r1) {
    std::vector<Acc> acc(static_cast<size_t>(p.OW));
    if constexpr (std::is_same_v<T, float>) pool_rows_f32(p, x, y, r0, r1, acc.data());
    else pool_rows<T, Acc>(p, x, y, r0, r1, acc.data());
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
    pool_by_rows(x, y, NC, g, pp, pool);
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
      dispatch_numeric(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        pool_nd<T>(X.data<T>(), Y.data<T>(), idx, X.dim(0) * X.dim(1), g, pp, ctx.thread_pool());
      });
    });
  };
}

// ---- Global pools ----

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
        using Acc = AccOf<T>;
        parallel_for(X.numel() > 65536 ? ctx.thread_pool() : nullptr, NC, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) {
            const T* xc = X.data<T>() + c * inner;
            T& out = Y.data<T>()[c];
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
