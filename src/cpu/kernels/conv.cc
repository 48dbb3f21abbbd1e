// Conv, ConvTranspose, ConvInteger: im2col / col2im around the shared GEMM.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/cpu_features.h"
#include "cpu/block_transpose_avx512.h"
#include "cpu/conv_geometry.h"
#include "cpu/grouped_conv1d.h"
#include "cpu/im2col.h"
#include "cpu/cpu_provider.h"
#include "cpu/conv_as_gemm.h"
#include "cpu/depth_planes_conv.h"
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

// y[m] = bias[m] + the sum over taps k and input positions i of col[m * kprod + k, i], placed
// at output position i * s + k * d - pb: col is W^T X, [M * kprod, input positions], one
// contiguous plane per channel and tap. Here g.in is the transposed convolution's input and
// g.out its output.
template <class T>
void col2im_planes(const T* col, int64_t M, const T* bias, const SpatialGeometry& g, T* y, ThreadPool* pool) {
  const int nd = g.nd;
  const int64_t kprod = g.kernel_size(), os = g.out_size(), is = g.in_size();
  const int64_t out_last = g.out[nd - 1], in_last = g.in[nd - 1], s = g.strides[nd - 1];
  const int64_t outer = is / in_last;
  parallel_for(os * kprod * M > (1 << 16) ? pool : nullptr, M, [&](int64_t m0, int64_t m1) {
    std::vector<int64_t> kk(nd), ii(nd, 0);
    for (int64_t m = m0; m < m1; ++m) {
      T* ym = y + m * os;
      std::fill(ym, ym + os, bias ? bias[m] : T(0));
      for (int64_t k = 0; k < kprod; ++k) {
        for (int64_t d = nd - 1, kidx = k; d >= 0; --d) {
          kk[d] = kidx % g.kernel[d];
          kidx /= g.kernel[d];
        }
        const T* src = col + (m * kprod + k) * is;
        const int64_t off_last = kk[nd - 1] * g.dilations[nd - 1] - g.pad_begin[nd - 1];
        int64_t lo, hi;
        valid_range(in_last, s, off_last, out_last, lo, hi);
        std::fill(ii.begin(), ii.end(), 0);
        for (int64_t ip = 0; ip < outer; ++ip) {
          bool valid = true;
          int64_t off = 0;
          for (int d = 0; d < nd - 1; ++d) {
            const int64_t od = ii[d] * g.strides[d] + kk[d] * g.dilations[d] - g.pad_begin[d];
            if (od < 0 || od >= g.out[d]) valid = false;
            off = off * g.out[d] + od;
          }
          if (valid) {
            const T* srow = src + ip * in_last;
            T* yrow = ym + off * out_last + off_last;
            if (s == 1) {
              for (int64_t i = lo; i < hi; ++i) yrow[i] += srow[i];
            } else {
              for (int64_t i = lo; i < hi; ++i) yrow[i * s] += srow[i];
            }
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

// y[m] = bias[m] + the sum over input positions i and taps k of col[i, k * M + m], placed at
// output position i * s + k * d - pb. col is X^T W with W's columns ordered tap-major
// ([input positions, kprod * M], row stride ldc), so each (i, k) adds a contiguous vector of
// M channels: an output row is summed channels-last in `acc`, then written out per channel.
// Output rows [r0, r1); `acc` holds one row. Here g.in is the transposed convolution's input and g.out its output.
template <class T>
[[gnu::always_inline]] inline void col2im_rows(const T* col, int64_t ldc, int64_t M, const T* bias,
                                               const SpatialGeometry& g, T* y, int64_t r0, int64_t r1, T* acc) {
  const int nd = g.nd;
  const int64_t os = g.out_size(), out_last = g.out[nd - 1], in_last = g.in[nd - 1];
  const int64_t s = g.strides[nd - 1], k_last = g.kernel[nd - 1], d_last = g.dilations[nd - 1];
  const int64_t outer_taps = g.kernel_size() / k_last;
  int64_t orow[8], irow[8];  // the outer dims (nd <= 9, checked by the caller)
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t o = 0; o < out_last; ++o)
      for (int64_t m = 0; m < M; ++m) acc[o * M + m] = bias ? bias[m] : T(0);
    for (int64_t d = nd - 2, idx = r; d >= 0; --d) {  // the row's output coordinates
      orow[d] = idx % g.out[d];
      idx /= g.out[d];
    }
    for (int64_t ko = 0; ko < outer_taps; ++ko) {
      // The input row this outer tap reads for this output row, if any.
      bool hit = true;
      for (int64_t d = nd - 2, kidx = ko; d >= 0; --d) {
        const int64_t num = orow[d] + g.pad_begin[d] - (kidx % g.kernel[d]) * g.dilations[d];
        kidx /= g.kernel[d];
        if (num < 0 || num % g.strides[d] != 0 || num / g.strides[d] >= g.in[d]) hit = false;
        irow[d] = num / g.strides[d];
      }
      if (!hit) continue;
      int64_t in_row = 0;
      for (int d = 0; d < nd - 1; ++d) in_row = in_row * g.in[d] + irow[d];
      const T* crow = col + in_row * in_last * ldc;
      for (int64_t kl = 0; kl < k_last; ++kl) {
        const int64_t off = kl * d_last - g.pad_begin[nd - 1];
        int64_t lo, hi;
        valid_range(in_last, s, off, out_last, lo, hi);
        const T* src = crow + (ko * k_last + kl) * M;
        for (int64_t i = lo; i < hi; ++i) {
          T* a = acc + (i * s + off) * M;
          const T* c = src + i * ldc;
          for (int64_t m = 0; m < M; ++m) a[m] += c[m];
        }
      }
    }
    T* yrow = y + r * out_last;
    if constexpr (std::is_same_v<T, float>) {
      if (nchwc::block_transpose_available()) {  // 16x16 register tiles; the scalar loop ran at ~3 cycles a value
        nchwc::transpose_tile32(acc, M, M, out_last, yrow, os);
        continue;
      }
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < out_last; ++o) yrow[m * os + o] = acc[o * M + m];
  }
}

// The float instance, compiled for AVX-512, AVX2 and baseline x86-64 (picked at load time) so
// that the channel runs vectorize.
ONYX_VECTOR_CLONES
void col2im_rows_f32(const float* col, int64_t ldc, int64_t M, const float* bias, const SpatialGeometry& g, float* y,
                     int64_t r0, int64_t r1, float* acc) {
  col2im_rows<float>(col, ldc, M, bias, g, y, r0, r1, acc);
}

// Whether every output position gets exactly one tap: stride == kernel, no
// dilation, padding or extra output (U-Net's 2x2 stride-2 upsampling).
bool taps_tile_output(const SpatialGeometry& g) {
  for (int d = 0; d < g.nd; ++d)
    if (g.strides[d] != g.kernel[d] || g.dilations[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0 ||
        g.out[d] != g.in[d] * g.kernel[d])
      return false;
  return true;
}

// col2im_rows where taps tile the output: each output row is bias plus one
// tap's channel vectors, transposed straight from col into the planes (no
// summing row: at 32x256x256 outputs the row passes took 2x the GEMM).
// `col` holds the input rows from `first_in_row` on.
void col2im_rows_tiled(const float* col, int64_t first_in_row, int64_t ldc, int64_t M, const float* bias,
                       const SpatialGeometry& g, float* y, int64_t r0, int64_t r1, std::vector<const float*>& rows) {
  const int nd = g.nd;
  const int64_t out_last = g.out[nd - 1], in_last = g.in[nd - 1], k_last = g.kernel[nd - 1], os = g.out_size();
  rows.resize(static_cast<size_t>(out_last));
  for (int64_t r = r0; r < r1; ++r) {
    int64_t in_row = 0, tap = 0, in_stride = 1, tap_stride = k_last;
    for (int64_t d = nd - 2, idx = r; d >= 0; --d) {  // the row's input row and outer tap
      const int64_t o = idx % g.out[d];
      idx /= g.out[d];
      in_row += o / g.kernel[d] * in_stride;
      tap += o % g.kernel[d] * tap_stride;
      in_stride *= g.in[d];
      tap_stride *= g.kernel[d];
    }
    const float* crow = col + (in_row - first_in_row) * in_last * ldc + tap * M;
    for (int64_t o = 0; o < out_last; ++o) rows[o] = crow + o / k_last * ldc + o % k_last * M;
    nchwc::gather_transpose(rows.data(), out_last, M, bias, y + r * out_last, os);
  }
}

template <class T>
void col2im(const T* col, int64_t ldc, int64_t M, const T* bias, const SpatialGeometry& g, T* y, ThreadPool* pool) {
  const int64_t out_last = g.out[g.nd - 1], rows = g.out_size() / out_last;
  if (g.nd > 9) kernel_fail("ConvTranspose supports up to 9 spatial dims");
  if constexpr (std::is_same_v<T, float>) {
    if (taps_tile_output(g) && nchwc::block_transpose_available()) {
      parallel_for(g.out_size() * M > (1 << 14) ? pool : nullptr, rows, [&](int64_t r0, int64_t r1) {
        thread_local std::vector<const float*> row_pointers;
        col2im_rows_tiled(col, 0, ldc, M, bias, g, y, r0, r1, row_pointers);
      });
      return;
    }
  }
  parallel_for(g.out_size() * M > (1 << 14) ? pool : nullptr, rows, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<T> acc;  // one output row, channels-last
    if (acc.size() < static_cast<size_t>(out_last * M)) acc.resize(out_last * M);
    if constexpr (std::is_same_v<T, float>) col2im_rows_f32(col, ldc, M, bias, g, y, r0, r1, acc.data());
    else col2im_rows<T>(col, ldc, M, bias, g, y, r0, r1, acc.data());
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
  std::shared_ptr<DepthPlanesConv> depth_planes =
      DepthPlanesConv::create(cfg, ic.constant_input(1), ic.constant_input(2) != nullptr);
  return std::make_unique<LambdaKernel>([attrs, group, dnnl, depth_planes](KernelContext& ctx) {
    const Tensor& X = ctx.input(0);
    const Tensor& W = ctx.input(1);
    const Tensor* B = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (W.dtype() != X.dtype() || (B && B->dtype() != X.dtype())) kernel_fail("Conv inputs must share one type");
    ConvSetup s = conv_setup(X.shape(), W.shape(), attrs, group);
    if (B && B->numel() != s.M)
      kernel_fail("bias has " + std::to_string(B->numel()) + " elements, expected " + std::to_string(s.M));
    Tensor& Y = ctx.allocate_output(0, X.dtype(), s.out_shape);
    if (Y.numel() == 0) return;
    if (X.dtype() == DataType::Float && is_small_group_conv1d(X.rank(), W.shape(), group)) {
      grouped_conv1d(X.data<float>(), W.data<float>(), B ? B->data<float>() : nullptr, Y.data<float>(), s.N, s.C, s.M,
                     group, s.g, ctx.thread_pool());
      return;
    }
    if (const ConvAsGemm gemm_conv = X.dtype() == DataType::Float ? conv_as_gemm(W.shape(), s.g, group) : nullptr) {
      gemm_conv(X.data<float>(), s.N, s.C, W.data<float>(), s.M, B ? B->data<float>() : nullptr, nullptr, s.g,
                GemmActivation::None, Y.data<float>(), ctx.thread_pool());
      return;
    }
    if (depth_planes && X.dtype() == DataType::Float && depth_planes->use_for(X.shape(), B, ctx.thread_pool())) {
      depth_planes->run(X.data<float>(), X.shape(), B, nullptr, Y.data<float>(), ctx.thread_pool());
      return;
    }
    if (dnnl && X.dtype() == DataType::Float && X.rank() >= 3 && X.rank() <= 5 && X.numel() > 0 &&
        !is_pointwise_head(W.shape(), attrs, group)) {
      DnnlConv::Io io;
      io.x = X.data<float>();
      io.x_shape = X.shape();
      io.w = &W;
      io.b = B;
      const bool whole = dnnl->run(io, Y.data<float>(), ctx.thread_pool());
      (void)whole;  // a plain Conv has no activation to leave out
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

// The weights of one group, [Cg, Mg * kprod], packed as the GEMM's B once (constant float weights).
// W [C, Mg, kprod] as [C, kprod, Mg]: col2im reads each tap's channels contiguously.
template <class T>
void weights_tap_major(const T* w, int64_t C, int64_t Mg, int64_t kprod, T* out) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t m = 0; m < Mg; ++m)
      for (int64_t k = 0; k < kprod; ++k) out[(c * kprod + k) * Mg + m] = w[(c * Mg + m) * kprod + k];
}

std::vector<PackedB> pack_transposed_weights(const Tensor& W, int64_t group) {
  const int64_t C = W.shape()[0], Cg = C / group, Mg = W.shape()[1], cols = W.numel() / C;
  std::vector<float> tap_major(W.numel());
  weights_tap_major(W.data<float>(), C, Mg, cols / Mg, tap_major.data());
  std::vector<PackedB> packed;
  for (int64_t gi = 0; gi < group; ++gi)
    packed.push_back(gemm_pack_b(false, Cg, cols, tap_major.data() + gi * Cg * cols, cols));
  return packed;
}

// A 2-D ConvTranspose whose taps tile the output, a few input rows at a time:
// each task's GEMM rows stay in its cache for the scatter into the output
// rows they make, instead of the whole col buffer (8 MB for 64 -> 32
// channels at 128x128) going out to memory and back.
void conv_transpose_tiled_2d(const float* xg, const PackedB& packed, const float* bias, int64_t Mg,
                             const SpatialGeometry& g, float* yg, ThreadPool* pool) {
  const int64_t H = g.in[0], W = g.in[1], cols = Mg * g.kernel[0] * g.kernel[1];
  const int64_t row_bytes = W * cols * static_cast<int64_t>(sizeof(float));
  const int64_t threads = pool ? pool->num_threads() : 1;  // two tasks a thread at least, where rows allow
  const int64_t rows_per_task = std::clamp<int64_t>((int64_t{256} << 10) / std::max<int64_t>(row_bytes, 1), 1,
                                                    std::max<int64_t>(1, H / (2 * threads)));
  const int64_t tasks = (H + rows_per_task - 1) / rows_per_task;
  parallel_for(pool, tasks, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> block;
    thread_local std::vector<const float*> row_pointers;
    if (block.size() < static_cast<size_t>(rows_per_task * W * cols)) block.resize(rows_per_task * W * cols);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h0 = t * rows_per_task, h1 = std::min(H, h0 + rows_per_task);
      gemm_f32_packed(true, (h1 - h0) * W, 1.0f, xg + h0 * W, H * W, packed, 0.0f, block.data(), cols, nullptr);
      col2im_rows_tiled(block.data(), h0, cols, Mg, bias, g, yg, h0 * g.kernel[0], h1 * g.kernel[0], row_pointers);
    }
  });
}

// Per group, one GEMM and a col2im. Few output channels over a large input (an image or audio
// head): col = W^T X, planes per channel and tap (the channels-last rows below would add runs
// of a few floats). Otherwise col = X^T W against the weights packed once (`packed`, per
// group, or empty) and channels-last rows, vector adds over the channels (measured against
// oneDNN's deconvolution on DCGAN, HiFi-GAN and U-Net layers: this was faster on most, and
// 2-3x on 1-D and few-channel ones).
template <class T>
void conv_transpose_compute(const T* x, const T* w, const std::vector<PackedB>& packed, const T* bias, T* y,
                            int64_t N, int64_t C, int64_t M, int64_t group, const SpatialGeometry& g,
                            ThreadPool* pool) {
  const int64_t Cg = C / group, Mg = M / group;
  const int64_t kprod = g.kernel_size(), os = g.out_size(), is = g.in_size(), cols = Mg * kprod;
  const bool planes = cols < is && Mg < 16;
  // conv_transpose_tiled_2d, which needs no col buffer, where its tasks of input rows can
  // keep the threads busy (else the whole GEMM splits its columns too).
  bool tiled = false;
  if constexpr (std::is_same_v<T, float>)
    tiled = !planes && !packed.empty() && g.nd == 2 && taps_tile_output(g) && nchwc::block_transpose_available() &&
            g.in[0] >= 2 * (pool ? pool->num_threads() : 1);
  thread_local std::vector<T> col, w_tap_major;  // grown, never shrunk: per-run allocations this size page-fault
  if (!tiled && col.size() < static_cast<size_t>(is * cols)) col.resize(static_cast<size_t>(is * cols));
  if (!planes && packed.empty()) {
    if (w_tap_major.size() < static_cast<size_t>(C * cols)) w_tap_major.resize(static_cast<size_t>(C * cols));
    weights_tap_major(w, C, Mg, kprod, w_tap_major.data());
  }
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const T* xg = x + (n * C + gi * Cg) * is;
      const T* bg = bias ? bias + gi * Mg : nullptr;
      T* yg = y + (n * M + gi * Mg) * os;
      if (planes) {
        gemm_any<T>(true, false, cols, is, Cg, w + gi * Cg * cols, cols, xg, is, T(0), col.data(), is, pool);
        col2im_planes(col.data(), Mg, bg, g, yg, pool);
        continue;
      }
      if constexpr (std::is_same_v<T, float>) {
        if (tiled) {
          conv_transpose_tiled_2d(xg, packed[gi], bg, Mg, g, yg, pool);
          continue;
        }
        if (!packed.empty()) gemm_f32_packed(true, is, 1.0f, xg, is, packed[gi], 0.0f, col.data(), cols, pool);
        else gemm_f32(true, false, is, cols, Cg, 1.0f, xg, is, w_tap_major.data() + gi * Cg * cols, cols, 0.0f,
                      col.data(), cols, pool);
      } else {
        gemm_ref<T, T>(true, false, is, cols, Cg, T(1), xg, is, w_tap_major.data() + gi * Cg * cols, cols, T(0),
                       col.data(), cols);
      }
      col2im(col.data(), cols, Mg, bg, g, yg, pool);
    }
  }
}

std::unique_ptr<Kernel> make_conv_transpose(const KernelInitContext& ic) {
  SpatialAttrs attrs = SpatialAttrs::read(ic);
  int64_t group = ic.get_int("group", 1);
  std::vector<int64_t> output_padding = ic.get_ints("output_padding");
  std::vector<int64_t> output_shape = ic.get_ints("output_shape");
  // Constant float weights are packed for the GEMM once; `packed_from` says which buffer.
  const Tensor* cw = ic.constant_input(1);
  auto packed = std::make_shared<std::vector<PackedB>>();
  const void* packed_from = nullptr;
  if (cw && cw->dtype() == DataType::Float && cw->rank() >= 3 && group > 0 && cw->shape()[0] % group == 0 &&
      cw->numel() > 0) {
    *packed = pack_transposed_weights(*cw, group);
    packed_from = cw->raw();
  }
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
    const int64_t N = xs[0], C = xs[1], M = ws[1] * group;
    const SpatialGeometry g = compute_transpose_geometry(std::vector<int64_t>(xs.begin() + 2, xs.end()), attrs,
                                                         std::vector<int64_t>(ws.begin() + 2, ws.end()),
                                                         output_padding, output_shape);
    if (B && B->numel() != M) kernel_fail("bias has " + std::to_string(B->numel()) + " elements, expected " + std::to_string(M));
    Shape out_shape = {N, M};
    for (auto o : g.out) out_shape.push_back(o);
    Tensor& Y = ctx.allocate_output(0, X.dtype(), out_shape);
    if (Y.numel() == 0) return;
    dispatch_float(X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        static const std::vector<PackedB> none;
        const bool use_packed = std::is_same_v<T, float> && W.raw() == packed_from;
        conv_transpose_compute<T>(X.data<T>(), W.data<T>(), use_packed ? *packed : none, B ? B->data<T>() : nullptr,
                                  Y.data<T>(), N, C, M, group, g, ctx.thread_pool());
      } else {
        Tensor xf = to_float<T>(X), wf = to_float<T>(W), bf = B ? to_float<T>(*B) : Tensor();
        Tensor yf(DataType::Float, out_shape);
        conv_transpose_compute<float>(xf.data<float>(), wf.data<float>(), {}, B ? bf.data<float>() : nullptr,
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
    if (int8_conv_supported(s.g, s.M, group) && W.dim(1) > 0) {
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
