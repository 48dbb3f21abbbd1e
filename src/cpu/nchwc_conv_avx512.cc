// AVX-512 micro-kernels of the direct blocked convolution; see
// nchwc_conv_kernel.h. This file is compiled with -mavx512f (and only runs on
// CPUs that have it): it includes nothing but the intrinsics and internal-linkage
// helpers, so no inline library code compiled for AVX-512 can be picked by
// the linker for other files.
//
// A tile keeps NB x P accumulators (16 output channels x one pixel each) in
// zmm registers. For each input channel it loads the NB packed filter vectors
// and broadcasts the input value of each of the P pixels: NB + P loads for
// NB * P FMAs.
#include <immintrin.h>

#include <cstdint>

#include "cpu/nchwc_activate_avx512.h"
#include "cpu/nchwc_conv_kernel.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace onyx::nchwc {

#if defined(__AVX512F__)
namespace {

// Tiles with fewer than 8 accumulators would wait on the FMA latency: they
// keep S sets (alternate input channels go to alternate sets) and add them
// up at the end.
constexpr int split_of(int nb, int p) { return nb * p >= 8 ? 1 : nb * p >= 4 ? 2 : 4; }

// y = act(acc + bias + z); ACT < 0: a.act read at run time.
template <int NB, int P, int ACT>
__attribute__((always_inline)) inline void store_tile(const TileArgs& a, __m512 (&acc)[NB][P]) {
  const int act = ACT < 0 ? a.act : ACT;
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b) {
    __m512 bias = a.bias ? _mm512_loadu_ps(a.bias + b * 16) : _mm512_setzero_ps();
    __mmask16 m = b == NB - 1 ? static_cast<__mmask16>(a.last_mask) : static_cast<__mmask16>(0xFFFF);
    float* y = a.y + b * a.y_block_stride;
    if (a.z) {
      const float* z = a.z + b * a.y_block_stride;
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        __m512 v = _mm512_add_ps(_mm512_add_ps(acc[b][p], bias), _mm512_loadu_ps(z + p * 16));
        _mm512_storeu_ps(y + p * 16, _mm512_maskz_mov_ps(m, activate(v, act, a.p0, a.p1)));
      }
    } else {
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        __m512 v = _mm512_add_ps(acc[b][p], bias);
        _mm512_storeu_ps(y + p * 16, _mm512_maskz_mov_ps(m, activate(v, act, a.p0, a.p1)));
      }
    }
  }
}

// acc += w * x, in place: as inline asm the compiler keeps each accumulator
// in one register (GCC otherwise rotates them through vfmadd132ps + moves
// and spills) and can't fold the filter loads into the FMAs.
inline void fma_acc(__m512& acc, __m512 w, __m512 x) {
  __asm__("vfmadd231ps %[x], %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w), [x] "v"(x));
}

template <int NB, int P, int ICN>
void tile(const TileArgs& a) {
  constexpr bool IC16 = ICN == 16;
  constexpr int S = IC16 ? split_of(NB, P) : 1;
  __m512 acc[S][NB][P];
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b)
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p)
        acc[s][b][p] = (s == 0 && a.accumulate) ? _mm512_loadu_ps(a.y + b * a.y_block_stride + p * 16)
                                                : _mm512_setzero_ps();
  const int64_t px = a.x_px_stride;
  const char* pf = reinterpret_cast<const char*>(a.pf);
  const float* xi = a.x;
  const float* wi = a.w;
  for (int64_t icb = 0; icb < a.icb_count; ++icb, xi += a.x_icb_stride, wi += a.w_icb_stride) {
    const float* xh = xi;
    const float* wh = wi;
    for (int64_t kh = 0; kh < a.kh_count; ++kh, xh += a.x_kh_stride, wh += a.w_kh_stride) {
      const float* xw = xh;
      const float* ww = wh;
      for (int64_t kw = 0; kw < a.kw_count; ++kw, xw += a.x_kw_stride, ww += a.w_kw_stride) {
        if (pf) {
          for (int64_t l = 0; l < a.pf_lines; ++l) _mm_prefetch(pf + l * 64, _MM_HINT_T1);
          pf += a.pf_lines * 64;
        }
        if constexpr (IC16) {
          const float* xp[P];
#pragma GCC unroll 16
          for (int p = 0; p < P; ++p) xp[p] = xw + p * px;
#pragma GCC unroll 16
          for (int ic = 0; ic < 16; ++ic) {
            __m512 wv[NB];
#pragma GCC unroll 4
            for (int b = 0; b < NB; ++b) {
              wv[b] = _mm512_loadu_ps(ww + (ic * NB + b) * 16);
            }
#pragma GCC unroll 16
            for (int p = 0; p < P; ++p) {
              __m512 xv = _mm512_set1_ps(xp[p][ic]);
#pragma GCC unroll 4
              for (int b = 0; b < NB; ++b) fma_acc(acc[ic % S][b][p], wv[b], xv);
            }
          }
        } else if constexpr (ICN > 0) {
          // plain input with ICN channels: one plane per channel
          const int64_t ics = a.x_ic_stride;
#pragma GCC unroll 4
          for (int ic = 0; ic < ICN; ++ic) {
            const float* xc = xw + ic * ics;
            __m512 wv[NB];
#pragma GCC unroll 4
            for (int b = 0; b < NB; ++b) {
              wv[b] = _mm512_loadu_ps(ww + (ic * NB + b) * 16);
              __asm__("" : "+v"(wv[b]));
            }
#pragma GCC unroll 16
            for (int p = 0; p < P; ++p) {
              __m512 xv = _mm512_set1_ps(xc[p * px]);
#pragma GCC unroll 4
              for (int b = 0; b < NB; ++b) fma_acc(acc[0][b][p], wv[b], xv);
            }
          }
        } else {
          const float* xc = xw;
          const float* wc = ww;
          for (int64_t ic = 0; ic < a.ic_inner; ++ic, xc += a.x_ic_stride, wc += NB * 16) {
            __m512 wv[NB];
#pragma GCC unroll 4
            for (int b = 0; b < NB; ++b) {
              wv[b] = _mm512_loadu_ps(wc + b * 16);
            }
#pragma GCC unroll 16
            for (int p = 0; p < P; ++p) {
              __m512 xv = _mm512_set1_ps(xc[p * px]);
#pragma GCC unroll 4
              for (int b = 0; b < NB; ++b) fma_acc(acc[0][b][p], wv[b], xv);
            }
          }
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int s = 1; s < S; ++s)
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b)
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) acc[0][b][p] = _mm512_add_ps(acc[0][b][p], acc[s][b][p]);
  if (!a.finish) {
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b)
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) _mm512_storeu_ps(a.y + b * a.y_block_stride + p * 16, acc[0][b][p]);
    return;
  }
  switch (a.act) {
    case kActNone: store_tile<NB, P, kActNone>(a, acc[0]); break;
    case kActRelu: store_tile<NB, P, kActRelu>(a, acc[0]); break;
    case kActClip: store_tile<NB, P, kActClip>(a, acc[0]); break;
    case kActSwish: store_tile<NB, P, kActSwish>(a, acc[0]); break;
    default: store_tile<NB, P, -1>(a, acc[0]); break;
  }
}

// ---- depthwise rows

// per-row constants of the store, loaded once
struct DwOut {
  __m512 bias[2];
  __mmask16 mask[2];
  float* y;
  const float* z;
  int64_t cb_stride;
  float p0, p1;
  int act;
};

__attribute__((always_inline)) inline DwOut dw_out(const DwRowArgs& a) {
  DwOut o;
  for (int c = 0; c < 2; ++c) {
    o.bias[c] = a.bias && c < a.ncb ? _mm512_loadu_ps(a.bias + c * 16) : _mm512_setzero_ps();
    o.mask[c] = c == a.ncb - 1 ? static_cast<__mmask16>(a.last_mask) : static_cast<__mmask16>(0xFFFF);
  }
  o.y = a.y;
  o.z = a.z;
  o.cb_stride = a.y_cb_stride;
  o.p0 = a.p0;
  o.p1 = a.p1;
  o.act = a.act;
  return o;
}

template <int ACT>
__attribute__((always_inline)) inline void dw_store(const DwOut& o, int c, int64_t ow, __m512 v) {
  v = _mm512_add_ps(v, o.bias[c]);
  if (o.z) v = _mm512_add_ps(v, _mm512_loadu_ps(o.z + c * o.cb_stride + ow * 16));
  v = activate(v, ACT < 0 ? o.act : ACT, o.p0, o.p1);
  _mm512_storeu_ps(o.y + c * o.cb_stride + ow * 16, _mm512_maskz_mov_ps(o.mask[c], v));
}

// NC blocks x P pixels from ow, all taps inside the row
template <int NC, int P, int ACT>
__attribute__((always_inline)) inline void dw_tile(const DwRowArgs& a, const DwOut& o, int64_t ow) {
  __m512 acc[NC][P];
#pragma GCC unroll 2
  for (int c = 0; c < NC; ++c)
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[c][p] = _mm512_setzero_ps();
  const int64_t px = a.SW * 16;
  const float* xh = a.x + (ow * a.SW - a.PW) * 16;
  const float* wh = a.w;
  for (int64_t kh = 0; kh < a.kh_count; ++kh, xh += a.x_kh_stride, wh += a.KW * 16) {
    const float* xw = xh;
    for (int64_t kw = 0; kw < a.KW; ++kw, xw += a.DW * 16) {
#pragma GCC unroll 2
      for (int c = 0; c < NC; ++c) {
        __m512 wv = _mm512_loadu_ps(wh + c * a.w_cb_stride + kw * 16);
        const float* xc = xw + c * a.x_cb_stride;
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) acc[c][p] = _mm512_fmadd_ps(_mm512_loadu_ps(xc + p * px), wv, acc[c][p]);
      }
    }
  }
#pragma GCC unroll 2
  for (int c = 0; c < NC; ++c)
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) dw_store<ACT>(o, c, ow + p, acc[c][p]);
}

// K-wide kernel rows (K = 3, 5 or 7), stride SW (1 or 2), no dilation: each
// input column is loaded once and used by every tap that reads it (loads are
// the limit here: P * SW + K - SW per kernel row instead of K P). EDGE: the
// tile reaches into the left or right padding, whose columns are skipped
// (zeros) - the row's edge pixels run unrolled like the rest instead of
// through the per-pixel loops of dw_edge (at 7x7 and 14x14 those held 2-4 of
// every 7-14 pixels).
template <int NC, int P, int K, int SW, int ACT, bool EDGE>
__attribute__((always_inline)) inline void dw_tile_k(const DwRowArgs& a, const DwOut& o, int64_t ow) {
  __m512 acc[NC][P];
#pragma GCC unroll 2
  for (int c = 0; c < NC; ++c)
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[c][p] = _mm512_setzero_ps();
  constexpr int NI = (P - 1) * SW + K;  // input columns
  const int64_t x0 = ow * SW - a.PW;  // the input column of i = 0
  // interior tiles: a pointer to column x0 (it exists); edge tiles index from
  // the row's start, since x0 may lie before it
  const float* xh = EDGE ? a.x : a.x + x0 * 16;
  const float* wh = a.w;
  // EDGE: bit i set when column x0 + i lies inside the row (one register,
  // where a bound check per column ran the tile out of registers)
  uint32_t inside = 0;
  if constexpr (EDGE) {
    const int64_t lo = x0 < 0 ? -x0 : 0, hi = a.W - x0 < NI ? a.W - x0 : NI;
    if (hi > lo) inside = static_cast<uint32_t>(((uint64_t{1} << hi) - 1) & ~((uint64_t{1} << lo) - 1));
  }
  for (int64_t kh = 0; kh < a.kh_count; ++kh, xh += a.x_kh_stride, wh += K * 16) {
#pragma GCC unroll 2
    for (int c = 0; c < NC; ++c) {
      __m512 w[K];
#pragma GCC unroll 7
      for (int k = 0; k < K; ++k) w[k] = _mm512_loadu_ps(wh + c * a.w_cb_stride + k * 16);
      const float* xc = xh + c * a.x_cb_stride;
#pragma GCC unroll 24
      for (int i = 0; i < NI; ++i) {
        if constexpr (EDGE) {
          if (!(inside & (1u << i))) continue;
        }
        __m512 xv = _mm512_loadu_ps(xc + (EDGE ? x0 + i : i) * 16);
        // keeps xv in a register: GCC otherwise folds the load into each of
        // the K FMAs that read the column, loading it K times (3x3 @112 warm
        // in conv_bench: 66 -> 55 us, @56 75 -> 61 us, 7x7 @56 128 -> 118 us)
        __asm__("" : "+v"(xv));
#pragma GCC unroll 7
        for (int k = 0; k < K; ++k) {
          const int q = i - k;  // pixel q * SW reads column i with tap k
          if (q >= 0 && q % SW == 0 && q / SW < P) acc[c][q / SW] = _mm512_fmadd_ps(xv, w[k], acc[c][q / SW]);
        }
      }
    }
  }
#pragma GCC unroll 2
  for (int c = 0; c < NC; ++c)
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) dw_store<ACT>(o, c, ow + p, acc[c][p]);
}

// Output pixels [ow, end) of a K-wide row in tiles of up to 8 (6 for K = 7,
// whose 2 x 7 weight registers leave room for 12 accumulators only).
template <int NC, int K, int SW, int ACT, bool EDGE>
void dw_run_k(const DwRowArgs& a, const DwOut& o, int64_t ow, int64_t end) {
  constexpr int kTile = K <= 5 ? 8 : 6;
  for (; ow + kTile <= end; ow += kTile) dw_tile_k<NC, kTile, K, SW, ACT, EDGE>(a, o, ow);
  switch (end - ow) {
    case 7: if constexpr (kTile > 7) dw_tile_k<NC, 7, K, SW, ACT, EDGE>(a, o, ow); break;
    case 6: if constexpr (kTile > 6) dw_tile_k<NC, 6, K, SW, ACT, EDGE>(a, o, ow); break;
    case 5: dw_tile_k<NC, 5, K, SW, ACT, EDGE>(a, o, ow); break;
    case 4: dw_tile_k<NC, 4, K, SW, ACT, EDGE>(a, o, ow); break;
    case 3: dw_tile_k<NC, 3, K, SW, ACT, EDGE>(a, o, ow); break;
    case 2: dw_tile_k<NC, 2, K, SW, ACT, EDGE>(a, o, ow); break;
    case 1: dw_tile_k<NC, 1, K, SW, ACT, EDGE>(a, o, ow); break;
    default: break;
  }
}

// A K-wide row: the pixels whose windows leave the input ([0, lo), [hi, OW))
// in their own small EDGE tiles, so the interior tiles carry no checks.
template <int NC, int K, int SW, int ACT>
void dw_row_k(const DwRowArgs& a, const DwOut& o, int64_t lo, int64_t hi) {
  // Short stride-1 rows with edges on both sides: two or three EDGE tiles
  // of 8 beat the split into edge pixels, a short interior tile and edge
  // pixels (5x5 at 7x7: 0.69x -> 0.98x oneDNN's speed). With stride 2 the
  // split wins (3x3 at 28x28 s2: 0.99x against 0.78x).
  if (SW == 1 && a.OW <= 16 && (lo > 0 || hi < a.OW)) {
    dw_run_k<NC, K, SW, ACT, true>(a, o, 0, a.OW);
    return;
  }
  dw_run_k<NC, K, SW, ACT, true>(a, o, 0, lo);
  dw_run_k<NC, K, SW, ACT, false>(a, o, lo, hi);
  dw_run_k<NC, K, SW, ACT, true>(a, o, hi, a.OW);
}

// one pixel over its valid taps
template <int NC, int ACT>
__attribute__((always_inline)) inline void dw_edge(const DwRowArgs& a, const DwOut& o, int64_t ow) {
  const int64_t i0 = ow * a.SW - a.PW;
  int64_t lo = i0 < 0 ? (-i0 + a.DW - 1) / a.DW : 0;
  int64_t hi = a.W - 1 - i0 < 0 ? 0 : (a.W - 1 - i0) / a.DW + 1;
  if (hi > a.KW) hi = a.KW;
  __m512 acc[NC][2];
#pragma GCC unroll 2
  for (int c = 0; c < NC; ++c) acc[c][0] = acc[c][1] = _mm512_setzero_ps();
  const float* xh = a.x + i0 * 16;
  const float* wh = a.w;
  for (int64_t kh = 0; kh < a.kh_count; ++kh, xh += a.x_kh_stride, wh += a.KW * 16)
    for (int64_t kw = lo; kw < hi; ++kw)
#pragma GCC unroll 2
      for (int c = 0; c < NC; ++c)
        acc[c][kw & 1] = _mm512_fmadd_ps(_mm512_loadu_ps(xh + c * a.x_cb_stride + kw * a.DW * 16),
                                         _mm512_loadu_ps(wh + c * a.w_cb_stride + kw * 16), acc[c][kw & 1]);
#pragma GCC unroll 2
  for (int c = 0; c < NC; ++c) dw_store<ACT>(o, c, ow, _mm512_add_ps(acc[c][0], acc[c][1]));
}

template <int NC, int ACT>
void dw_row_t(const DwRowArgs& a) {
  const DwOut o = dw_out(a);
  const DwOut& out = o;
  const int64_t OW = a.OW;
  int64_t lo = (a.PW + a.SW - 1) / a.SW;
  if (lo > OW) lo = OW;
  const int64_t last = a.W - 1 + a.PW - (a.KW - 1) * a.DW;  // the last pixel whose taps all lie inside
  int64_t hi = last < 0 ? 0 : last / a.SW + 1;
  if (hi > OW) hi = OW;
  if (hi < lo) hi = lo;
  if ((a.KW == 3 || a.KW == 5 || a.KW == 7) && a.DW == 1 && (a.SW == 1 || a.SW == 2)) {
    if (a.KW == 3) {
      if (a.SW == 1) dw_row_k<NC, 3, 1, ACT>(a, o, lo, hi);
      else dw_row_k<NC, 3, 2, ACT>(a, o, lo, hi);
    } else if (a.KW == 5) {
      if (a.SW == 1) dw_row_k<NC, 5, 1, ACT>(a, o, lo, hi);
      else dw_row_k<NC, 5, 2, ACT>(a, o, lo, hi);
    } else {
      if (a.SW == 1) dw_row_k<NC, 7, 1, ACT>(a, o, lo, hi);
      else dw_row_k<NC, 7, 2, ACT>(a, o, lo, hi);
    }
    return;
  }
  for (int64_t ow = 0; ow < lo; ++ow) dw_edge<NC, ACT>(a, o, ow);
  int64_t ow = lo;
  for (; ow + 8 <= hi; ow += 8) dw_tile<NC, 8, ACT>(a, o, ow);
  switch (hi - ow) {
    case 7: dw_tile<NC, 7, ACT>(a, o, ow); break;
    case 6: dw_tile<NC, 6, ACT>(a, o, ow); break;
    case 5: dw_tile<NC, 5, ACT>(a, o, ow); break;
    case 4: dw_tile<NC, 4, ACT>(a, o, ow); break;
    case 3: dw_tile<NC, 3, ACT>(a, o, ow); break;
    case 2: dw_tile<NC, 2, ACT>(a, o, ow); break;
    case 1: dw_tile<NC, 1, ACT>(a, o, ow); break;
    default: break;
  }
  for (int64_t o = hi; o < OW; ++o) dw_edge<NC, ACT>(a, out, o);
}

template <int ACT>
void dw_row_act(const DwRowArgs& a) {
  if (a.ncb == 2) dw_row_t<2, ACT>(a);
  else dw_row_t<1, ACT>(a);
}

void dw_row(const DwRowArgs& a) {
  switch (a.act) {
    case kActNone: dw_row_act<kActNone>(a); break;
    case kActRelu: dw_row_act<kActRelu>(a); break;
    case kActClip: dw_row_act<kActClip>(a); break;
    case kActSwish: dw_row_act<kActSwish>(a); break;
    default: dw_row_act<-1>(a); break;
  }
}

template <int NB, int ICN, int P>
TileFn pick_rec(int p) {
  if constexpr (P == 0) {
    return nullptr;
  } else {
    return p == P ? &tile<NB, P, ICN> : pick_rec<NB, ICN, P - 1>(p);
  }
}

template <int NB>
TileFn pick_nb(int p, int ic) {
  if (p < 1 || p > max_pixels(NB)) return nullptr;
  if (ic == 16) return pick_rec<NB, 16, max_pixels(NB)>(p);
  if (ic == 3) return pick_rec<NB, 3, max_pixels(NB)>(p);
  return pick_rec<NB, 0, max_pixels(NB)>(p);
}

}  // namespace

TileFn tile_kernel_avx512(int nb, int p, int ic) {
  switch (nb) {
    case 1: return pick_nb<1>(p, ic);
    case 2: return pick_nb<2>(p, ic);
    case 3: return pick_nb<3>(p, ic);
    case 4: return pick_nb<4>(p, ic);
    default: return nullptr;
  }
}

DwRowFn dw_row_kernel_avx512() { return &dw_row; }

#else  // built without AVX-512: nchwc_direct_available() is false and these are never asked for

TileFn tile_kernel_avx512(int, int, int) { return nullptr; }
DwRowFn dw_row_kernel_avx512() { return nullptr; }

#endif

}  // namespace onyx::nchwc
