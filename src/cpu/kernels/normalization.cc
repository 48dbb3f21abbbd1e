// BatchNormalization, InstanceNormalization, LayerNormalization, LRN,
// GroupNormalization, MeanVarianceNormalization, ImageScaler.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/elementwise_loops.h"
#include "cpu/gemm_vmath.h"
#include "cpu/row_reduce.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

template <class Acc>
std::vector<Acc> read_values(const Tensor& t) {
  std::vector<Acc> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<Acc>(t.float_at(i));
  return v;
}

template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The `axis` attribute, valid in [-rank, max(rank, 1)), as an index from 0;
// an error naming it otherwise.
int64_t normalized_axis(int64_t axis_attr, int64_t rank) {
  if (axis_attr < -rank || axis_attr >= std::max<int64_t>(rank, 1))
    kernel_fail("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(rank));
  return axis_attr < 0 ? axis_attr + rank : axis_attr;
}

// ---- BatchNormalization ----

// y = x * a + b over n contiguous floats: one channel's plane (or part of
// one) with its folded scale and shift (this file builds at -O3, so it
// vectorizes).
void scale_shift_plane(const float* __restrict x, float* __restrict y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

// y[c] = x[c] * a[c] + b[c] over one row of C channels (inner size 1: rank-2
// input, or the legacy spatial=0 form).
void scale_shift_row(const float* __restrict x, float* __restrict y, int64_t n, const float* __restrict a,
                     const float* __restrict b) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a[i] + b[i];
}

// Inference-mode float BatchNormalization over [N, C, inner]: fold the
// statistics once per channel (a = scale / sqrt(var + eps), b = bias - mean * a,
// the same arithmetic as the generic path), then stream y = x * a + b.
// The work is split into fixed blocks of elements rather than planes, so a
// few large planes (N = 1, small C) still spread over the pool and many tiny
// planes do not cost one task each.
void batchnorm_infer_float(ThreadPool* pool, const float* x, float* y, int64_t N, int64_t C, int64_t inner,
                           const std::vector<float>& sc, const std::vector<float>& bias, const std::vector<float>& mean,
                           const std::vector<float>& var, float epsilon) {
  std::vector<float> a(C), o(C);
  for (int64_t c = 0; c < C; ++c) {
    a[c] = sc[c] / std::sqrt(var[c] + epsilon);
    o[c] = bias[c] - mean[c] * a[c];
  }
  int64_t total = N * C * inner;
  if (total == 0) return;
  if (inner == 1) {
    parallel_for(total > 32768 ? pool : nullptr, N, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) scale_shift_row(x + n * C, y + n * C, C, a.data(), o.data());
    });
    return;
  }
  constexpr int64_t kBlock = 16384;  // elements per task: large enough to amortize the dispatch
  parallel_for(total > 32768 ? pool : nullptr, (total + kBlock - 1) / kBlock, [&](int64_t b0, int64_t b1) {
    int64_t i = b0 * kBlock, end = std::min(total, b1 * kBlock);
    while (i < end) {
      int64_t plane = i / inner;
      int64_t stop = std::min(end, (plane + 1) * inner);  // the block may start or end mid-plane
      int64_t c = plane % C;
      scale_shift_plane(x + i, y + i, stop - i, a[c], o[c]);
      i = stop;
    }
  });
}

std::unique_ptr<Kernel> make_batchnorm(const KernelInitContext& ic) {
  float epsilon = ic.get_float("epsilon", 1e-5f);
  float momentum = ic.get_float("momentum", 0.9f);
  bool training = ic.opset() >= 14 && ic.get_int("training_mode", 0) != 0;
  int64_t opset = ic.opset();
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const Tensor& bias = ctx.input(2);
    const Tensor& mean = ctx.input(3);
    const Tensor& var = ctx.input(4);
    if (X.rank() < 2) kernel_fail("BatchNormalization input must have rank >= 2, got " + shape_to_string(X.shape()));
    int64_t N = X.dim(0), C = X.dim(1), inner = 1;
    for (int d = 2; d < X.rank(); ++d) inner *= X.dim(d);
    // per-channel (spatial) or, for the old spatial=0 form, per element of [C, D1, ...]
    if (scale.numel() != C && scale.numel() == C * inner && !training) {
      C = C * inner;
      inner = 1;
    }
    for (const Tensor* t : {&scale, &bias, &mean, &var})
      if (t->numel() != C)
        kernel_fail("BatchNormalization parameter of shape " + shape_to_string(t->shape()) + " does not match " +
                    std::to_string(C) + " channels of X " + shape_to_string(X.shape()));
    Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = AccOf<T>;
      auto sc = read_values<Acc>(scale), b = read_values<Acc>(bias), m = read_values<Acc>(mean),
           v = read_values<Acc>(var);
      const T* x = X.data<T>();
      T* y = Y.data<T>();
      std::vector<Acc> bm(C, 0), bv(C, 0);
      bool done = false;  // Y already written by the fast path
      if constexpr (std::is_same_v<T, float>) {
        if (!training) {
          batchnorm_infer_float(ctx.thread_pool(), x, y, N, C, inner, sc, b, m, v, epsilon);
          done = true;
        }
      }
      if (training) {
        Acc count = static_cast<Acc>(N * inner);
        for (int64_t c = 0; c < C; ++c) {
          double s = 0, s2 = 0;
          for (int64_t n = 0; n < N; ++n) {
            const T* xp = x + (n * C + c) * inner;
            for (int64_t i = 0; i < inner; ++i) s += static_cast<double>(xp[i]);
          }
          double mu = count > 0 ? s / count : 0;
          for (int64_t n = 0; n < N; ++n) {
            const T* xp = x + (n * C + c) * inner;
            for (int64_t i = 0; i < inner; ++i) {
              double d = static_cast<double>(xp[i]) - mu;
              s2 += d * d;
            }
          }
          bm[c] = static_cast<Acc>(mu);
          bv[c] = static_cast<Acc>(count > 0 ? s2 / count : 0);
        }
      }
      const std::vector<Acc>& um = training ? bm : m;
      const std::vector<Acc>& uv = training ? bv : v;
      for (int64_t c = 0; c < C && !done; ++c) {
        Acc a = sc[c] / std::sqrt(uv[c] + static_cast<Acc>(epsilon));
        Acc o = b[c] - um[c] * a;
        for (int64_t n = 0; n < N; ++n) {
          const T* xp = x + (n * C + c) * inner;
          T* yp = y + (n * C + c) * inner;
          for (int64_t i = 0; i < inner; ++i) yp[i] = T(static_cast<Acc>(xp[i]) * a + o);
        }
      }
      // optional outputs
      auto emit = [&](size_t idx, const Tensor& like, const std::vector<Acc>& vals) {
        if (!ctx.wants_output(idx)) return;
        Tensor& t = ctx.allocate_output(idx, like.dtype(), like.shape());
        dispatch_float(like.dtype(), [&](auto tg) {
          using U = typename decltype(tg)::type;
          for (int64_t i = 0; i < t.numel(); ++i) t.data<U>()[i] = U(static_cast<float>(vals[i]));
          if constexpr (std::is_same_v<U, double>)
            for (int64_t i = 0; i < t.numel(); ++i) t.data<U>()[i] = static_cast<double>(vals[i]);
        });
      };
      if (training) {
        std::vector<Acc> rm(C), rv(C);
        for (int64_t c = 0; c < C; ++c) {
          rm[c] = m[c] * momentum + bm[c] * (1 - momentum);
          rv[c] = v[c] * momentum + bv[c] * (1 - momentum);
        }
        emit(1, mean, rm);
        emit(2, var, rv);
      } else if (opset < 14) {
        // legacy training outputs (mean, var, saved_mean, saved_var): inference leaves the stats unchanged
        emit(1, mean, m);
        emit(2, var, v);
        emit(3, mean, m);
        emit(4, var, v);
      }
    });
  });
}

// ---- InstanceNormalization ----

// The mean of x[0..n) and the sum of squared deviations from it, in double
// (float through the vectorized row reductions: GroupNormalization's scalar
// loops ran 1.5x slower than onnxruntime).
template <class T>
std::pair<double, double> mean_and_squared_deviation(const T* x, int64_t n) {
  if (n == 0) return {0.0, 0.0};
  if constexpr (std::is_same_v<T, float>) {
    const double mu = rr::sum(x, n) / static_cast<double>(n);
    return {mu, rr::sum_squared_deviation(x, n, mu)};
  } else {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]);
    const double mu = s / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(x[i]) - mu;
      s2 += d * d;
    }
    return {mu, s2};
  }
}

void run_instancenorm(KernelContext& ctx, float epsilon) {
  const Tensor& X = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  if (X.rank() < 3) kernel_fail("InstanceNormalization input must have rank >= 3, got " + shape_to_string(X.shape()));
  int64_t N = X.dim(0), C = X.dim(1), inner = 1;
  for (int d = 2; d < X.rank(); ++d) inner *= X.dim(d);
  if (scale.numel() != C || bias.numel() != C)
    kernel_fail("InstanceNormalization scale/B must have " + std::to_string(C) + " elements");
  Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
  dispatch_float(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = AccOf<T>;
    auto sc = read_values<Acc>(scale), b = read_values<Acc>(bias);
    parallel_for(X.numel() > 65536 ? ctx.thread_pool() : nullptr, N * C, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t c = r % C;
        const T* xp = X.data<T>() + r * inner;
        T* yp = Y.data<T>() + r * inner;
        const auto [mu, s2] = mean_and_squared_deviation(xp, inner);
        double var = inner ? s2 / inner : 0;
        Acc a = static_cast<Acc>(sc[c] / std::sqrt(var + epsilon));
        Acc o = static_cast<Acc>(b[c] - mu * a);
        for (int64_t i = 0; i < inner; ++i) yp[i] = T(static_cast<Acc>(xp[i]) * a + o);
      }
    });
  });
}

// ---- LayerNormalization ----

std::unique_ptr<Kernel> make_layernorm(const KernelInitContext& ic) {
  int64_t axis_attr = ic.get_int("axis", -1);
  float epsilon = ic.get_float("epsilon", 1e-5f);
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    int64_t rank = X.rank();
    int64_t axis = normalized_axis(axis_attr, rank);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= X.dim(d);
    for (int64_t d = axis; d < rank; ++d) inner *= X.dim(d);
    Shape norm_shape(X.shape().begin() + axis, X.shape().end());
    // Scale and B broadcast to the normalized shape (one row for all), or, as
    // the function body's Mul / Add allow and onnxruntime does, to all of X.
    auto per_row = [&](const Tensor& p, const char* name) {
      if (broadcasts_to(p.shape(), norm_shape)) return false;
      if (broadcasts_to(p.shape(), X.shape())) return true;
      kernel_fail(std::string(name) + " shape " + shape_to_string(p.shape()) + " broadcasts neither to the normalized shape " +
                  shape_to_string(norm_shape) + " nor to X's " + shape_to_string(X.shape()));
    };
    const bool scale_per_row = per_row(scale, "Scale");
    const bool bias_per_row = bias && per_row(*bias, "B");
    Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
    Shape stat_shape(X.shape().begin(), X.shape().begin() + axis);
    for (int64_t d = axis; d < rank; ++d) stat_shape.push_back(1);
    Tensor* mean_out = ctx.wants_output(1) ? &ctx.allocate_output(1, DataType::Float, stat_shape) : nullptr;
    Tensor* inv_out = ctx.wants_output(2) ? &ctx.allocate_output(2, DataType::Float, stat_shape) : nullptr;
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = AccOf<T>;
      ThreadPool* pool = X.numel() > 32768 ? ctx.thread_pool() : nullptr;
      // Scale / B as full rows: a float with a value per normalized element
      // (the usual case) is read in place, other shapes and types are
      // expanded through their broadcast offsets.
      std::vector<Acc> sc, b;
      auto full_rows = [&](const Tensor* p, bool each_row, std::vector<Acc>& expanded) -> const Acc* {
        if (!p) return nullptr;
        if constexpr (std::is_same_v<Acc, float>)
          if (!each_row && p->dtype() == DataType::Float && p->numel() == inner) return p->data<float>();
        const std::vector<int64_t> off = broadcast_offsets(p->shape(), each_row ? X.shape() : norm_shape);
        auto values = read_values<Acc>(*p);
        expanded.resize(off.size());
        for (size_t i = 0; i < off.size(); ++i) expanded[i] = values[off[i]];
        return expanded.data();
      };
      const Acc* scale_rows = full_rows(&scale, scale_per_row, sc);
      const Acc* bias_rows = full_rows(bias, bias_per_row, b);
      const int64_t scale_step = scale_per_row ? inner : 0, bias_step = bias_per_row ? inner : 0;
      if constexpr (std::is_same_v<T, float>) {
        // Float rows without the Mean / InvStdDev outputs: the vectorized row
        // kernel SkipLayerNormalization uses (16-lane float sums, two passes, so
        // within ~1e-6 relative of a double reference).
        if (!mean_out && !inv_out && inner > 0) {
          const float* xp = X.data<float>();
          float* yp = Y.data<float>();
          parallel_for(pool, outer, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r)
              vm::layer_norm(xp + r * inner, nullptr, yp + r * inner, inner, scale_rows + r * scale_step,
                             bias_rows ? bias_rows + r * bias_step : nullptr, epsilon);
          });
          return;
        }
      }
      parallel_for(pool, outer, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T* xp = X.data<T>() + r * inner;
          T* yp = Y.data<T>() + r * inner;
          const Acc* sp = scale_rows + r * scale_step;
          const Acc* bp = bias_rows ? bias_rows + r * bias_step : nullptr;
          Acc s = 0;
          for (int64_t i = 0; i < inner; ++i) s += static_cast<Acc>(xp[i]);
          Acc mu = inner ? s / static_cast<Acc>(inner) : Acc(0);
          Acc s2 = 0;
          for (int64_t i = 0; i < inner; ++i) {
            Acc d = static_cast<Acc>(xp[i]) - mu;
            s2 += d * d;
          }
          Acc var = inner ? s2 / static_cast<Acc>(inner) : Acc(0);
          Acc inv = Acc(1) / std::sqrt(var + static_cast<Acc>(epsilon));
          for (int64_t i = 0; i < inner; ++i)
            yp[i] = T((static_cast<Acc>(xp[i]) - mu) * inv * sp[i] + (bp ? bp[i] : Acc(0)));
          if (mean_out) mean_out->data<float>()[r] = static_cast<float>(mu);
          if (inv_out) inv_out->data<float>()[r] = static_cast<float>(inv);
        }
      });
    });
  });
}

// ---- RMSNormalization (opset 23) ----
// Y = X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale; stage one
// in float when stash_type is 1 (the default), else in X's own type.

std::unique_ptr<Kernel> make_rmsnorm(const KernelInitContext& ic) {
  int64_t axis_attr = ic.get_int("axis", -1);
  float epsilon = ic.get_float("epsilon", 1e-5f);
  int64_t stash = ic.get_int("stash_type", 1);
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    int64_t rank = X.rank();
    int64_t axis = normalized_axis(axis_attr, rank);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= X.dim(d);
    for (int64_t d = axis; d < rank; ++d) inner *= X.dim(d);
    // Scale broadcasts unidirectionally to X.
    const Shape& ss = scale.shape();
    if (!broadcasts_to(ss, X.shape()))
      kernel_fail("scale shape " + shape_to_string(ss) + " does not broadcast to " + shape_to_string(X.shape()));
    Tensor& Y = ctx.allocate_output(0, scale.dtype(), X.shape());
    // Float X and a float scale over exactly the normalized axes (the usual
    // case): rows in parallel, squares summed in double lanes, no copies.
    bool scale_is_row = scale.numel() == inner && static_cast<int64_t>(ss.size()) <= rank - axis;
    if (X.dtype() == DataType::Float && scale.dtype() == DataType::Float && scale_is_row) {
      const float* xp = X.data<float>();
      const float* sp = scale.data<float>();
      float* yp = Y.data<float>();
      parallel_for(X.numel() > 32768 ? ctx.thread_pool() : nullptr, outer, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) rr::rms_normalize(xp + r * inner, yp + r * inner, inner, sp, epsilon);
      });
      return;
    }
    std::vector<int64_t> soff = broadcast_offsets(ss, X.shape());
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = AccOf<T>;
      auto sv = read_values<Acc>(scale);
      std::vector<Acc> yv(static_cast<size_t>(X.numel()));
      bool low = !std::is_same_v<T, float> && !std::is_same_v<T, double> && stash != 1;
      auto rnd = [&](Acc v) { return low ? static_cast<Acc>(T(v)) : v; };  // stash in T itself
      for (int64_t r = 0; r < outer; ++r) {
        const T* xp = X.data<T>() + r * inner;
        Acc s2 = 0;
        for (int64_t i = 0; i < inner; ++i) {
          Acc v = static_cast<Acc>(xp[i]);
          s2 = rnd(s2 + rnd(v * v));
        }
        Acc rms = rnd(std::sqrt(rnd(rnd(inner ? s2 / static_cast<Acc>(inner) : Acc(0)) + static_cast<Acc>(epsilon))));
        for (int64_t i = 0; i < inner; ++i) {
          Acc normalized = static_cast<Acc>(T(static_cast<Acc>(xp[i]) / rms));  // back to X's type
          yv[r * inner + i] = normalized * sv[soff[r * inner + i]];
        }
      }
      dispatch_float(Y.dtype(), [&](auto ytag) {
        using V = typename decltype(ytag)::type;
        V* yp = Y.data<V>();
        for (int64_t i = 0; i < Y.numel(); ++i) yp[i] = V(yv[i]);
      });
    });
  });
}

// ---- LpNormalization ----
// Y = X / ||X||_p along `axis` (p = 1 or 2); a zero norm gives zeros (opset 22
// says so; earlier opsets left it undefined).

std::unique_ptr<Kernel> make_lpnorm(const KernelInitContext& ic) {
  int64_t axis_attr = ic.get_int("axis", -1);
  int64_t p = ic.get_int("p", 2);
  if (p != 1 && p != 2) kernel_fail("LpNormalization: p must be 1 or 2, got " + std::to_string(p));
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    int64_t rank = X.rank();
    int64_t axis = normalized_axis(axis_attr, rank);
    int64_t outer = 1, n = rank ? X.dim(axis) : 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= X.dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= X.dim(d);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = AccOf<T>;
      const T* xp = X.data<T>();
      T* yp = Y.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t base = o * n * inner + i;
          Acc norm = 0;
          for (int64_t k = 0; k < n; ++k) {
            Acc v = static_cast<Acc>(xp[base + k * inner]);
            norm += p == 1 ? std::abs(v) : v * v;
          }
          if (p == 2) norm = std::sqrt(norm);
          for (int64_t k = 0; k < n; ++k)
            yp[base + k * inner] = norm == Acc(0) ? T(Acc(0)) : T(static_cast<Acc>(xp[base + k * inner]) / norm);
        }
    });
  });
}

// ---- LRN ----

std::unique_ptr<Kernel> make_lrn(const KernelInitContext& ic) {
  float alpha = ic.get_float("alpha", 1e-4f), beta = ic.get_float("beta", 0.75f), bias = ic.get_float("bias", 1.0f);
  int64_t size = ic.get_int("size");
  if (size <= 0) kernel_fail("LRN size must be positive");
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    if (X.rank() < 2) kernel_fail("LRN input must have rank >= 2, got " + shape_to_string(X.shape()));
    int64_t N = X.dim(0), C = X.dim(1), inner = 1;
    for (int d = 2; d < X.rank(); ++d) inner *= X.dim(d);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
    int64_t before = (size - 1) / 2, after = size - 1 - before;  // floor / ceil of (size-1)/2
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = AccOf<T>;
      const T* x = X.data<T>();
      T* y = Y.data<T>();
      std::vector<Acc> sq(static_cast<size_t>(C * inner));
      for (int64_t n = 0; n < N; ++n) {
        const T* xn = x + n * C * inner;
        for (int64_t i = 0; i < C * inner; ++i) {
          Acc v = static_cast<Acc>(xn[i]);
          sq[i] = v * v;
        }
        for (int64_t c = 0; c < C; ++c) {
          int64_t c0 = std::max<int64_t>(0, c - before), c1 = std::min<int64_t>(C - 1, c + after);
          for (int64_t i = 0; i < inner; ++i) {
            Acc s = 0;
            for (int64_t k = c0; k <= c1; ++k) s += sq[k * inner + i];
            Acc v = static_cast<Acc>(xn[c * inner + i]);
            y[(n * C + c) * inner + i] =
                T(v / std::pow(static_cast<Acc>(bias) + static_cast<Acc>(alpha) / size * s, static_cast<Acc>(beta)));
          }
        }
      }
    });
  });
}

// ---- GroupNormalization ----

std::unique_ptr<Kernel> make_groupnorm(const KernelInitContext& ic) {
  float epsilon = ic.get_float("epsilon", 1e-5f);
  int64_t G = ic.get_int("num_groups");
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    const Tensor& bias = ctx.input(2);
    if (X.rank() < 2) kernel_fail("GroupNormalization input must have rank >= 2, got " + shape_to_string(X.shape()));
    int64_t N = X.dim(0), C = X.dim(1), inner = 1;
    for (int d = 2; d < X.rank(); ++d) inner *= X.dim(d);
    if (G <= 0 || C % G != 0)
      kernel_fail("GroupNormalization: " + std::to_string(C) + " channels are not divisible into " + std::to_string(G) +
                  " groups");
    int64_t cpg = C / G;
    for (const Tensor* t : {&scale, &bias})
      if (t->numel() != C && t->numel() != G)
        kernel_fail("GroupNormalization scale/bias must have " + std::to_string(C) + " (or " + std::to_string(G) +
                    ") elements, got " + shape_to_string(t->shape()));
    Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = AccOf<T>;
      auto sc = read_values<Acc>(scale), b = read_values<Acc>(bias);
      bool sc_per_group = scale.numel() != C, b_per_group = bias.numel() != C;
      int64_t gsize = cpg * inner;
      parallel_for(X.numel() > 65536 ? ctx.thread_pool() : nullptr, N * G, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int64_t g = r % G;
          const T* xp = X.data<T>() + r * gsize;
          T* yp = Y.data<T>() + r * gsize;
          const auto [mu, s2] = mean_and_squared_deviation(xp, gsize);
          double inv = 1.0 / std::sqrt((gsize ? s2 / gsize : 0) + epsilon);
          for (int64_t cc = 0; cc < cpg; ++cc) {
            int64_t c = g * cpg + cc;
            Acc a = static_cast<Acc>(inv * (sc_per_group ? sc[g] : sc[c]));
            Acc o = static_cast<Acc>((b_per_group ? b[g] : b[c]) - mu * a);
            for (int64_t i = 0; i < inner; ++i)
              yp[cc * inner + i] = T(static_cast<Acc>(xp[cc * inner + i]) * a + o);
          }
        }
      });
    });
  });
}

// ---- MeanVarianceNormalization ----

// MVN-1 (experimental, before opset 9) names its reduction with
// `across_channels` (axes {0, 2, 3}, or {0, 1, 2, 3} when set, as ONNX Runtime
// reads it) and may skip the division (`normalize_variance` 0).
std::unique_ptr<Kernel> make_mvn(const KernelInitContext& ic) {
  std::vector<int64_t> axes_attr = ic.get_ints("axes", {0, 2, 3});
  bool normalize_variance = true;
  if (ic.opset() < 9) {
    axes_attr = ic.get_int("across_channels", 0) ? std::vector<int64_t>{0, 1, 2, 3} : std::vector<int64_t>{0, 2, 3};
    normalize_variance = ic.get_int("normalize_variance", 1) != 0;
  }
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    int64_t rank = X.rank();
    std::vector<bool> reduced(rank, false);
    for (int64_t a : axes_attr) reduced[normalize_axis(a, rank)] = true;
    // group index of every element: its index over the kept dims
    Shape kept_shape;
    for (int64_t d = 0; d < rank; ++d) kept_shape.push_back(reduced[d] ? 1 : X.dim(d));
    std::vector<int64_t> grp = broadcast_offsets(kept_shape, X.shape());
    int64_t ngroups = shape_numel(kept_shape);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      T* y = Y.data<T>();
      int64_t n = X.numel();
      std::vector<double> s(ngroups, 0), s2(ngroups, 0), cnt(ngroups, 0);
      for (int64_t i = 0; i < n; ++i) {
        s[grp[i]] += static_cast<double>(x[i]);
        cnt[grp[i]] += 1;
      }
      for (int64_t g = 0; g < ngroups; ++g) s[g] = cnt[g] ? s[g] / cnt[g] : 0;
      for (int64_t i = 0; i < n; ++i) {
        double d = static_cast<double>(x[i]) - s[grp[i]];
        s2[grp[i]] += d * d;
      }
      for (int64_t g = 0; g < ngroups; ++g) s2[g] = normalize_variance ? std::sqrt(cnt[g] ? s2[g] / cnt[g] : 0) + 1e-9 : 1;
      for (int64_t i = 0; i < n; ++i) y[i] = T(static_cast<float>((static_cast<double>(x[i]) - s[grp[i]]) / s2[grp[i]]));
      if constexpr (std::is_same_v<T, double>)
        for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - s[grp[i]]) / s2[grp[i]];
    });
  });
}

// ---- ImageScaler (experimental, opsets 1-9): scale * x + bias[channel] ----

std::unique_ptr<Kernel> make_image_scaler(const KernelInitContext& ic) {
  float scale = ic.get_float("scale", 1.0f);
  std::vector<float> bias = ic.get_floats("bias", {});
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    if (X.rank() != 4) kernel_fail("ImageScaler: input must be NCHW (rank 4), got " + shape_to_string(X.shape()));
    int64_t channels = X.dim(1), plane = X.dim(2) * X.dim(3);
    if (!bias.empty() && static_cast<int64_t>(bias.size()) != channels)
      kernel_fail("ImageScaler: bias has " + std::to_string(bias.size()) + " values for " + std::to_string(channels) +
                  " channels");
    Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using F = AccOf<T>;
      const T* x = X.data<T>();
      T* y = Y.data<T>();
      for (int64_t nc = 0; nc < X.dim(0) * channels; ++nc) {
        F b = bias.empty() ? F(0) : static_cast<F>(bias[nc % channels]);
        for (int64_t i = nc * plane; i < (nc + 1) * plane; ++i) y[i] = T(F(scale) * static_cast<F>(x[i]) + b);
      }
    });
  });
}

}  // namespace

void register_normalization(KernelRegistry& r) {
  r.add("BatchNormalization", 1, kMaxOpset, make_batchnorm);
  r.add("InstanceNormalization", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          float eps = ic.get_float("epsilon", 1e-5f);
          return [eps](KernelContext& ctx) { run_instancenorm(ctx, eps); };
        }));
  r.add("LayerNormalization", 1, kMaxOpset, make_layernorm);
  r.add("LayerNormalization", 1, kMaxOpset, make_layernorm, "com.onyx");  // layer_norm_fusion's, before opset 17
  r.add("RMSNormalization", 23, kMaxOpset, make_rmsnorm);
  r.add("LpNormalization", 1, kMaxOpset, make_lpnorm);
  r.add("LRN", 1, kMaxOpset, make_lrn);
  r.add("GroupNormalization", 1, kMaxOpset, make_groupnorm);
  r.add("MeanVarianceNormalization", 1, kMaxOpset, make_mvn);
  r.add("ImageScaler", 1, 9, make_image_scaler);
}

}  // namespace onyx
