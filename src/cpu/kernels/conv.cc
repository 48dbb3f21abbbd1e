// Conv, ConvTranspose, ConvInteger: im2col / col2im around the shared GEMM.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/conv_geometry.h"
#include "cpu/cpu_provider.h"
#include "cpu/dnnl_conv.h"
#include "cpu/gemm.h"
#include "cpu/int8_conv.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

template <class T>
void gemm_any(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
              T beta, T* C, int64_t ldc, ThreadPool* pool) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc, pool);
  } else {
    gemm_ref<T, T>(ta, tb, M, N, K, T(1), A, lda, B, ldb, beta, C, ldc);
  }
}

int64_t ceil_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Valid range [lo, hi) of o with 0 <= o*s + off < n.
inline void valid_range(int64_t count, int64_t s, int64_t off, int64_t n, int64_t& lo, int64_t& hi) {
  lo = std::min<int64_t>(count, std::max<int64_t>(0, ceil_div(-off, s)));
  hi = std::min<int64_t>(count, std::max<int64_t>(0, ceil_div(n - off, s)));
  if (hi < lo) hi = lo;
}

// col[(c*kprod + k), o] = x[c, o*s + k*d - pb] (0 outside); x is [C, in...].
template <class T>
void im2col(const T* x, int64_t C, const SpatialGeometry& g, T* col, ThreadPool* pool) {
  const int nd = g.nd;
  const int64_t kprod = g.kernel_size(), os = g.out_size(), is = g.in_size();
  const int64_t out_last = g.out[nd - 1], in_last = g.in[nd - 1];
  const int64_t outer = os / std::max<int64_t>(out_last, 1);
  parallel_for(os * kprod * C > (1 << 16) ? pool : nullptr, C * kprod, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> kk(nd), oi(nd, 0);
    for (int64_t r = r0; r < r1; ++r) {
      int64_t c = r / kprod, kidx = r % kprod;
      for (int d = nd - 1; d >= 0; --d) {
        kk[d] = kidx % g.kernel[d];
        kidx /= g.kernel[d];
      }
      const T* xc = x + c * is;
      T* dst = col + r * os;
      const int64_t s = g.strides[nd - 1];
      const int64_t off_last = kk[nd - 1] * g.dilations[nd - 1] - g.pad_begin[nd - 1];
      int64_t lo, hi;
      valid_range(out_last, s, off_last, in_last, lo, hi);
      std::fill(oi.begin(), oi.end(), 0);
      for (int64_t op = 0; op < outer; ++op) {
        bool valid = true;
        int64_t off = 0;
        for (int d = 0; d < nd - 1; ++d) {
          int64_t id = oi[d] * g.strides[d] + kk[d] * g.dilations[d] - g.pad_begin[d];
          if (id < 0 || id >= g.in[d]) valid = false;
          off = off * g.in[d] + id;
        }
        T* drow = dst + op * out_last;
        if (!valid) {
          std::fill(drow, drow + out_last, T(0));
        } else {
          const T* xrow = xc + off * in_last + off_last;
          std::fill(drow, drow + lo, T(0));
          if (s == 1) {
            if (hi > lo) std::memcpy(drow + lo, xrow + lo, (hi - lo) * sizeof(T));
          } else {
            for (int64_t o = lo; o < hi; ++o) drow[o] = xrow[o * s];
          }
          std::fill(drow + hi, drow + out_last, T(0));
        }
        for (int d = nd - 2; d >= 0; --d) {
          if (++oi[d] < g.out[d]) break;
          oi[d] = 0;
        }
      }
    }
  });
}

// y[m, i*s + k*d - pb] += col[(m*kprod + k), i]; here g.in is the conv-transpose
// input (col columns) and g.out its output. y must be zeroed first.
template <class T>
void col2im(const T* col, int64_t M, const SpatialGeometry& g, T* y, ThreadPool* pool) {
  const int nd = g.nd;
  const int64_t kprod = g.kernel_size(), os = g.out_size(), is = g.in_size();
  const int64_t out_last = g.out[nd - 1], in_last = g.in[nd - 1];
  const int64_t outer = is / std::max<int64_t>(in_last, 1);
  // parallel over output channels (each touches its own slice of y)
  parallel_for(os * kprod * M > (1 << 16) ? pool : nullptr, M, [&](int64_t m0, int64_t m1) {
    std::vector<int64_t> kk(nd), ii(nd, 0);
    for (int64_t m = m0; m < m1; ++m) {
      T* ym = y + m * os;
      for (int64_t k = 0; k < kprod; ++k) {
        int64_t kidx = k;
        for (int d = nd - 1; d >= 0; --d) {
          kk[d] = kidx % g.kernel[d];
          kidx /= g.kernel[d];
        }
        const T* src = col + (m * kprod + k) * is;
        const int64_t s = g.strides[nd - 1];
        const int64_t off_last = kk[nd - 1] * g.dilations[nd - 1] - g.pad_begin[nd - 1];
        int64_t lo, hi;
        valid_range(in_last, s, off_last, out_last, lo, hi);
        std::fill(ii.begin(), ii.end(), 0);
        for (int64_t ip = 0; ip < outer; ++ip) {
          bool valid = true;
          int64_t off = 0;
          for (int d = 0; d < nd - 1; ++d) {
            int64_t od = ii[d] * g.strides[d] + kk[d] * g.dilations[d] - g.pad_begin[d];
            if (od < 0 || od >= g.out[d]) valid = false;
            off = off * g.out[d] + od;
          }
          if (valid) {
            const T* srow = src + ip * in_last;
            T* yrow = ym + off * out_last + off_last;
            for (int64_t i = lo; i < hi; ++i) yrow[i * s] += srow[i];
          }
          for (int d = nd - 2; d >= 0; --d) {
            if (++ii[d] < g.in[d]) break;
            ii[d] = 0;
          }
        }
      }
    }
  });
}

template <class T>
void conv_compute(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t C, int64_t M, int64_t group,
                  const SpatialGeometry& g, ThreadPool* pool) {
  const int64_t Cg = C / group, Mg = M / group;
  const int64_t kprod = g.kernel_size(), Kg = Cg * kprod, os = g.out_size(), is = g.in_size();
  bool direct = true;  // 1x1, stride 1, no pads: the input is its own im2col
  for (int d = 0; d < g.nd; ++d)
    if (g.kernel[d] != 1 || g.strides[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0) direct = false;
  std::vector<T> col;
  if (!direct) col.resize(static_cast<size_t>(Kg * os));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const T* xg = x + (n * C + gi * Cg) * is;
      const T* b = xg;
      if (!direct) {
        im2col(xg, Cg, g, col.data(), pool);
        b = col.data();
      }
      gemm_any<T>(false, false, Mg, os, Kg, w + gi * Mg * Kg, Kg, b, os, T(0), y + (n * M + gi * Mg) * os, os, pool);
    }
    if (bias) {
      for (int64_t m = 0; m < M; ++m) {
        T* ym = y + (n * M + m) * os;
        T bv = bias[m];
        for (int64_t i = 0; i < os; ++i) ym[i] += bv;
      }
    }
  }
}

template <class T>
Tensor to_float(const Tensor& t) {
  Tensor f(DataType::Float, t.shape());
  const T* s = t.data<T>();
  float* d = f.data<float>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) d[i] = static_cast<float>(s[i]);
  return f;
}

template <class T>
void from_float(const Tensor& f, Tensor& out) {
  const float* s = f.data<float>();
  T* d = out.data<T>();
  for (int64_t i = 0, n = f.numel(); i < n; ++i) d[i] = T(s[i]);
}

struct ConvSetup {
  SpatialGeometry g;
  int64_t N, C, M;
  Shape out_shape;
};

ConvSetup conv_setup(const Shape& xs, const Shape& ws, const SpatialAttrs& attrs, int64_t group) {
  if (xs.size() < 3) kernel_fail("Conv input X must have rank >= 3, got " + shape_to_string(xs));
  if (ws.size() != xs.size())
    kernel_fail("Conv weights W " + shape_to_string(ws) + " must have the rank of X " + shape_to_string(xs));
  if (group <= 0) kernel_fail("group must be positive");
  ConvSetup s;
  s.N = xs[0];
  s.C = xs[1];
  s.M = ws[0];
  if (s.C % group != 0 || ws[1] * group != s.C)
    kernel_fail("X has " + std::to_string(s.C) + " channels but W " + shape_to_string(ws) + " with group " +
                std::to_string(group) + " expects " + std::to_string(ws[1] * group));
  if (s.M % group != 0) kernel_fail("output channels " + std::to_string(s.M) + " not divisible by group");
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (!attrs.kernel.empty() && attrs.kernel != kernel)
    kernel_fail("kernel_shape attribute does not match W " + shape_to_string(ws));
  s.g = compute_geometry(std::vector<int64_t>(xs.begin() + 2, xs.end()), attrs, kernel);
  s.out_shape = {s.N, s.M};
  for (auto o : s.g.out) s.out_shape.push_back(o);
  return s;
}

std::unique_ptr<Kernel> make_conv(const KernelInitContext& ic) {
  SpatialAttrs attrs = SpatialAttrs::read(ic);
  attrs.ceil_mode = false;
  int64_t group = ic.get_int("group", 1);
  // Float convolutions go to oneDNN when this build has it.
  std::shared_ptr<DnnlConv> dnnl;
  DnnlConvConfig cfg;
  cfg.attrs = attrs;
  cfg.group = group;
  cfg.constant_weights = ic.constant_input(1) != nullptr;
  if (dnnl_available() && DnnlConv::supports(cfg, 4)) dnnl = std::make_shared<DnnlConv>(cfg);
  return std::make_unique<LambdaKernel>([attrs, group, dnnl](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& W = ctx.input(1);
    const Tensor* B = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (W.dtype() != X.dtype() || (B && B->dtype() != X.dtype())) kernel_fail("Conv inputs must share one type");
    ConvSetup s = conv_setup(X.shape(), W.shape(), attrs, group);
    if (B && B->numel() != s.M)
      kernel_fail("bias has " + std::to_string(B->numel()) + " elements, expected " + std::to_string(s.M));
    Tensor& Y = ctx.allocate_output(0, X.dtype(), s.out_shape);
    if (Y.numel() == 0) return;
    if (dnnl && X.dtype() == DataType::Float && X.rank() >= 3 && X.rank() <= 5 && X.numel() > 0 &&
        !is_pointwise_head(W.shape(), attrs, group)) {
      DnnlConv::Io io;
      io.x = X.data<float>();
      io.x_shape = X.shape();
      io.w = &W;
      io.b = B;
      dnnl->run(io, Y.data<float>(), ctx.thread_pool());
      return;
    }
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        conv_compute<T>(X.data<T>(), W.data<T>(), B ? B->data<T>() : nullptr, Y.data<T>(), s.N, s.C, s.M, group, s.g,
                        ctx.thread_pool());
      } else {
        Tensor xf = to_float<T>(X), wf = to_float<T>(W), bf = B ? to_float<T>(*B) : Tensor();
        Tensor yf(DataType::Float, s.out_shape);
        conv_compute<float>(xf.data<float>(), wf.data<float>(), B ? bf.data<float>() : nullptr, yf.data<float>(),
                            s.N, s.C, s.M, group, s.g, ctx.thread_pool());
        from_float<T>(yf, Y);
      }
    });
  });
}

// ---- ConvTranspose ----

template <class T>
void conv_transpose_compute(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t C, int64_t M,
                            int64_t group, const SpatialGeometry& g, ThreadPool* pool) {
  const int64_t Cg = C / group, Mg = M / group;
  const int64_t kprod = g.kernel_size(), os = g.out_size(), is = g.in_size();
  std::vector<T> col(static_cast<size_t>(Mg * kprod * is));
  std::fill(y, y + N * M * os, T(0));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const T* xg = x + (n * C + gi * Cg) * is;
      const T* wg = w + gi * Cg * Mg * kprod;
      gemm_any<T>(true, false, Mg * kprod, is, Cg, wg, Mg * kprod, xg, is, T(0), col.data(), is, pool);
      col2im(col.data(), Mg, g, y + (n * M + gi * Mg) * os, pool);
    }
    if (bias) {
      for (int64_t m = 0; m < M; ++m) {
        T* ym = y + (n * M + m) * os;
        T bv = bias[m];
        for (int64_t i = 0; i < os; ++i) ym[i] += bv;
      }
    }
  }
}

std::unique_ptr<Kernel> make_conv_transpose(const KernelInitContext& ic) {
  SpatialAttrs attrs = SpatialAttrs::read(ic);
  int64_t group = ic.get_int("group", 1);
  std::vector<int64_t> output_padding = ic.get_ints("output_padding");
  std::vector<int64_t> output_shape = ic.get_ints("output_shape");
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& W = ctx.input(1);
    const Tensor* B = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Shape& xs = X.shape();
    const Shape& ws = W.shape();
    if (W.dtype() != X.dtype() || (B && B->dtype() != X.dtype())) kernel_fail("ConvTranspose inputs must share one type");
    if (xs.size() < 3) kernel_fail("ConvTranspose input X must have rank >= 3, got " + shape_to_string(xs));
    if (ws.size() != xs.size())
      kernel_fail("ConvTranspose weights W " + shape_to_string(ws) + " must have the rank of X " + shape_to_string(xs));
    if (group <= 0 || xs[1] % group != 0 || ws[0] != xs[1])
      kernel_fail("ConvTranspose: X " + shape_to_string(xs) + " does not match W " + shape_to_string(ws) +
                  " with group " + std::to_string(group));
    const int nd = static_cast<int>(xs.size()) - 2;
    int64_t N = xs[0], C = xs[1], M = ws[1] * group;
    SpatialGeometry g;
    g.nd = nd;
    g.in.assign(xs.begin() + 2, xs.end());
    g.kernel.assign(ws.begin() + 2, ws.end());
    if (!attrs.kernel.empty() && attrs.kernel != g.kernel)
      kernel_fail("kernel_shape attribute does not match W " + shape_to_string(ws));
    auto fill = [&](const std::vector<int64_t>& v, const char* name, int64_t def) {
      if (v.empty()) return std::vector<int64_t>(nd, def);
      if (static_cast<int>(v.size()) != nd)
        kernel_fail(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(nd));
      return v;
    };
    g.strides = fill(attrs.strides, "strides", 1);
    g.dilations = fill(attrs.dilations, "dilations", 1);
    std::vector<int64_t> opad = fill(output_padding, "output_padding", 0);
    std::vector<int64_t> oshape;
    if (!output_shape.empty()) {
      if (static_cast<int>(output_shape.size()) == nd) oshape = output_shape;
      else if (static_cast<int>(output_shape.size()) == nd + 2) oshape.assign(output_shape.begin() + 2, output_shape.end());
      else kernel_fail("output_shape has " + std::to_string(output_shape.size()) + " values, expected " + std::to_string(nd));
    }
    g.pad_begin.assign(nd, 0);
    g.pad_end.assign(nd, 0);
    g.out.assign(nd, 0);
    bool same = attrs.auto_pad == "SAME_UPPER" || attrs.auto_pad == "SAME_LOWER";
    for (int d = 0; d < nd; ++d) {
      if (g.strides[d] <= 0 || g.dilations[d] <= 0) kernel_fail("strides and dilations must be positive");
      int64_t eff = (g.kernel[d] - 1) * g.dilations[d] + 1;
      int64_t natural = g.strides[d] * (g.in[d] - 1) + opad[d] + eff;
      if (!oshape.empty() || same) {
        int64_t target = !oshape.empty() ? oshape[d] : g.in[d] * g.strides[d];
        int64_t total = natural - target;
        if (attrs.auto_pad == "SAME_UPPER") {
          g.pad_begin[d] = floor_div(total, 2);
          g.pad_end[d] = total - floor_div(total, 2);
        } else {
          g.pad_begin[d] = total - floor_div(total, 2);
          g.pad_end[d] = floor_div(total, 2);
        }
        g.out[d] = target;
      } else if (attrs.auto_pad == "VALID") {
        g.out[d] = natural;
      } else {
        if (!attrs.pads.empty()) {
          if (static_cast<int>(attrs.pads.size()) != 2 * nd)
            kernel_fail("pads has " + std::to_string(attrs.pads.size()) + " values, expected " + std::to_string(2 * nd));
          g.pad_begin[d] = attrs.pads[d];
          g.pad_end[d] = attrs.pads[d + nd];
        }
        g.out[d] = natural - g.pad_begin[d] - g.pad_end[d];
      }
      if (g.out[d] <= 0) kernel_fail("ConvTranspose output dim " + std::to_string(d) + " is not positive");
    }
    if (B && B->numel() != M) kernel_fail("bias has " + std::to_string(B->numel()) + " elements, expected " + std::to_string(M));
    Shape out_shape = {N, M};
    for (auto o : g.out) out_shape.push_back(o);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), out_shape);
    if (Y.numel() == 0) return;
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        conv_transpose_compute<T>(X.data<T>(), W.data<T>(), B ? B->data<T>() : nullptr, Y.data<T>(), N, C, M, group, g,
                                  ctx.thread_pool());
      } else {
        Tensor xf = to_float<T>(X), wf = to_float<T>(W), bf = B ? to_float<T>(*B) : Tensor();
        Tensor yf(DataType::Float, out_shape);
        conv_transpose_compute<float>(xf.data<float>(), wf.data<float>(), B ? bf.data<float>() : nullptr,
                                      yf.data<float>(), N, C, M, group, g, ctx.thread_pool());
        from_float<T>(yf, Y);
      }
    });
  });
}

// ---- ConvInteger ----

std::unique_ptr<Kernel> make_conv_integer(const KernelInitContext& ic) {
  SpatialAttrs attrs = SpatialAttrs::read(ic);
  attrs.ceil_mode = false;
  int64_t group = ic.get_int("group", 1);
  std::shared_ptr<const Int8ConvWeights> packed = prepare_int8_conv_weights(ic.constant_input(1), group);
  return std::make_unique<LambdaKernel>([attrs, group, packed](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& W = ctx.input(1);
    auto check_type = [](const Tensor& t, const char* name) {
      if (t.dtype() != DataType::UInt8 && t.dtype() != DataType::Int8)
        kernel_fail(std::string("ConvInteger ") + name + " must be uint8 or int8, got " + dtype_name(t.dtype()));
    };
    check_type(X, "x");
    check_type(W, "w");
    ConvSetup s = conv_setup(X.shape(), W.shape(), attrs, group);
    int32_t xzp = 0;
    if (ctx.has_input(2)) {
      const Tensor& z = ctx.input(2);
      check_type(z, "x_zero_point");
      if (z.numel() != 1) kernel_fail("ConvInteger x_zero_point must be a scalar, got " + shape_to_string(z.shape()));
      xzp = static_cast<int32_t>(z.int_at(0));
    }
    std::vector<int32_t> wzp(s.M, 0);
    if (ctx.has_input(3)) {
      const Tensor& z = ctx.input(3);
      check_type(z, "w_zero_point");
      if (z.numel() == 1) std::fill(wzp.begin(), wzp.end(), static_cast<int32_t>(z.int_at(0)));
      else if (z.numel() == s.M) for (int64_t m = 0; m < s.M; ++m) wzp[m] = static_cast<int32_t>(z.int_at(m));
      else kernel_fail("ConvInteger w_zero_point must be a scalar or have " + std::to_string(s.M) + " elements");
    }
    Tensor& Y = ctx.allocate_output(0, DataType::Int32, s.out_shape);
    if (Y.numel() == 0) return;
    if (int8_conv_supported(s.g) && W.dim(1) > 0) {
      std::shared_ptr<const Int8ConvWeights> wp = packed ? packed : prepare_int8_conv_weights(&W, group);
      Int8ConvInput in{X.raw(), X.dtype() == DataType::Int8, xzp, s.N, s.C};
      int32_t* out = Y.data<int32_t>();
      const int64_t M = s.M, P = s.g.out_size();
      // The sums are the output: copy them into NCHW.
      Int8ConvSink sink;
      sink.fn = [=](int64_t n, int64_t m0, int64_t m1, int64_t p0, int64_t count, int32_t* acc, int64_t ms,
                    int64_t ps) {
        int32_t* dst = out + (n * M + m0) * P + p0;
        if (ps == 1) {
          for (int64_t m = m0; m < m1; ++m) std::memcpy(dst + (m - m0) * P, acc + (m - m0) * ms, count * sizeof(int32_t));
        } else {
          transpose_block(acc, count, m1 - m0, ps, dst, P);
        }
      };
      int8_conv(in, s.g, *wp, wzp, sink, ctx.thread_pool());
      return;
    }
    std::vector<int32_t> xi(X.numel()), wi(W.numel());
    for (int64_t i = 0; i < X.numel(); ++i) xi[i] = static_cast<int32_t>(X.int_at(i)) - xzp;
    int64_t per_m = W.numel() / std::max<int64_t>(s.M, 1);
    for (int64_t i = 0; i < W.numel(); ++i) wi[i] = static_cast<int32_t>(W.int_at(i)) - wzp[i / per_m];
    conv_compute<int32_t>(xi.data(), wi.data(), nullptr, Y.data<int32_t>(), s.N, s.C, s.M, group, s.g,
                          ctx.thread_pool());
  });
}

}  // namespace

void register_nchwc(KernelRegistry& r);  // cpu/dnnl_kernels.cc

void register_conv(KernelRegistry& r) {
  register_nchwc(r);
  r.add("Conv", 1, kMaxOpset, make_conv);
  r.add("ConvTranspose", 1, kMaxOpset, make_conv_transpose);
  r.add("ConvInteger", 10, kMaxOpset, make_conv_integer);
}

}  // namespace onyx
