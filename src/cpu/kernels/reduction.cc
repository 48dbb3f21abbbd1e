// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare,
// ArgMax/ArgMin and TopK.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <type_traits>

#include "cpu/cpu_provider.h"
#include "cpu/row_reduce.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

template <class T>
constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <class T>
constexpr bool is_floatlike_v = is_half_v<T> || std::is_floating_point_v<T>;

// Comparable/arithmetic view of an element: float for the 16-bit floats.
template <class T>
using Cmp = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
inline Cmp<T> val(T v) {
  return static_cast<Cmp<T>>(v);
}

template <class T, class A>
inline T cast_to(A a) {
  if constexpr (is_half_v<T>) {
    return T(static_cast<float>(a));
  } else if constexpr (std::is_same_v<T, bool>) {
    return a != A(0);
  } else {
    return static_cast<T>(a);
  }
}

// Offsets (in elements) of every index over `dims` of a tensor with `strides`,
// in row-major order of those dims.
std::vector<int64_t> enumerate_offsets(const Shape& shape, const std::vector<int64_t>& strides,
                                       const std::vector<int>& dims) {
  int64_t n = 1;
  for (int d : dims) n *= shape[d];
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(n));
  if (n == 0) return out;
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(off);
    for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
      int d = dims[k];
      ++idx[k];
      off += strides[d];
      if (idx[k] < shape[d]) break;
      off -= strides[d] * shape[d];
      idx[k] = 0;
    }
  }
  return out;
}

struct ReducePlan {
  Shape out_shape;
  int64_t outputs = 0;
  std::vector<int64_t> base;  // per output element: offset of its first input element (run == 0)
  std::vector<int64_t> roff;  // offsets of the reduced elements relative to base (run == 0)
  int64_t run = 0;            // > 0: output o reduces [o * run, (o + 1) * run); no tables
  // middle > 0: the input is [outer, middle, inner] (inner > 1) reduced along
  // `middle`; no tables (set only where make_plan is told the kernel has rows for it)
  int64_t outer = 0, middle = 0, inner = 0;

  int64_t first(int64_t o) const { return run > 0 ? o * run : base[o]; }
};

// The reduced dims (size-1 dims aside) as one block with kept dims after it:
// [outer, middle, inner] with inner > 1, or nullopt.
std::optional<std::array<int64_t, 3>> middle_block(const Shape& in, const std::vector<bool>& reduced) {
  std::array<int64_t, 3> block = {1, 1, 1};
  int part = 0;  // 0: kept dims before the block, 1: in it, 2: kept dims after it
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    if (reduced[d] && part == 2) return std::nullopt;
    if (reduced[d]) part = 1;
    else if (part == 1) part = 2;
    block[static_cast<size_t>(part)] *= in[d];
  }
  if (part != 2) return std::nullopt;
  return block;
}

ReducePlan make_plan(const Shape& in, const std::vector<int64_t>& axes, bool keepdims, bool rows_for_middle) {
  int rank = static_cast<int>(in.size());
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    int64_t ax = normalize_axis(a, rank == 0 ? 1 : rank);
    if (rank == 0) continue;
    reduced[ax] = true;
  }
  ReducePlan p;
  std::vector<int> kept_dims, red_dims;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) {
      red_dims.push_back(d);
      if (keepdims) p.out_shape.push_back(1);
    } else {
      kept_dims.push_back(d);
      p.out_shape.push_back(in[d]);
    }
  }
  auto strides = contiguous_strides(in);
  p.outputs = shape_numel(p.out_shape);
  // Reduced dims trailing the kept ones (size-1 dims aside): one run per
  // output, with no offset tables to build on every call.
  bool trailing = !red_dims.empty();
  int64_t run = 1;
  for (int d = rank - 1, seen_kept = 0; d >= 0; --d) {
    if (in[d] == 1) continue;
    if (reduced[d]) trailing &= !seen_kept, run *= in[d];
    else seen_kept = 1;
  }
  const auto block = rows_for_middle ? middle_block(in, reduced) : std::nullopt;
  if (trailing && run > 0) {
    p.run = run;
  } else if (block && (*block)[1] > 0 && p.outputs > 0) {
    p.outer = (*block)[0], p.middle = (*block)[1], p.inner = (*block)[2];
  } else {
    p.base = enumerate_offsets(in, strides, kept_dims);
    p.roff = enumerate_offsets(in, strides, red_dims);
  }
  return p;
}

enum class RK { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <class T>
using Acc = std::conditional_t<is_floatlike_v<T>, double,
                               std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// Kinds with a whole-row form, float only.
bool has_middle_rows(RK kind, DataType dtype) {
  return dtype == DataType::Float &&
         (kind == RK::Sum || kind == RK::Mean || kind == RK::Max || kind == RK::Min || kind == RK::SumSquare ||
          kind == RK::L2);
}

// [outer, middle, inner] along `middle`: whole rows of up to kCols columns
// accumulated lane-wise (sums in double, the reductions' precision), so an
// NCHW tensor reduced over channels reads each row once, vectorized (the
// per-output strided walk ran 1.7x slower than onnxruntime).
void reduce_middle(RK kind, const float* in, float* out, const ReducePlan& p, ThreadPool* pool) {
  constexpr int64_t kCols = 512;
  const int64_t chunks = (p.inner + kCols - 1) / kCols;
  auto body = [&](int64_t t0, int64_t t1) {
    std::vector<double> acc(static_cast<size_t>(kCols));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, c0 = (t % chunks) * kCols, w = std::min(kCols, p.inner - c0);
      const float* src = in + o * p.middle * p.inner + c0;
      float* dst = out + o * p.inner + c0;
      if (kind == RK::Max || kind == RK::Min) {
        std::copy(src, src + w, dst);
        for (int64_t r = 1; r < p.middle; ++r) (kind == RK::Max ? rr::max_into : rr::min_into)(src + r * p.inner, dst, w);
        continue;
      }
      std::fill(acc.begin(), acc.begin() + w, 0.0);
      const bool squares = kind == RK::SumSquare || kind == RK::L2;
      for (int64_t r = 0; r < p.middle; ++r) (squares ? rr::add_squares_into : rr::add_into)(src + r * p.inner, acc.data(), w);
      for (int64_t j = 0; j < w; ++j) {
        const double a = acc[static_cast<size_t>(j)];
        dst[j] = static_cast<float>(kind == RK::Mean ? a / static_cast<double>(p.middle) : kind == RK::L2 ? std::sqrt(a) : a);
      }
    }
  };
  if (p.outer * p.middle * p.inner > (1 << 16)) parallel_for(pool, p.outer * chunks, body);
  else body(0, p.outer * chunks);
}

template <class T>
void reduce_typed(RK kind, const Tensor& x, Tensor& y, const ReducePlan& p, ThreadPool* pool) {
  const T* in = x.data<T>();
  T* out = y.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (p.middle > 0) return reduce_middle(kind, in, out, p, pool);
  }
  const int64_t nout = p.outputs;
  // float runs: the vectorized row reductions; anything else reads offsets
  const bool run = std::is_same_v<T, float> && p.run > 0 &&
                   (kind == RK::Sum || kind == RK::Mean || kind == RK::Max || kind == RK::Min);
  std::vector<int64_t> run_offsets;
  if (p.run > 0 && !run) {
    run_offsets.resize(static_cast<size_t>(p.run));
    std::iota(run_offsets.begin(), run_offsets.end(), int64_t{0});
  }
  const int64_t nr = p.run > 0 ? p.run : static_cast<int64_t>(p.roff.size());
  const int64_t* roff = p.run > 0 ? run_offsets.data() : p.roff.data();
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const T* s = in + p.first(o);
      if constexpr (std::is_same_v<T, float>) {
        if (run) {
          if (kind == RK::Max) out[o] = rr::max(s, nr);
          else if (kind == RK::Min) out[o] = rr::min(s, nr);
          else out[o] = static_cast<float>(rr::sum(s, nr) / (kind == RK::Mean ? static_cast<double>(nr) : 1.0));
          continue;
        }
      }
      switch (kind) {
        case RK::Max:
        case RK::Min: {
          using C = Cmp<T>;
          C m;
          if constexpr (std::is_floating_point_v<C>) {
            m = kind == RK::Max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
          } else {
            m = kind == RK::Max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
          }
          if (kind == RK::Max) {
            for (int64_t r = 0; r < nr; ++r) {
              C v = val(s[roff[r]]);
              if (v > m || v != v) m = v;
              if (m != m) break;
            }
          } else {
            for (int64_t r = 0; r < nr; ++r) {
              C v = val(s[roff[r]]);
              if (v < m || v != v) m = v;
              if (m != m) break;
            }
          }
          out[o] = cast_to<T>(m);
          break;
        }
        case RK::Sum:
        case RK::Mean: {
          Acc<T> a = 0;
          for (int64_t r = 0; r < nr; ++r) a += static_cast<Acc<T>>(val(s[roff[r]]));
          if (kind == RK::Mean) {
            if constexpr (is_floatlike_v<T>) {
              a = a / static_cast<double>(nr);
            } else {
              a = nr == 0 ? Acc<T>(0) : static_cast<Acc<T>>(a / static_cast<Acc<T>>(nr));
            }
          }
          out[o] = cast_to<T>(a);
          break;
        }
        case RK::Prod: {
          Acc<T> a = 1;
          for (int64_t r = 0; r < nr; ++r) a *= static_cast<Acc<T>>(val(s[roff[r]]));
          out[o] = cast_to<T>(a);
          break;
        }
        case RK::L1: {
          Acc<T> a = 0;
          for (int64_t r = 0; r < nr; ++r) {
            Acc<T> v = static_cast<Acc<T>>(val(s[roff[r]]));
            if constexpr (std::is_signed_v<Acc<T>> || std::is_floating_point_v<Acc<T>>) {
              a += v < 0 ? -v : v;
            } else {
              a += v;
            }
          }
          out[o] = cast_to<T>(a);
          break;
        }
        case RK::SumSquare:
        case RK::L2: {
          Acc<T> a = 0;
          for (int64_t r = 0; r < nr; ++r) {
            Acc<T> v = static_cast<Acc<T>>(val(s[roff[r]]));
            a += v * v;
          }
          if (kind == RK::L2) {
            out[o] = cast_to<T>(std::sqrt(static_cast<double>(a)));
          } else {
            out[o] = cast_to<T>(a);
          }
          break;
        }
        case RK::LogSum: {
          double a = 0;
          for (int64_t r = 0; r < nr; ++r) a += static_cast<double>(val(s[roff[r]]));
          out[o] = cast_to<T>(std::log(a));
          break;
        }
        case RK::LogSumExp: {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t r = 0; r < nr; ++r) m = std::max(m, static_cast<double>(val(s[roff[r]])));
          if (nr == 0 || std::isinf(m)) {
            // empty: log(0) = -inf; all -inf: -inf; a +inf element: +inf
            out[o] = cast_to<T>(m);
            break;
          }
          double a = 0;
          for (int64_t r = 0; r < nr; ++r) a += std::exp(static_cast<double>(val(s[roff[r]])) - m);
          out[o] = cast_to<T>(m + std::log(a));
          break;
        }
      }
    }
  };
  if (nout * std::max<int64_t>(nr, 1) > (1 << 16) && nout > 1) {
    parallel_for(pool, nout, body);
  } else {
    body(0, nout);
  }
}

KernelFactory reduce_factory(RK kind, const std::string& op) {
  return [kind, op](const KernelInitContext& init) -> std::unique_ptr<Kernel> {
    bool keepdims = init.get_int("keepdims", 1) != 0;
    bool noop_empty = init.get_int("noop_with_empty_axes", 0) != 0;
    bool axes_from_input = init.opset() >= 18 || (op == "ReduceSum" && init.opset() >= 13);
    std::vector<int64_t> attr_axes = init.get_ints("axes", {});
    return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      std::vector<int64_t> axes = attr_axes;
      bool empty_axes = axes.empty();
      if (axes_from_input) {
        axes.clear();
        if (ctx.has_input(1)) {
          const Tensor& a = ctx.input(1);
          ONYX_KERNEL_CHECK(a.dtype() == DataType::Int64 || a.dtype() == DataType::Int32,
                            op + ": axes must be an int64 tensor");
          ONYX_KERNEL_CHECK(a.rank() <= 1, op + ": axes must be 1-D, got shape " + shape_to_string(a.shape()));
          axes = a.to_int64_vector();
        }
        empty_axes = axes.empty();
        if (empty_axes && noop_empty) {
          // reduce over no axis: each element on its own (L1 -> |x|, SumSquare -> x*x, ...)
          ReducePlan p;
          p.out_shape = x.shape();
          p.outputs = x.numel();
          p.run = 1;
          Tensor& y = ctx.allocate_output(0, x.dtype(), p.out_shape);
          if (x.dtype() == DataType::Bool) {
            for (int64_t i = 0; i < x.numel(); ++i) y.data<bool>()[i] = x.data<bool>()[i];
            return;
          }
          dispatch_numeric(x.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            reduce_typed<T>(kind, x, y, p, ctx.thread_pool());
          });
          return;
        }
      }
      for (int64_t a : axes) {
        int64_t r = x.rank();
        ONYX_KERNEL_CHECK(a >= -std::max<int64_t>(r, 1) && a < std::max<int64_t>(r, 1),
                          op + ": axis " + std::to_string(a) + " is out of range for input of shape " +
                              shape_to_string(x.shape()));
      }
      ReducePlan p = make_plan(x.shape(), axes, keepdims, has_middle_rows(kind, x.dtype()));
      Tensor& y = ctx.allocate_output(0, x.dtype(), p.out_shape);
      if (kind == RK::Max || kind == RK::Min) {
        if (x.dtype() == DataType::Bool) {
          const bool* in = x.data<bool>();
          bool* out = y.data<bool>();
          const int64_t nr = p.run > 0 ? p.run : static_cast<int64_t>(p.roff.size());
          for (int64_t o = 0; o < p.outputs; ++o) {
            bool m = kind == RK::Min;
            for (int64_t k = 0; k < nr; ++k) {
              bool v = in[p.first(o) + (p.run > 0 ? k : p.roff[k])];
              m = kind == RK::Max ? (m || v) : (m && v);
            }
            out[o] = m;
          }
          return;
        }
      }
      dispatch_numeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_typed<T>(kind, x, y, p, ctx.thread_pool());
      });
    });
  };
}

// ---------------------------------------------------------------- ArgMax/ArgMin

KernelFactory arg_factory(bool is_max) {
  return [is_max](const KernelInitContext& init) -> std::unique_ptr<Kernel> {
    int64_t axis_attr = init.get_int("axis", 0);
    bool keepdims = init.get_int("keepdims", 1) != 0;
    bool last = init.get_int("select_last_index", 0) != 0;
    return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      ONYX_KERNEL_CHECK(x.rank() >= 1, std::string(is_max ? "ArgMax" : "ArgMin") + ": input must have rank >= 1");
      int64_t axis = normalize_axis(axis_attr, x.rank());
      const Shape& s = x.shape();
      int64_t outer = 1, inner = 1, n = s[axis];
      for (int64_t d = 0; d < axis; ++d) outer *= s[d];
      for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= s[d];
      ONYX_KERNEL_CHECK(n > 0, std::string(is_max ? "ArgMax" : "ArgMin") + ": the reduced axis is empty in shape " +
                                   shape_to_string(s));
      Shape os = s;
      if (keepdims) {
        os[axis] = 1;
      } else {
        os.erase(os.begin() + axis);
      }
      Tensor& y = ctx.allocate_output(0, DataType::Int64, os);
      int64_t* out = y.data<int64_t>();
      dispatch_numeric_bool(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* in = x.data<T>();
        // Contiguous float rows (an LM head's logits): one vectorized pass per row; rows
        // holding a NaN (-1 from it) take the loop below.
        const bool rows = std::is_same_v<T, float> && inner == 1;
        if constexpr (std::is_same_v<T, float>) {
          if (rows)
            parallel_for(outer * n > (1 << 16) ? ctx.thread_pool() : nullptr, outer, [&](int64_t o0, int64_t o1) {
              for (int64_t o = o0; o < o1; ++o) out[o] = rr::arg_extreme(in + o * n, n, is_max, last);
            });
        }
        for (int64_t o = 0; o < outer; ++o) {
          if (rows && out[o] >= 0) continue;
          for (int64_t i = 0; i < inner; ++i) {
            const T* p = in + o * n * inner + i;
            auto best = val(p[0]);
            int64_t bi = 0;
            for (int64_t k = 1; k < n; ++k) {
              auto v = val(p[k * inner]);
              bool take;
              if (best != best) {
                take = false;  // first NaN wins (numpy)
                if (last && v != v) take = true;
              } else if (v != v) {
                take = true;
              } else if (is_max) {
                take = last ? v >= best : v > best;
              } else {
                take = last ? v <= best : v < best;
              }
              if (take) {
                best = v;
                bi = k;
              }
            }
            out[o * inner + i] = bi;
          }
        }
      });
    });
  };
}

// ---------------------------------------------------------------- TopK

KernelFactory topk_factory() {
  return [](const KernelInitContext& init) -> std::unique_ptr<Kernel> {
    int64_t axis_attr = init.get_int("axis", -1);
    bool largest = init.get_int("largest", 1) != 0;
    bool k_from_input = init.opset() >= 10;
    int64_t k_attr = k_from_input ? 0 : init.get_int("k");
    return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      int64_t k = k_attr;
      if (k_from_input) {
        const Tensor& kt = ctx.input(1);
        ONYX_KERNEL_CHECK(kt.numel() == 1, "TopK: K must hold exactly one value, got shape " +
                                               shape_to_string(kt.shape()));
        k = kt.int_at(0);
      }
      ONYX_KERNEL_CHECK(x.rank() >= 1, "TopK: input must have rank >= 1");
      int64_t axis = normalize_axis(axis_attr, x.rank());
      const Shape& s = x.shape();
      int64_t n = s[axis];
      ONYX_KERNEL_CHECK(k >= 0 && k <= n, "TopK: k=" + std::to_string(k) + " is out of range for axis of size " +
                                              std::to_string(n) + " (shape " + shape_to_string(s) + ")");
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= s[d];
      for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= s[d];
      Shape os = s;
      os[axis] = k;
      Tensor& vals = ctx.allocate_output(0, x.dtype(), os);
      Tensor* idxs_ptr = nullptr;
      Tensor idx_tmp;
      if (ctx.num_outputs() > 1 && ctx.wants_output(1)) {
        idxs_ptr = &ctx.allocate_output(1, DataType::Int64, os);
      } else {
        idx_tmp = Tensor(DataType::Int64, os);
        idxs_ptr = &idx_tmp;
      }
      int64_t* oi = idxs_ptr->data<int64_t>();
      dispatch_numeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = Cmp<T>;
        const T* in = x.data<T>();
        T* ov = vals.data<T>();
        std::vector<std::pair<C, int64_t>> buf(static_cast<size_t>(n));
        // NaN is treated as larger than everything (as numpy sorts it last).
        auto greater = [](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
          bool an = a.first != a.first, bn = b.first != b.first;
          if (an || bn) {
            if (an && bn) return a.second < b.second;
            return an;
          }
          if (a.first != b.first) return a.first > b.first;
          return a.second < b.second;
        };
        auto less = [](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
          bool an = a.first != a.first, bn = b.first != b.first;
          if (an || bn) {
            if (an && bn) return a.second < b.second;
            return bn;
          }
          if (a.first != b.first) return a.first < b.first;
          return a.second < b.second;
        };
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t i = 0; i < inner; ++i) {
            const T* p = in + o * n * inner + i;
            for (int64_t j = 0; j < n; ++j) buf[j] = {val(p[j * inner]), j};
            if (largest) {
              std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), greater);
            } else {
              std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), less);
            }
            for (int64_t j = 0; j < k; ++j) {
              int64_t off = o * k * inner + j * inner + i;
              ov[off] = p[buf[j].second * inner];
              oi[off] = buf[j].second;
            }
          }
        }
      });
    });
  };
}

}  // namespace

void register_reduction(KernelRegistry& r) {
  const std::pair<const char*, RK> ops[] = {
      {"ReduceSum", RK::Sum},       {"ReduceMean", RK::Mean},           {"ReduceMax", RK::Max},
      {"ReduceMin", RK::Min},       {"ReduceProd", RK::Prod},           {"ReduceL1", RK::L1},
      {"ReduceL2", RK::L2},         {"ReduceLogSum", RK::LogSum},       {"ReduceLogSumExp", RK::LogSumExp},
      {"ReduceSumSquare", RK::SumSquare},
  };
  for (const auto& [name, kind] : ops) r.add(name, 1, kMaxOpset, reduce_factory(kind, name));
  r.add("ArgMax", 1, kMaxOpset, arg_factory(true));
  r.add("ArgMin", 1, kMaxOpset, arg_factory(false));
  r.add("TopK", 1, kMaxOpset, topk_factory());
}

}  // namespace onyx
