// ORT's quantized pooling contrib ops (com.microsoft): QLinearGlobalAveragePool,
// QLinearAveragePool and NhwcMaxPool, with ORT's float order of operations.
#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "base/cpu_features.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "cpu/conv_geometry.h"
#include "cpu/kernels/contrib_quantization.h"

namespace onyx::contrib_q {
namespace {

// ---- QLinearGlobalAveragePool ----

// acc[c] += sum over `pixels` rows of x[p * C + c] (channels last), 8-bit.
template <class Q>
void add_pixels_scalar(const Q* x, int64_t pixels, int64_t C, int32_t* acc) {
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t c = 0; c < C; ++c) acc[c] += x[p * C + c];
}

#if defined(__x86_64__) && defined(__GNUC__)
template <class Q>
__attribute__((target("avx2"))) void add_pixels_avx2(const Q* x, int64_t pixels, int64_t C, int32_t* acc) {
  int64_t c = 0;
  for (; c + 8 <= C; c += 8) {
    __m256i sum = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + c));
    for (int64_t p = 0; p < pixels; ++p) {
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + p * C + c));
      sum = _mm256_add_epi32(sum, std::is_signed_v<Q> ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + c), sum);
  }
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t k = c; k < C; ++k) acc[k] += x[p * C + k];
}
#endif

template <class Q>
void add_pixels(const Q* x, int64_t pixels, int64_t C, int32_t* acc) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_features().avx2) return add_pixels_avx2(x, pixels, C, acc);
#endif
  add_pixels_scalar(x, pixels, C, acc);
}

void run_qlinear_global_average_pool(KernelContext& ctx, bool channels_last) {
  const Tensor& X = ctx.input(0);
  if (X.rank() < 3) kernel_fail("QLinearGlobalAveragePool input must have rank >= 3, got " + shape_to_string(X.shape()));
  dispatch_q8(X.dtype(), "QLinearGlobalAveragePool input X", [&](auto tag) {
    using Q = typename decltype(tag)::type;
    QParam px = read_qparam(ctx, 1, 2, X.dtype(), "x");
    QParam py = read_qparam(ctx, 3, 4, X.dtype(), "y");
    const Shape& xs = X.shape();
    int64_t N = xs[0];
    int64_t C = channels_last ? xs.back() : xs[1];
    int64_t image = X.numel() / std::max<int64_t>(N * C, 1);
    Shape ys(xs.size(), 1);
    ys[0] = N;
    ys[channels_last ? xs.size() - 1 : 1] = C;
    Tensor& Y = ctx.allocate_output(0, X.dtype(), ys);
    if (Y.numel() == 0) return;
    // ORT sums in int32, removes the zero point once, and scales by
    // x_scale / (y_scale * image_size).
    float scale = px.scale / (py.scale * static_cast<float>(image));
    int32_t bias = -px.zero * static_cast<int32_t>(image);
    const Q* x = X.data<Q>();
    Q* y = Y.data<Q>();
    std::vector<int32_t> acc(static_cast<size_t>(C));
    for (int64_t n = 0; n < N; ++n) {
      std::fill(acc.begin(), acc.end(), bias);
      const Q* xn = x + n * C * image;
      if (channels_last) {
        add_pixels(xn, image, C, acc.data());
      } else {
        for (int64_t c = 0; c < C; ++c)
          for (int64_t p = 0; p < image; ++p) acc[c] += xn[c * image + p];
      }
      for (int64_t c = 0; c < C; ++c)
        y[n * C + c] = saturate<Q>(round_half_even(static_cast<float>(acc[c]) * scale) + static_cast<float>(py.zero));
    }
  });
}

// ---- QLinearAveragePool, NhwcMaxPool ----

// A pooling input viewed as [N, C, spatial...] whatever its layout: the
// geometry padded to 3 spatial dims, and the strides of a channel and of a
// spatial position.
struct PoolLayout {
  SpatialGeometry g;
  int64_t N = 0, C = 0, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  Shape out_shape;

  PoolLayout(const Shape& xs, const SpatialAttrs& a, bool channels_last, const char* op) {
    if (xs.size() < 3 || xs.size() > 5)
      kernel_fail(std::string(op) + " input must have rank 3 to 5, got " + shape_to_string(xs));
    N = xs[0];
    C = channels_last ? xs.back() : xs[1];
    std::vector<int64_t> sp(channels_last ? xs.begin() + 1 : xs.begin() + 2, channels_last ? xs.end() - 1 : xs.end());
    if (a.kernel.empty()) kernel_fail(std::string(op) + " needs the kernel_shape attribute");
    g = compute_geometry(sp, a, a.kernel);
    int off = 3 - g.nd;
    for (int i = 0; i < g.nd; ++i) {
      k[off + i] = g.kernel[i];
      s[off + i] = g.strides[i];
      d[off + i] = g.dilations[i];
      pb[off + i] = g.pad_begin[i];
      in[off + i] = g.in[i];
      out[off + i] = g.out[i];
    }
    out_shape = {N};
    if (!channels_last) out_shape.push_back(C);
    for (auto o : g.out) out_shape.push_back(o);
    if (channels_last) out_shape.push_back(C);
  }
};

// A pooling window as per-dim [begin, end), clipped to the input.
struct Window {
  int64_t b[3], e[3];
  int64_t clipped_count() const { return (e[0] - b[0]) * (e[1] - b[1]) * (e[2] - b[2]); }
};

// The window of output position o of a plane (row-major over out[0..2]).
Window window_at(const PoolLayout& L, int64_t o) {
  const int64_t p[3] = {o / (L.out[1] * L.out[2]), o / L.out[2] % L.out[1], o % L.out[2]};
  Window w;
  for (int i = 0; i < 3; ++i) {
    const int64_t start = p[i] * L.s[i] - L.pb[i];
    w.b[i] = std::max<int64_t>(start, 0);
    w.e[i] = std::min(start + L.k[i], L.in[i]);
  }
  return w;
}

// Calls fn(out_index, window) for every output position of one plane.
template <class F>
void for_each_window(const PoolLayout& L, F&& fn) {
  for (int64_t o = 0, n = L.out[0] * L.out[1] * L.out[2]; o < n; ++o) fn(o, window_at(L, o));
}

// One channels-first plane of a 1-D or 2-D pool, a row of outputs at a
// time: for each tap, one pass over the outputs it reaches. Each output still
// adds its taps in the window's row-major order, so the float sums are the
// window loop's.
struct AverageRows {
  int64_t H, W, OH, OW, kh, kw, sh, sw, ph, pw;
  TapRanges taps;             // outputs [lo[j], hi[j]) whose tap-j column is inside the row
  std::vector<int64_t> cols;  // columns inside the row per output

  explicit AverageRows(const PoolLayout& L)
      : H(L.in[1]), W(L.in[2]), OH(L.out[1]), OW(L.out[2]), kh(L.k[1]), kw(L.k[2]), sh(L.s[1]), sw(L.s[2]),
        ph(L.pb[1]), pw(L.pb[2]), taps(W, OW, kw, sw, 1, pw), cols(OW, 0) {
    for (int64_t j = 0; j < kw; ++j)
      for (int64_t o = taps.lo[j]; o < taps.hi[j]; ++o) ++cols[o];
  }

  template <class Q>
  void run(const Q* x, Q* y, QParam px, QParam py, bool include_pad, float kernel_count, float* acc) const {
    for (int64_t oh = 0; oh < OH; ++oh) {
      std::fill(acc, acc + OW, 0.f);
      int64_t rows = 0;
      for (int64_t i = 0; i < kh; ++i) {
        const int64_t row = oh * sh - ph + i;
        if (row < 0 || row >= H) continue;
        ++rows;
        for (int64_t j = 0; j < kw; ++j) {
          const Q* src = x + row * W + j - pw;
          for (int64_t o = taps.lo[j]; o < taps.hi[j]; ++o)
            acc[o] += px.scale * static_cast<float>(static_cast<int32_t>(src[o * sw]) - px.zero);
        }
      }
      for (int64_t o = 0; o < OW; ++o) {
        const float count = include_pad ? kernel_count : static_cast<float>(rows * cols[o]);
        y[oh * OW + o] = saturate<Q>(acc[o] / count / py.scale + static_cast<float>(py.zero));
      }
    }
  }
};

// ORT dequantizes each element (x_scale * (x - x_zp)), sums the clipped window
// in float in row-major order, divides by the count (the whole kernel with
// count_include_pad) and quantizes with the zero point added before rounding.
void run_qlinear_average_pool(KernelContext& ctx, const SpatialAttrs& attrs, bool count_include_pad, bool channels_last) {
  const Tensor& X = ctx.input(0);
  for (int64_t dil : attrs.dilations)
    if (dil != 1) kernel_fail("QLinearAveragePool does not support dilations");
  dispatch_q8(X.dtype(), "QLinearAveragePool input X", [&](auto tag) {
    using Q = typename decltype(tag)::type;
    QParam px = read_qparam(ctx, 1, 2, X.dtype(), "x");
    QParam py = read_qparam(ctx, 3, 4, X.dtype(), "y");
    PoolLayout L(X.shape(), attrs, channels_last, "QLinearAveragePool");
    Tensor& Y = ctx.allocate_output(0, X.dtype(), L.out_shape);
    const int64_t in_size = L.in[0] * L.in[1] * L.in[2], out_size = L.out[0] * L.out[1] * L.out[2];
    const int64_t pos_stride = channels_last ? L.C : 1, chan_stride = channels_last ? 1 : in_size;
    const int64_t out_pos_stride = channels_last ? L.C : 1, out_chan_stride = channels_last ? 1 : out_size;
    const float kernel_count = static_cast<float>(L.k[0] * L.k[1] * L.k[2]);
    if (!channels_last && L.k[0] == 1 && L.in[0] == 1 && L.pb[0] == 0) {  // 1-D / 2-D planes: row by row
      const AverageRows rows(L);
      const Q* x = X.data<Q>();
      Q* y = Y.data<Q>();
      ThreadPool* pool = Y.numel() * L.k[1] * L.k[2] >= (1 << 16) ? ctx.thread_pool() : nullptr;
      parallel_for(pool, L.N * L.C, [&](int64_t p0, int64_t p1) {
        std::vector<float> acc(static_cast<size_t>(rows.OW));
        for (int64_t p = p0; p < p1; ++p)
          rows.run(x + p * in_size, y + p * out_size, px, py, count_include_pad, kernel_count, acc.data());
      });
      return;
    }
    const Q* x = X.data<Q>();
    Q* y = Y.data<Q>();
    if (channels_last) {  // every window sums whole channel vectors, in the window loop's order
      ThreadPool* pool = Y.numel() * L.k[0] * L.k[1] * L.k[2] >= (1 << 16) ? ctx.thread_pool() : nullptr;
      parallel_for(pool, L.N * out_size, [&](int64_t o0, int64_t o1) {
        std::vector<float> acc(static_cast<size_t>(L.C));
        for (int64_t no = o0; no < o1; ++no) {
          const Q* xn = x + no / out_size * L.C * in_size;
          const Window w = window_at(L, no % out_size);
          std::fill(acc.begin(), acc.end(), 0.f);
          for (int64_t i0 = w.b[0]; i0 < w.e[0]; ++i0)
            for (int64_t i1 = w.b[1]; i1 < w.e[1]; ++i1)
              for (int64_t i2 = w.b[2]; i2 < w.e[2]; ++i2) {
                const Q* v = xn + ((i0 * L.in[1] + i1) * L.in[2] + i2) * L.C;
                for (int64_t c = 0; c < L.C; ++c)
                  acc[c] += px.scale * static_cast<float>(static_cast<int32_t>(v[c]) - px.zero);
              }
          const float count = count_include_pad ? kernel_count : static_cast<float>(w.clipped_count());
          for (int64_t c = 0; c < L.C; ++c)
            y[no * L.C + c] = saturate<Q>(acc[c] / count / py.scale + static_cast<float>(py.zero));
        }
      });
      return;
    }
    for (int64_t n = 0; n < L.N; ++n)
      for (int64_t c = 0; c < L.C; ++c) {
        const Q* xp = x + n * L.C * in_size + c * chan_stride;
        Q* yp = y + n * L.C * out_size + c * out_chan_stride;
        for_each_window(L, [&](int64_t o, const Window& w) {
          float sum = 0.f;
          for (int64_t i0 = w.b[0]; i0 < w.e[0]; ++i0)
            for (int64_t i1 = w.b[1]; i1 < w.e[1]; ++i1)
              for (int64_t i2 = w.b[2]; i2 < w.e[2]; ++i2) {
                int32_t q = static_cast<int32_t>(xp[((i0 * L.in[1] + i1) * L.in[2] + i2) * pos_stride]);
                sum += px.scale * static_cast<float>(q - px.zero);
              }
          float count = count_include_pad ? kernel_count : static_cast<float>(w.clipped_count());
          float avg = sum / count;
          yp[o * out_pos_stride] = saturate<Q>(avg / py.scale + static_cast<float>(py.zero));
        });
      }
  });
}

// best[c] = max(best[c], x[c]) over C bytes.
template <class Q>
void max_into_scalar(Q* best, const Q* x, int64_t C) {
  for (int64_t c = 0; c < C; ++c) best[c] = std::max(best[c], x[c]);
}

#if defined(__x86_64__) && defined(__GNUC__)
template <class Q>
__attribute__((target("avx2"))) void max_into_avx2(Q* best, const Q* x, int64_t C) {
  int64_t c = 0;
  for (; c + 32 <= C; c += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(best + c));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + c));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(best + c),
                        std::is_signed_v<Q> ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b));
  }
  max_into_scalar(best + c, x + c, C - c);
}

// out[c] = max over the window's taps of tap[t][c], 64 channels at a time in a register, the
// last partial vector masked: ShuffleNet's stem pools 24 channels, which the 32-byte loop
// left to its scalar tail, and a call per tap cost more than the maxima.
template <class Q>
__attribute__((target("avx512f,avx512bw"))) void max_of_taps_avx512(const Q* base, const int64_t* taps, int64_t n,
                                                                    Q* out, int64_t C) {
  const __m512i lowest = _mm512_set1_epi8(static_cast<char>(std::numeric_limits<Q>::lowest()));
  for (int64_t c = 0; c < C; c += 64) {
    const __mmask64 m = C - c >= 64 ? ~__mmask64{0} : (__mmask64{1} << (C - c)) - 1;
    __m512i best = lowest;
    for (int64_t t = 0; t < n; ++t) {
      const __m512i v = _mm512_mask_loadu_epi8(lowest, m, base + taps[t] + c);
      best = std::is_signed_v<Q> ? _mm512_max_epi8(best, v) : _mm512_max_epu8(best, v);
    }
    _mm512_mask_storeu_epi8(out + c, m, best);
  }
}
#endif

// The element offsets of a whole window's taps from its first one, channels-last.
std::vector<int64_t> window_offsets(const PoolLayout& L) {
  std::vector<int64_t> offsets;
  for (int64_t k0 = 0; k0 < L.k[0]; ++k0)
    for (int64_t k1 = 0; k1 < L.k[1]; ++k1)
      for (int64_t k2 = 0; k2 < L.k[2]; ++k2)
        offsets.push_back(((k0 * L.d[0] * L.in[1] + k1 * L.d[1]) * L.in[2] + k2 * L.d[2]) * L.C);
  return offsets;
}

// The inputs of one output pixel's window that lie inside the image: base + offsets[t].
template <class Q>
struct WindowTaps {
  const Q* base;
  const int64_t* offsets;
  int64_t count;
};

// Output pixel p's window. One wholly inside the image (most of them) is its
// first tap plus `window`, shared: per-tap bounds checks and pointers had cost
// more than the maxima (ResNet-50's 3x3 s2 pool on 64x112x112 bytes). A
// border window's taps are listed in `clipped`.
template <class Q>
WindowTaps<Q> window_taps(const PoolLayout& L, const Q* xn, const std::array<int64_t, 3>& p,
                          const std::vector<int64_t>& window, std::vector<int64_t>& clipped) {
  int64_t start[3];
  bool inside = true;
  for (int i = 0; i < 3; ++i) {
    start[i] = p[i] * L.s[i] - L.pb[i];
    inside = inside && start[i] >= 0 && start[i] + (L.k[i] - 1) * L.d[i] < L.in[i];
  }
  if (inside)
    return {xn + ((start[0] * L.in[1] + start[1]) * L.in[2] + start[2]) * L.C, window.data(),
            static_cast<int64_t>(window.size())};
  clipped.clear();
  for (int64_t k0 = 0; k0 < L.k[0]; ++k0) {
    const int64_t i0 = start[0] + k0 * L.d[0];
    if (i0 < 0 || i0 >= L.in[0]) continue;
    for (int64_t k1 = 0; k1 < L.k[1]; ++k1) {
      const int64_t i1 = start[1] + k1 * L.d[1];
      if (i1 < 0 || i1 >= L.in[1]) continue;
      for (int64_t k2 = 0; k2 < L.k[2]; ++k2) {
        const int64_t i2 = start[2] + k2 * L.d[2];
        if (i2 >= 0 && i2 < L.in[2]) clipped.push_back(((i0 * L.in[1] + i1) * L.in[2] + i2) * L.C);
      }
    }
  }
  return {xn, clipped.data(), static_cast<int64_t>(clipped.size())};
}

// Max pooling of an NHWC uint8/int8 tensor (dilations allowed; padding never
// wins): each output pixel's C channels at once, output rows across the pool.
void run_nhwc_max_pool(KernelContext& ctx, const SpatialAttrs& attrs) {
  const Tensor& X = ctx.input(0);
  dispatch_q8(X.dtype(), "NhwcMaxPool input x", [&](auto tag) {
    using Q = typename decltype(tag)::type;
    PoolLayout L(X.shape(), attrs, true, "NhwcMaxPool");
    Tensor& Y = ctx.allocate_output(0, X.dtype(), L.out_shape);
    const int64_t in_size = L.in[0] * L.in[1] * L.in[2], out_size = L.out[0] * L.out[1] * L.out[2];
    const Q* x = X.data<Q>();
    Q* y = Y.data<Q>();
    auto max_into = max_into_scalar<Q>;
    bool wide = false;  // max_of_taps_avx512
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_features().avx2) max_into = max_into_avx2<Q>;
    wide = cpu_features().avx512f && cpu_features().avx512bw;
#endif
    const int64_t rows = L.N * L.out[0] * L.out[1];
    const std::vector<int64_t> window = window_offsets(L);
    parallel_for(Y.numel() * L.k[0] * L.k[1] * L.k[2] >= (1 << 16) ? ctx.thread_pool() : nullptr, rows,
                 [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> clipped;  // a border window's taps inside the image
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / (L.out[0] * L.out[1]), p0 = r / L.out[1] % L.out[0], p1 = r % L.out[1];
        const Q* xn = x + n * in_size * L.C;
        for (int64_t p2 = 0; p2 < L.out[2]; ++p2) {
          Q* best = y + (n * out_size + (p0 * L.out[1] + p1) * L.out[2] + p2) * L.C;
          const WindowTaps<Q> taps = window_taps(L, xn, {p0, p1, p2}, window, clipped);
#if defined(__x86_64__) && defined(__GNUC__)
          if (wide) {
            max_of_taps_avx512(taps.base, taps.offsets, taps.count, best, L.C);
            continue;
          }
#endif
          std::fill(best, best + L.C, std::numeric_limits<Q>::lowest());
          for (int64_t t = 0; t < taps.count; ++t) max_into(best, taps.base + taps.offsets[t], L.C);
        }
      }
    });
  });
}

}  // namespace

void register_contrib_quantization_pool(KernelRegistry& r) {
  r.add("QLinearGlobalAveragePool", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          bool channels_last = ic.get_int("channels_last", 0) != 0;
          return [=](KernelContext& ctx) { run_qlinear_global_average_pool(ctx, channels_last); };
        }),
        kMicrosoft);
  r.add("QLinearAveragePool", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          SpatialAttrs attrs = SpatialAttrs::read(ic);
          bool include_pad = ic.get_int("count_include_pad", 0) != 0;
          bool channels_last = ic.get_int("channels_last", 0) != 0;
          return [=](KernelContext& ctx) { run_qlinear_average_pool(ctx, attrs, include_pad, channels_last); };
        }),
        kMicrosoft);
  r.add("NhwcMaxPool", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          SpatialAttrs attrs = SpatialAttrs::read(ic);
          return [=](KernelContext& ctx) { run_nhwc_max_pool(ctx, attrs); };
        }),
        kMicrosoft);
}

}  // namespace onyx::contrib_q
