#include "cpu/int8_conv.h"
#include "base/cpu_features.h"

#include <algorithm>
#include <cstring>

#include "cpu/geometry_2d.h"
#include "cpu/int8_depthwise.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define ONYX_CONV_X86 1
#endif

namespace onyx {

namespace {

// Output pixel p reads input pixel p: the channel-last input is the GEMM's A.
bool plain_1x1(const Geo2& g) {
  return g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PT == 0 && g.PL == 0 && g.OH == g.H && g.OW == g.W &&
         g.KD == 1 && g.SD == 1 && g.PF == 0 && g.OD == g.D;
}

// n bytes where n is typically one kernel row of a few channels (9 for a
// 3x3 kernel on RGB): overlapping fixed-size moves instead of a library call.
inline void copy_run(uint8_t* d, const uint8_t* s, int64_t n) {
  if (n >= 8 && n <= 16) {
    uint64_t head, tail;
    std::memcpy(&head, s, 8);
    std::memcpy(&tail, s + n - 8, 8);
    std::memcpy(d, &head, 8);
    std::memcpy(d + n - 8, &tail, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t head, tail;
    std::memcpy(&head, s, 4);
    std::memcpy(&tail, s + n - 4, 4);
    std::memcpy(d, &head, 4);
    std::memcpy(d + n - 4, &tail, 4);
  } else {
    std::memcpy(d, s, static_cast<size_t>(n));
  }
}

// One kernel row's KW taps for the output pixel whose first tap is input
// column iw0 of row: columns outside the image take the pad byte.
inline void copy_kernel_row(uint8_t* d, const uint8_t* row, int64_t C, int64_t W, int64_t KW, int64_t iw0,
                            uint8_t pad) {
  const int64_t lo = std::clamp<int64_t>(-iw0, 0, KW), hi = std::clamp<int64_t>(W - iw0, lo, KW);
  if (lo > 0) std::memset(d, pad, static_cast<size_t>(lo * C));
  copy_run(d + lo * C, row + (iw0 + lo) * C, (hi - lo) * C);
  if (hi < KW) std::memset(d + hi * C, pad, static_cast<size_t>((KW - hi) * C));
}

// im2col_rows for 2-D input, one group, undilated kernel rows: a kernel row's
// taps are one run of KW * C bytes. Kernel rows outer and pixels inner, so the
// hot loop is one copy of a fixed size per pixel (a 3x3 kernel on RGB: 9 bytes,
// where the general loop spent ~50 cycles of index arithmetic per pixel).
void im2col_rows_flat(const uint8_t* xh, int64_t C, const Geo2& g, int64_t p0, int64_t rows, uint8_t pad, uint8_t* a,
                      int64_t lda) {
  const int64_t run = g.KW * C;
  for (int64_t r = 0; r < rows;) {
    const int64_t oh = (p0 + r) / g.OW, ow0 = (p0 + r) % g.OW, count = std::min(rows - r, g.OW - ow0);
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      uint8_t* d = a + r * lda + kh * run;
      const int64_t ih = oh * g.SH - g.PT + kh * g.DH;
      if (ih < 0 || ih >= g.H) {
        for (int64_t i = 0; i < count; ++i) std::memset(d + i * lda, pad, static_cast<size_t>(run));
        continue;
      }
      const uint8_t* row = xh + ih * g.W * C;
      for (int64_t i = 0, iw0 = ow0 * g.SW - g.PL; i < count; ++i, d += lda, iw0 += g.SW) {
        if (iw0 >= 0 && iw0 + g.KW <= g.W) copy_run(d, row + iw0 * C, run);
        else copy_kernel_row(d, row, C, g.W, g.KW, iw0, pad);
      }
    }
    r += count;
  }
}

// Rows [p0, p0 + rows) of the im2col matrix of one channel-last image xh
// ([D*H*W][C]) for channels [c0, c0 + Cg): a[r * lda + ((kd * KH + kh) * KW + kw) * Cg + c].
// Padding takes the zero point's byte so that it contributes nothing.
void im2col_rows(const uint8_t* xh, int64_t C, int64_t c0, int64_t Cg, const Geo2& g, int64_t p0, int64_t rows,
                 uint8_t pad, uint8_t* a, int64_t lda) {
  if (g.flat() && g.DW == 1 && Cg == C) return im2col_rows_flat(xh, C, g, p0, rows, pad, a, lda);
  const int64_t tap_plane = g.KH * g.KW * Cg;  // one depth tap's bytes in a row
  int64_t od = p0 / (g.OH * g.OW), oh = p0 / g.OW % g.OH, ow = p0 % g.OW;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t kd = 0; kd < g.KD; ++kd) {
      const int64_t id = od * g.SD - g.PF + kd * g.DD;
      if (id < 0 || id >= g.D) {
        std::memset(a + r * lda + kd * tap_plane, pad, static_cast<size_t>(tap_plane));
        continue;
      }
      const uint8_t* slice = xh + id * g.plane() * C;
      for (int64_t kh = 0; kh < g.KH; ++kh) {
        uint8_t* d = a + r * lda + kd * tap_plane + kh * g.KW * Cg;
        const int64_t ih = oh * g.SH - g.PT + kh * g.DH;
        if (ih < 0 || ih >= g.H) {
          std::memset(d, pad, static_cast<size_t>(g.KW * Cg));
          continue;
        }
        const uint8_t* row = slice + ih * g.W * C + c0;
        const int64_t iw0 = ow * g.SW - g.PL;
        if (g.DW == 1 && Cg == C) {  // the taps of a row are one run of bytes
          copy_kernel_row(d, row, C, g.W, g.KW, iw0, pad);
          continue;
        }
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          const int64_t iw = iw0 + kw * g.DW;
          if (iw < 0 || iw >= g.W) std::memset(d + kw * Cg, pad, static_cast<size_t>(Cg));
          else copy_run(d + kw * Cg, row + iw * C, Cg);
        }
      }
    }
    if (++ow == g.OW) {
      ow = 0;
      if (++oh == g.OH) {
        oh = 0;
        ++od;
      }
    }
  }
}

// Rows of output pixels per task: the im2col block stays in L2 and there are
// enough tasks to share.
int64_t rows_per_task(int64_t pixels, int64_t K, int64_t images, ThreadPool* pool) {
  int64_t rows = std::clamp<int64_t>((int64_t{96} << 10) / std::max<int64_t>(K, 1), 24, 240) / 6 * 6;
  const int threads = pool ? pool->num_threads() : 1;
  while (rows > 24 && images * ((pixels + rows - 1) / rows) < 4 * threads) rows = std::max<int64_t>(24, rows / 2 / 6 * 6);
  return std::min(rows, pixels);
}

// Parts the output channels are split into besides the pixel blocks, so
// that small late layers (7x7: three blocks) still give every thread work.
// Only for one group whose requantized bytes go straight to the output.
int64_t column_parts(int64_t pixel_tasks, int64_t M, int64_t group, bool direct_out, ThreadPool* pool) {
  const int64_t threads = pool ? pool->num_threads() : 1, panels = (M + kInt8GemmPanel - 1) / kInt8GemmPanel;
  if (threads == 1 || group != 1 || !direct_out || pixel_tasks >= 4 * threads) return 1;
  return std::clamp<int64_t>((4 * threads + pixel_tasks - 1) / pixel_tasks, 1, panels);
}

void gemm_conv(const Int8ConvInput& x, const Geo2& g, const Int8ConvWeights& w, const std::vector<int32_t>& wzp,
               const Int8ConvSink& sink, ThreadPool* pool, Int8Isa isa) {
  const int64_t C = x.C, HW = g.D * g.plane(), P = g.pixels(), M = w.M, Mg = M / w.group, Cg = w.Cg;
  const int64_t K = g.KD * g.KH * g.KW * Cg;
  const auto* src = static_cast<const uint8_t*>(x.x);
  // Channel-last copy of the input.
  std::vector<uint8_t> nhwc;
  const uint8_t* xh = src;
  if (!x.channels_last && C > 1 && HW > 1) {
    nhwc.resize(static_cast<size_t>(x.N * HW * C));
    constexpr int64_t kChunk = 256;
    const int64_t chunks = (HW + kChunk - 1) / kChunk;
    parallel_for(x.N * C * HW >= (1 << 15) ? pool : nullptr, x.N * chunks, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / chunks, q0 = t % chunks * kChunk, q1 = std::min(HW, q0 + kChunk);
        transpose_8bit(src + n * C * HW + q0, C, q1 - q0, HW, nhwc.data() + (n * HW + q0) * C, C);
      }
    });
    xh = nhwc.data();
  }
  const bool direct_a = plain_1x1(g);
  const int64_t rows = rows_per_task(P, K, x.N, pool);
  const int64_t blocks = (P + rows - 1) / rows;
  const auto pad = static_cast<uint8_t>(x.zero_point);
  const Int8Requant* rq = sink.requant;
  // Each group's column terms (with its share of the bias), once for all blocks of pixels.
  std::vector<Int8GemmColumns> columns;
  for (int64_t gi = 0; gi < w.group; ++gi) {
    const std::vector<int32_t> b_zp = wzp.size() == 1 ? wzp : std::vector<int32_t>(wzp.begin() + gi * Mg,
                                                                                    wzp.begin() + (gi + 1) * Mg);
    columns.push_back(int8_gemm_columns(w.packed[gi], x.is_signed, {x.zero_point}, b_zp,
                                        rq && rq->bias ? rq->bias + gi * Mg : nullptr));
  }
  const int64_t parts = column_parts(x.N * blocks, M, w.group, rq && sink.channels_last_out, pool);
  const int64_t panels = (M + kInt8GemmPanel - 1) / kInt8GemmPanel;
  parallel_for(pool, x.N * blocks * parts, [&](int64_t t0, int64_t t1) {
    // im2col rows padded with zero bytes to whole groups of 4: the GEMM reads them in place.
    const int64_t lda = (K + 3) / 4 * 4;
    std::vector<uint8_t> a(direct_a ? 0 : static_cast<size_t>(rows * lda), 0);
    std::vector<int32_t> tile(rq ? 0 : static_cast<size_t>(rows * M));
    std::vector<uint8_t> tile8(rq && !sink.channels_last_out ? static_cast<size_t>(rows * M) : 0);
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t t = task / parts, part = task % parts;
      const int64_t n = t / blocks, p0 = t % blocks * rows, count = std::min(rows, P - p0);
      const uint8_t* image = xh + n * HW * C;
      uint8_t* out8 = sink.channels_last_out ? sink.channels_last_out + (n * P + p0) * M : tile8.data();
      for (int64_t gi = 0; gi < w.group; ++gi) {
        Int8A op{nullptr, x.is_signed, lda, false, !direct_a};
        if (direct_a) {
          op.data = image + p0 * C + gi * Cg;
          op.lda = C;
        } else {
          im2col_rows(image, C, gi * Cg, Cg, g, p0, count, pad, a.data(), lda);
          op.data = a.data();
        }
        if (!rq) {
          int8_gemm(count, op, columns[gi], w.packed[gi], tile.data() + gi * Mg, M, isa);
          continue;
        }
        const Int8Requant group_rq{nullptr, rq->mult + gi * Mg, rq->zero, rq->is_signed};
        int8_gemm_requantized(count, op, columns[gi], w.packed[gi], group_rq, out8 + gi * Mg, M, isa,
                              part * panels / parts * kInt8GemmPanel, (part + 1) * panels / parts * kInt8GemmPanel);
      }
      if (!rq) sink.fn(n, 0, M, p0, count, tile.data(), 1, M);
      else if (!sink.channels_last_out) sink.bytes(n, p0, count, tile8.data());
    }
  });
}

// Two taps whose plane offsets differ by one, as the 16-bit pair (lo, hi) of
// one int32: out[i] += lo * base[offset + i] + hi * base[offset + i + 1]. A
// tap without a partner has hi = 0 (its neighbour is read, not counted).
struct TapPair {
  int64_t offset;
  int tap_lo, tap_hi;  // tap_hi < 0: none
};

std::vector<TapPair> pair_taps(const std::vector<int64_t>& offsets) {
  std::vector<TapPair> pairs;
  std::vector<bool> used(offsets.size(), false);
  for (size_t t = 0; t < offsets.size(); ++t) {
    if (used[t]) continue;
    used[t] = true;
    TapPair p{offsets[t], static_cast<int>(t), -1};
    for (size_t u = t + 1; u < offsets.size(); ++u)
      if (!used[u] && offsets[u] == offsets[t] + 1) {
        used[u] = true;
        p.tap_hi = static_cast<int>(u);
        break;
      }
    pairs.push_back(p);
  }
  return pairs;
}

int32_t pack_pair(int32_t lo, int32_t hi) {
  return static_cast<int32_t>(static_cast<uint16_t>(lo) | static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16);
}

// The exact pair sum is < 2^18 in magnitude; the running sum wraps like the
// int32 loop.
void accumulate_pairs_scalar(const int16_t* base, const TapPair* pairs, const int32_t* w, int64_t npairs, int64_t n,
                             int32_t* acc) {
  for (int64_t k = 0; k < npairs; ++k) {
    const int32_t lo = static_cast<int16_t>(w[k] & 0xFFFF), hi = static_cast<int16_t>(w[k] >> 16);
    const int16_t* b = base + pairs[k].offset;
    for (int64_t i = 0; i < n; ++i)
      acc[i] = static_cast<int32_t>(static_cast<uint32_t>(acc[i]) +
                                    static_cast<uint32_t>(lo * b[i] + hi * b[i + 1]));
  }
}

#ifdef ONYX_CONV_X86
// 32 outputs at a time: the int32 lanes of a load at base + offset + i hold
// the pairs of the even outputs, of one at + 1 those of the odd ones, which
// vpmaddwd multiplies and adds exactly; a final interleave restores the order.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void accumulate_pairs_avx512(const int16_t* base,
                                                                                 const TapPair* pairs,
                                                                                 const int32_t* w, int64_t npairs,
                                                                                 int64_t n, int32_t* acc) {
  const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi_idx = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  for (int64_t i = 0; i < n; i += 32) {
    __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
    for (int64_t k = 0; k < npairs; ++k) {
      const int16_t* b = base + pairs[k].offset + i;
      const __m512i wk = _mm512_set1_epi32(w[k]);
      even = _mm512_add_epi32(even, _mm512_madd_epi16(_mm512_loadu_si512(b), wk));
      odd = _mm512_add_epi32(odd, _mm512_madd_epi16(_mm512_loadu_si512(b + 1), wk));
    }
    const int64_t left = n - i;
    const __mmask16 m0 = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __mmask16 m1 = left >= 32 ? __mmask16(0xFFFF) : left <= 16 ? __mmask16(0) : __mmask16((1u << (left - 16)) - 1);
    __m512i r0 = _mm512_permutex2var_epi32(even, lo_idx, odd), r1 = _mm512_permutex2var_epi32(even, hi_idx, odd);
    _mm512_mask_storeu_epi32(acc + i, m0, _mm512_add_epi32(_mm512_maskz_loadu_epi32(m0, acc + i), r0));
    _mm512_mask_storeu_epi32(acc + i + 16, m1, _mm512_add_epi32(_mm512_maskz_loadu_epi32(m1, acc + i + 16), r1));
  }
}
#endif

#ifdef ONYX_CONV_X86
// widen_row for stride 1, or stride 2 where 64 input bytes give the 32 even
// and 32 odd columns as the low and high bytes of 16-bit lanes; masked loads
// and stores for the last, partial vector.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void widen_row_avx512(const uint8_t* src, int64_t W, int64_t sw,
                                                                  bool is_signed, int32_t zp, int64_t pl, int64_t Wq,
                                                                  int16_t* dst) {
  const __m512i z = _mm512_set1_epi16(static_cast<int16_t>(zp)), low = _mm512_set1_epi16(0x00FF);
  auto mask_of = [](int64_t left) { return left >= 32 ? __mmask32(~0u) : __mmask32((1u << left) - 1); };
  if (sw == 1) {
    for (int64_t iw = 0; iw < W; iw += 32) {
      const __mmask32 m = mask_of(W - iw);
      __m256i b = _mm256_maskz_loadu_epi8(m, src + iw);
      __m512i v = is_signed ? _mm512_cvtepi8_epi16(b) : _mm512_cvtepu8_epi16(b);
      _mm512_mask_storeu_epi16(dst + pl + iw, m, _mm512_sub_epi16(v, z));
    }
    return;
  }
  int16_t* even = dst + pl % 2 * Wq + pl / 2;
  int16_t* odd = dst + (pl + 1) % 2 * Wq + (pl + 1) / 2;
  for (int64_t iw = 0; iw < W; iw += 64) {
    const int64_t left = W - iw;
    const __mmask64 m = left >= 64 ? __mmask64(~0ull) : __mmask64((1ull << left) - 1);
    __m512i v = _mm512_maskz_loadu_epi8(m, src + iw);
    __m512i e = is_signed ? _mm512_srai_epi16(_mm512_slli_epi16(v, 8), 8) : _mm512_and_si512(v, low);
    __m512i o = is_signed ? _mm512_srai_epi16(v, 8) : _mm512_srli_epi16(v, 8);
    _mm512_mask_storeu_epi16(even + iw / 2, mask_of((left + 1) / 2), _mm512_sub_epi16(e, z));
    _mm512_mask_storeu_epi16(odd + iw / 2, mask_of(left / 2), _mm512_sub_epi16(o, z));
  }
}

#endif

// Input row (x - x_zp) into the zero-padded row of the plane, phase by phase:
// column col goes to dst[col % SW * Wq + col / SW].
void widen_row(const uint8_t* src, bool is_signed, int32_t zp, const Geo2& g, int64_t Wq, int16_t* dst) {
#ifdef ONYX_CONV_X86
  if (g.SW <= 2 && has_avx512bw_vl()) return widen_row_avx512(src, g.W, g.SW, is_signed, zp, g.PL, Wq, dst);
#endif
  for (int64_t ph = 0; ph < g.SW; ++ph) {
    const int64_t iw0 = ((ph - g.PL) % g.SW + g.SW) % g.SW;  // first iw with (iw + PL) % SW == ph
    int16_t* d = dst + ph * Wq + (iw0 + g.PL) / g.SW;
    int64_t iw = iw0, j = 0;
    if (is_signed) {
      const auto* s = reinterpret_cast<const int8_t*>(src);
      for (; iw < g.W; iw += g.SW, ++j) d[j] = static_cast<int16_t>(s[iw] - zp);
    } else {
      for (; iw < g.W; iw += g.SW, ++j) d[j] = static_cast<int16_t>(src[iw] - zp);
    }
  }
}

// acc[i] += the pair sums of base over i < n (int32, wrapping).
void accumulate_pairs(const int16_t* base, const TapPair* pairs, const int32_t* w, int64_t npairs, int64_t n,
                      int32_t* acc) {
#ifdef ONYX_CONV_X86
  if (has_avx512bw_vl()) return accumulate_pairs_avx512(base, pairs, w, npairs, n, acc);
#endif
  accumulate_pairs_scalar(base, pairs, w, npairs, n, acc);
}

// One output channel per group: sum over the group's input channels and the
// kernel taps of w * (x - x_zp). The input is widened into a zero-padded
// plane split by row and column phase (index % stride), so that output
// (oh, ow) of every tap reads plane[offset + oh * row_len + ow]: the whole
// output is one run over plane positions (a few junk columns per row, which
// are dropped), whatever the row width.
void direct_conv(const Int8ConvInput& x, const Geo2& g, const Int8ConvWeights& w, const std::vector<int32_t>& wzp,
                 const Int8ConvSink& sink, ThreadPool* pool) {
  const int64_t C = x.C, HW = g.H * g.W, P = g.pixels(), M = w.M, Cg = w.Cg, ks = g.KH * g.KW;
  const int64_t Hp = std::max(g.H + g.PT, (g.OH - 1) * g.SH + (g.KH - 1) * g.DH + 1);
  const int64_t Wp = std::max(g.W + g.PL, (g.OW - 1) * g.SW + (g.KW - 1) * g.DW + 1);
  const int64_t Hq = (Hp + g.SH - 1) / g.SH, Wq = (Wp + g.SW - 1) / g.SW, row_len = g.SW * Wq;
  const int64_t run = (g.OH - 1) * row_len + g.OW;
  constexpr int64_t kSlack = 64;  // vector reads past the run's last output
  std::vector<int64_t> tap_offsets;
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t row = kh * g.DH, col = kw * g.DW;
      tap_offsets.push_back((row % g.SH * Hq + row / g.SH) * row_len + col % g.SW * Wq + col / g.SW);
    }
  const std::vector<TapPair> pairs = pair_taps(tap_offsets);
  const auto npairs = static_cast<int64_t>(pairs.size());
  parallel_for(x.N * M * P * ks * Cg >= (1 << 14) ? pool : nullptr, x.N * M, [&](int64_t t0, int64_t t1) {
    // Widening writes the same positions for every channel: the padding
    // stays zero from here on.
    std::vector<int16_t> plane(static_cast<size_t>(g.SH * Hq * row_len + kSlack), 0);
    std::vector<int32_t> sums(static_cast<size_t>(run)), acc(static_cast<size_t>(P)), wv(static_cast<size_t>(npairs));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / M, m = t % M;
      const int32_t z = wzp[wzp.size() == 1 ? 0 : m];
      std::fill(sums.begin(), sums.end(), 0);
      for (int64_t c = 0; c < Cg; ++c) {
        const int32_t* wr = w.raw.data() + (m * Cg + c) * ks;
        for (int64_t k = 0; k < npairs; ++k)
          wv[k] = pack_pair(wr[pairs[k].tap_lo] - z, pairs[k].tap_hi < 0 ? 0 : wr[pairs[k].tap_hi] - z);
        const uint8_t* xc = static_cast<const uint8_t*>(x.x) + (n * C + m * Cg + c) * HW;
        for (int64_t ih = 0; ih < g.H; ++ih) {
          const int64_t r = ih + g.PT;
          widen_row(xc + ih * g.W, x.is_signed, x.zero_point, g, Wq,
                    plane.data() + (r % g.SH * Hq + r / g.SH) * row_len);
        }
        accumulate_pairs(plane.data(), pairs.data(), wv.data(), npairs, run, sums.data());
      }
      for (int64_t oh = 0; oh < g.OH; ++oh)
        std::memcpy(acc.data() + oh * g.OW, sums.data() + oh * row_len, static_cast<size_t>(g.OW) * sizeof(int32_t));
      sink.fn(n, m, m + 1, 0, P, acc.data(), P, 1);
    }
  });
}


}  // namespace

Int8ConvWeights::Int8ConvWeights(const void* w, bool is_signed, int64_t M_, int64_t Cg_, int64_t ksize_,
                                 int64_t group_)
    : M(M_), Cg(Cg_), ksize(ksize_), group(group_) {
  const auto* src = static_cast<const uint8_t*>(w);
  const int64_t K = Cg * ksize;
  if (direct()) {
    raw.resize(static_cast<size_t>(M * K));
    for (int64_t i = 0; i < M * K; ++i) raw[i] = is_signed ? static_cast<int8_t>(src[i]) : src[i];
    return;
  }
  const int64_t Mg = M / group;
  if (ksize == 1) {  // [Mg][Cg] already: each group's rows are packed in place
    for (int64_t gi = 0; gi < group; ++gi) packed.emplace_back(src + gi * Mg * K, is_signed, K, Mg, K, true);
    return;
  }
  std::vector<uint8_t> reordered(static_cast<size_t>(Mg * K));  // [Mg][ksize][Cg]
  for (int64_t gi = 0; gi < group; ++gi) {
    for (int64_t m = 0; m < Mg; ++m)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t k = 0; k < ksize; ++k)
          reordered[(m * ksize + k) * Cg + c] = src[((gi * Mg + m) * Cg + c) * ksize + k];
    packed.emplace_back(reordered.data(), is_signed, K, Mg, K, true);
  }
}

std::shared_ptr<const Int8ConvWeights> prepare_int8_conv_weights(const Tensor* w, int64_t group,
                                                                 const Tensor* w_zero_point) {
  const bool is_8bit = w && (w->dtype() == DataType::UInt8 || w->dtype() == DataType::Int8);
  if (!is_8bit || w->rank() < 3 || w->rank() > 5 || group <= 0 || w->dim(0) % group != 0 || w->dim(1) <= 0 ||
      w->numel() == 0 || (w->rank() == 5 && w->dim(0) == group))  // 3-D: the GEMM path only
    return nullptr;
  auto prepared = std::make_shared<Int8ConvWeights>(w->raw(), w->dtype() == DataType::Int8, w->dim(0), w->dim(1),
                                                    w->numel() / (w->dim(0) * w->dim(1)), group);
  const int64_t zps = w_zero_point ? w_zero_point->numel() : 0;
  if (prepared->direct() && prepared->Cg == 1 && (zps == 1 || zps == prepared->M) &&
      w_zero_point->dtype() == w->dtype()) {
    std::vector<int32_t> wzp(static_cast<size_t>(zps));
    for (int64_t i = 0; i < zps; ++i) wzp[i] = static_cast<int32_t>(w_zero_point->int_at(i));
    prepared->depthwise = plan_int8_depthwise(*prepared, wzp);
  }
  return prepared;
}

void int8_conv(const Int8ConvInput& x, const SpatialGeometry& g, const Int8ConvWeights& w,
               const std::vector<int32_t>& w_zero_points, const Int8ConvSink& sink, ThreadPool* pool) {
  int8_conv(x, g, w, w_zero_points, sink, pool, int8_gemm_best_isa());
}

void int8_conv(const Int8ConvInput& x, const SpatialGeometry& g, const Int8ConvWeights& w,
               const std::vector<int32_t>& w_zero_points, const Int8ConvSink& sink, ThreadPool* pool, Int8Isa isa) {
  const Geo2 g2 = as_2d(g);
  if (x.N == 0 || g2.pixels() == 0 || w.M == 0) return;
  if (!w.direct()) return gemm_conv(x, g2, w, w_zero_points, sink, pool, isa);
  ONYX_CHECK(g2.flat(), "int8_conv: a 3-D convolution with one output channel per group has no fast path");
  if (!x.channels_last) return direct_conv(x, g2, w, w_zero_points, sink, pool);
  if (w.Cg == 1) return int8_depthwise_channels_last(x, g2, w, w_zero_points, sink, pool, isa);
  // Several input channels per output channel, channel-last (rare): the planes loop on a channels-first copy.
  const int64_t HW = g2.H * g2.W;
  std::vector<uint8_t> planes(static_cast<size_t>(x.N * x.C * HW));
  for (int64_t n = 0; n < x.N; ++n)
    transpose_8bit(static_cast<const uint8_t*>(x.x) + n * HW * x.C, HW, x.C, x.C, planes.data() + n * x.C * HW, HW);
  Int8ConvInput chw = x;
  chw.x = planes.data();
  chw.channels_last = false;
  direct_conv(chw, g2, w, w_zero_points, sink, pool);
}

}  // namespace onyx
