// Cache-blocked float32 GEMM (Goto/BLIS loop order) with packed panels and a
// register-tiled micro-kernel picked once per CPU: 8x32 with AVX-512, 6x16
// with AVX2+FMA, 4x16 portable C++. The AVX kernels are compiled with target
// attributes, so the build flags stay portable. Constant B matrices can be
// packed once (gemm_pack_b) and multiplied without packing at every call.
// Bias and activation are applied in the micro-kernel's epilogue, on the tile
// while it is in cache.
#include "cpu/gemm.h"
#include "base/cpu_features.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/aligned_memory.h"
#include "cpu/gemm_vmath.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "cpu/exp_avx2.h"
#include "cpu/exp_avx512.h"
#define ONYX_GEMM_X86 1
#define ONYX_TARGET_AVX2 __attribute__((target("avx2,fma")))
#endif

namespace onyx {
namespace {

// KC 1024 rather than 256: BERT-sized products (M=128, K=768..3072) then make
// one or few passes over K, so the C block is not re-read from L3 per pass.
// Thread-CPU-time bench (bench/gemm_bench.cc, 1 thread): 128x768x768 207 ->
// 216, 128x2304x768 187 -> 204, 1024^3 150 -> 187 GFLOP/s (medians of 2).
constexpr int64_t KC = 1024;
constexpr int64_t MC = 128;   // rows of A per block, nominally (see row_block)
constexpr int64_t NC = 1024;  // multiple of every NR

// C[mr x nr] = (load_c ? C : 0) + alpha * A_panel * B_panel (+ bias[c])
// (+ row_bias[r]).
// a_ld == 0: A is a packed panel; else A's rows are read in place with that
// stride (only kernels with Arch::direct_a support it).
// act: the activation to apply to the finished tile; only kernels with
// Arch::fuses_activation read it (the others' tiles get apply_activation_tile).
using MicroKernel = void (*)(int64_t kc, const float* a, int64_t a_ld, const float* b, float* c, int64_t ldc, int mr,
                             int nr, bool load_c, float alpha, const float* bias, const float* row_bias,
                             GemmActivation act);

// ---- portable 4x16 ----
constexpr int kGenericMR = 4, kGenericNR = 16;
void micro_generic(int64_t kc, const float* __restrict a, int64_t a_ld, const float* __restrict b, float* __restrict c, int64_t ldc,
                   int mr, int nr, bool load_c, float alpha, const float* bias, const float* row_bias,
                   GemmActivation /*act*/) {
  float acc[kGenericMR][kGenericNR] = {};
  for (int64_t k = 0; k < kc; ++k) {
    for (int r = 0; r < kGenericMR; ++r)
      for (int j = 0; j < kGenericNR; ++j) acc[r][j] += a[r] * b[j];
    a += kGenericMR;
    b += kGenericNR;
  }
  for (int r = 0; r < mr; ++r)
    for (int j = 0; j < nr; ++j) {
      float v = alpha * acc[r][j] + (bias ? bias[j] : 0.0f) + (row_bias ? row_bias[r] : 0.0f);
      c[r * ldc + j] = load_c ? c[r * ldc + j] + v : v;
    }
}

#ifdef ONYX_GEMM_X86
// ---- AVX2 6x16 ----
// The activation on one vector of a finished tile, in registers.
ONYX_TARGET_AVX2 __attribute__((always_inline)) inline __m256 activate8_avx2(__m256 v, GemmActivation act) {
  switch (act) {
    case GemmActivation::None: return v;
    case GemmActivation::Relu: return _mm256_max_ps(v, _mm256_setzero_ps());
    case GemmActivation::Gelu: return gelu8_avx2(v);
    case GemmActivation::GeluTanh: return gelu_tanh8_avx2(v);
    case GemmActivation::Swish: return _mm256_mul_ps(v, sigmoid8_avx2(v));
  }
  return v;
}

// R of the panel's 6 rows: a GEMM of fewer rows than 6 (a recurrent step's
// batch, a decode step's one token) multiplies only those. With one or two
// rows, S sets of sums over alternating k: a single chain of dependent FMAs
// per vector would wait on each FMA's latency. Row r's k-th value is
// a[r * a_ld + k] (A read in place) or, with a_ld == 0, a[k * 6 + r] (a
// packed panel: Packed).
template <int R, bool Packed>
ONYX_TARGET_AVX2 void micro_avx2_rows(int64_t kc, const float* __restrict a, int64_t a_ld, const float* __restrict b,
                                      float* __restrict c, int64_t ldc, int mr, int nr, bool load_c, float alpha,
                                      const float* bias, const float* row_bias, GemmActivation act) {
  constexpr int S = R == 1 ? 4 : R == 2 ? 2 : 1;
  __m256 sums[S][R][2];
#pragma GCC unroll 4
  for (int q = 0; q < S; ++q)
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) sums[q][r][0] = sums[q][r][1] = _mm256_setzero_ps();
  constexpr int64_t step = Packed ? 6 : 1;
  const float* ar[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) ar[r] = Packed ? a + r : a + r * a_ld;
  int64_t k = 0;
  for (; k + S <= kc; k += S) {
#pragma GCC unroll 4
    for (int q = 0; q < S; ++q) {
      const __m256 b0 = _mm256_loadu_ps(b + 16 * q), b1 = _mm256_loadu_ps(b + 16 * q + 8);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(ar[r] + (k + q) * step);
        sums[q][r][0] = _mm256_fmadd_ps(av, b0, sums[q][r][0]);
        sums[q][r][1] = _mm256_fmadd_ps(av, b1, sums[q][r][1]);
      }
    }
    b += 16 * S;
  }
  for (; k < kc; ++k, b += 16) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(ar[r] + k * step);
      sums[0][r][0] = _mm256_fmadd_ps(av, b0, sums[0][r][0]);
      sums[0][r][1] = _mm256_fmadd_ps(av, b1, sums[0][r][1]);
    }
  }
  // A partial panel's lanes past nr are masked: neither read nor written.
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lane);
  const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8), lane);
  const bool full = nr == 16;
  const __m256 va = _mm256_set1_ps(alpha);
  const __m256 bias0 = bias ? _mm256_maskload_ps(bias, m0) : _mm256_setzero_ps();
  const __m256 bias1 = bias ? _mm256_maskload_ps(bias + 8, m1) : _mm256_setzero_ps();
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    if (r >= mr) break;
    __m256 acc0 = sums[0][r][0], acc1 = sums[0][r][1];
#pragma GCC unroll 4
    for (int q = 1; q < S; ++q) {
      acc0 = _mm256_add_ps(acc0, sums[q][r][0]);
      acc1 = _mm256_add_ps(acc1, sums[q][r][1]);
    }
    float* cr = c + r * ldc;
    __m256 v0 = _mm256_fmadd_ps(acc0, va, bias0), v1 = _mm256_fmadd_ps(acc1, va, bias1);
    if (row_bias) {
      v0 = _mm256_add_ps(v0, _mm256_set1_ps(row_bias[r]));
      v1 = _mm256_add_ps(v1, _mm256_set1_ps(row_bias[r]));
    }
    if (load_c) {
      v0 = _mm256_add_ps(v0, full ? _mm256_loadu_ps(cr) : _mm256_maskload_ps(cr, m0));
      v1 = _mm256_add_ps(v1, full ? _mm256_loadu_ps(cr + 8) : _mm256_maskload_ps(cr + 8, m1));
    }
    v0 = activate8_avx2(v0, act);
    v1 = activate8_avx2(v1, act);
    if (full) {
      _mm256_storeu_ps(cr, v0);
      _mm256_storeu_ps(cr + 8, v1);
    } else {
      _mm256_maskstore_ps(cr, m0, v0);
      _mm256_maskstore_ps(cr + 8, m1, v1);
    }
  }
}

template <int R>
ONYX_TARGET_AVX2 void micro_avx2_r(int64_t kc, const float* a, int64_t a_ld, const float* b, float* c, int64_t ldc,
                                   int mr, int nr, bool load_c, float alpha, const float* bias, const float* row_bias,
                                   GemmActivation act) {
  if (a_ld == 0) micro_avx2_rows<R, true>(kc, a, a_ld, b, c, ldc, mr, nr, load_c, alpha, bias, row_bias, act);
  else micro_avx2_rows<R, false>(kc, a, a_ld, b, c, ldc, mr, nr, load_c, alpha, bias, row_bias, act);
}

ONYX_TARGET_AVX2 void micro_avx2(int64_t kc, const float* __restrict a, int64_t a_ld, const float* __restrict b,
                                 float* __restrict c, int64_t ldc, int mr, int nr, bool load_c, float alpha,
                                 const float* bias, const float* row_bias, GemmActivation act) {
  switch (mr) {
    case 1: return micro_avx2_r<1>(kc, a, a_ld, b, c, ldc, mr, nr, load_c, alpha, bias, row_bias, act);
    case 2: return micro_avx2_r<2>(kc, a, a_ld, b, c, ldc, mr, nr, load_c, alpha, bias, row_bias, act);
    case 3: return micro_avx2_r<3>(kc, a, a_ld, b, c, ldc, mr, nr, load_c, alpha, bias, row_bias, act);
    case 4: return micro_avx2_r<4>(kc, a, a_ld, b, c, ldc, mr, nr, load_c, alpha, bias, row_bias, act);
    case 5: return micro_avx2_r<5>(kc, a, a_ld, b, c, ldc, mr, nr, load_c, alpha, bias, row_bias, act);
    default: return micro_avx2_r<6>(kc, a, a_ld, b, c, ldc, mr, nr, load_c, alpha, bias, row_bias, act);
  }
}

// ---- AVX-512 8x32 ----
// acc[r] += A row r x the 32-column panel b, for R rows of A read in place
// (a[r * a_ld + k]; rows past mr repeat the last one). U k-steps run in
// flight on acc[u * R + r] (R * U <= 8), summed into acc[r] at the end: with
// few rows, one chain per accumulator waited on the FMA latency (two rows:
// 4 chains, 147 GFLOP/s on a recurrent step's 2 x 256 x 64).
template <int R, int U>
ONYX_TARGET_AVX512 __attribute__((always_inline)) inline void rows_in_place(int64_t kc, const float* a, int64_t a_ld,
                                                                             int mr, const float* __restrict b,
                                                                             __m512 (*acc)[2]) {
  static_assert(R * U <= 8, "16 accumulators");
  const float* ar[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) ar[r] = a + (r < mr ? r : mr - 1) * a_ld;
  int64_t k = 0;
#pragma GCC unroll 2
  for (; k + U <= kc; k += U) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const __m512 b0 = _mm512_loadu_ps(b + u * 32), b1 = _mm512_loadu_ps(b + u * 32 + 16);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_set1_ps(ar[r][k + u]);
        acc[u * R + r][0] = _mm512_fmadd_ps(av, b0, acc[u * R + r][0]);
        acc[u * R + r][1] = _mm512_fmadd_ps(av, b1, acc[u * R + r][1]);
      }
    }
    b += U * 32;
  }
  for (; k < kc; ++k, b += 32) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(ar[r][k]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 4
  for (int u = 1; u < U; ++u)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      acc[r][0] = _mm512_add_ps(acc[r][0], acc[u * R + r][0]);
      acc[r][1] = _mm512_add_ps(acc[r][1], acc[u * R + r][1]);
    }
}

ONYX_TARGET_AVX512 void micro_avx512(int64_t kc, const float* __restrict a, int64_t a_ld, const float* __restrict b,
                                     float* __restrict c, int64_t ldc, int mr, int nr, bool load_c, float alpha,
                                     const float* bias, const float* row_bias, GemmActivation act) {
  __m512 acc[8][2];
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  if (mr == 1) {
    // One row (a classifier's Gemm at batch 1): the 8-row tile spent 7/8 of
    // its FMAs on padding. Four k-steps in flight keep 8 independent chains.
    const int64_t step = a_ld == 0 ? 8 : 1;
    int64_t k = 0;
    for (; k + 4 <= kc; k += 4) {
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        __m512 av = _mm512_set1_ps(a[(k + u) * step]);
        acc[u][0] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + (k + u) * 32), acc[u][0]);
        acc[u][1] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + (k + u) * 32 + 16), acc[u][1]);
      }
    }
    for (; k < kc; ++k) {
      __m512 av = _mm512_set1_ps(a[k * step]);
      acc[0][0] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + k * 32), acc[0][0]);
      acc[0][1] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + k * 32 + 16), acc[0][1]);
    }
    acc[0][0] = _mm512_add_ps(_mm512_add_ps(acc[0][0], acc[1][0]), _mm512_add_ps(acc[2][0], acc[3][0]));
    acc[0][1] = _mm512_add_ps(_mm512_add_ps(acc[0][1], acc[1][1]), _mm512_add_ps(acc[2][1], acc[3][1]));
  } else if (a_ld == 0) {  // packed panel: a[k * 8 + r]
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; ++k) {
      __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        __m512 av = _mm512_set1_ps(a[r]);
        acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
      }
      a += 8;
      b += 32;
    }
  } else if (mr == 2) {  // two rows in place (a recurrent step's batch of 2)
    rows_in_place<2, 4>(kc, a, a_ld, mr, b, acc);
  } else if (mr <= 4) {  // 3-4 rows in place: half the 8-row tile's FMAs
    rows_in_place<4, 2>(kc, a, a_ld, mr, b, acc);
  } else {  // rows of A read in place: a[r * a_ld + k]
    rows_in_place<8, 1>(kc, a, a_ld, mr, b, acc);
  }
  const __m512 va = _mm512_set1_ps(alpha);
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? __mmask16(0xFFFF) : nr > 16 ? __mmask16((1u << (nr - 16)) - 1) : __mmask16(0);
  const __m512 bias0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 bias1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    if (r >= mr) break;
    float* cr = c + r * ldc;
    __m512 v0 = _mm512_fmadd_ps(acc[r][0], va, bias0), v1 = _mm512_fmadd_ps(acc[r][1], va, bias1);
    if (row_bias) {
      v0 = _mm512_add_ps(v0, _mm512_set1_ps(row_bias[r]));
      v1 = _mm512_add_ps(v1, _mm512_set1_ps(row_bias[r]));
    }
    if (load_c) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    switch (act) {  // on the tile in registers: no second pass over C
      case GemmActivation::None: break;
      case GemmActivation::Relu:
        v0 = _mm512_max_ps(v0, _mm512_setzero_ps());
        v1 = _mm512_max_ps(v1, _mm512_setzero_ps());
        break;
      case GemmActivation::Gelu:
        v0 = gelu16_avx512(v0);
        v1 = gelu16_avx512(v1);
        break;
      case GemmActivation::GeluTanh:
        v0 = gelu_tanh16_avx512(v0);
        v1 = gelu_tanh16_avx512(v1);
        break;
      case GemmActivation::Swish:
        v0 = _mm512_mul_ps(v0, sigmoid16_avx512(v0));
        v1 = _mm512_mul_ps(v1, sigmoid16_avx512(v1));
        break;
    }
    _mm512_mask_storeu_ps(cr, m0, v0);
    _mm512_mask_storeu_ps(cr + 16, m1, v1);
  }
}
#endif

// One row of a packed panel: `count` <= Width floats from src, zero-padded.
template <int Width>
inline void copy_panel_row(float* d, const float* src, int64_t count) {
  if (count == Width) {
    std::memcpy(d, src, Width * sizeof(float));
  } else {
    for (int c = 0; c < Width; ++c) d[c] = c < count ? src[c] : 0.0f;
  }
}

// pack_a for op(A) = A^T, where row k of A holds column k of op(A): a panel's
// k-th MR floats are one contiguous run. Eight rows of A at a time, each read
// front to back across the panels, instead of kc rows a panel apart per panel
// (the loads of that order missed: a ConvTranspose's 3136 x 128 A packed at
// ~0.6 ns a float).
template <int MR>
void pack_a_transposed(const float* A, int64_t lda, int64_t i0, int64_t p0, int64_t mc, int64_t kc, float* dst) {
  constexpr int64_t kRows = 8;
  for (int64_t k0 = 0; k0 < kc; k0 += kRows) {
    const int64_t k1 = std::min(kc, k0 + kRows);
    for (int64_t ip = 0; ip < mc; ip += MR) {
      const int64_t rows = std::min<int64_t>(MR, mc - ip);
      float* panel = dst + ip * kc;
      for (int64_t k = k0; k < k1; ++k) copy_panel_row<MR>(panel + k * MR, A + (p0 + k) * lda + i0 + ip, rows);
    }
  }
}

// Packs op(A)[i0:i0+mc, p0:p0+kc] into MR-row panels, zero-padded.
template <int MR>
void pack_a(bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t p0, int64_t mc, int64_t kc, float* dst) {
  if (trans_a) return pack_a_transposed<MR>(A, lda, i0, p0, mc, kc, dst);
  for (int64_t ip = 0; ip < mc; ip += MR) {
    int64_t rows = std::min<int64_t>(MR, mc - ip);
    const float* src[MR];
    for (int r = 0; r < MR; ++r) src[r] = A + (i0 + ip + std::min<int64_t>(r, rows - 1)) * lda + p0;
    if (rows == MR) {
      for (int64_t k = 0; k < kc; ++k)
        for (int r = 0; r < MR; ++r) dst[k * MR + r] = src[r][k];
    } else {
      for (int64_t k = 0; k < kc; ++k)
        for (int r = 0; r < MR; ++r) dst[k * MR + r] = r < rows ? src[r][k] : 0.0f;
    }
    dst += kc * MR;
  }
}

// Packs B[0:kc, j0:j0+nc] into NR-column panels, zero-padded, where row k of
// B starts at row(k). Row by row, front to back, the row kAhead below
// prefetched: panel by panel (down kc rows a row stride apart) read memory in
// an order the prefetchers could not follow (a 64 x 3136 x 432 product with B
// from memory: 139 -> 163 GFLOP/s, packing included; from L3: 205 -> 211).
template <int NR, class RowFn>
void pack_b_by_rows(RowFn row, int64_t j0, int64_t kc, int64_t nc, float* dst) {
  constexpr int64_t kAhead = 4;
  for (int64_t k = 0; k < kc; ++k) {
    if (k + kAhead < kc) {
      const char* ahead = reinterpret_cast<const char*>(row(k + kAhead) + j0);
      for (int64_t byte = 0; byte < nc * static_cast<int64_t>(sizeof(float)); byte += 64)
        __builtin_prefetch(ahead + byte, 0, 3);
    }
    const float* src = row(k) + j0;
    for (int64_t jp = 0; jp < nc; jp += NR)
      copy_panel_row<NR>(dst + jp * kc + k * NR, src + jp, std::min<int64_t>(NR, nc - jp));
  }
}

// Packs op(B)[p0:p0+kc, j0:j0+nc] into NR-column panels, zero-padded.
template <int NR>
void pack_b(bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t j0, int64_t kc, int64_t nc, float* dst) {
  if (!trans_b) return pack_b_by_rows<NR>([&](int64_t k) { return B + (p0 + k) * ldb; }, j0, kc, nc, dst);
  for (int64_t jp = 0; jp < nc; jp += NR) {
    int64_t cols = std::min<int64_t>(NR, nc - jp);
    for (int c = 0; c < NR; ++c) {
      if (c < cols) {
        const float* src = B + (j0 + jp + c) * ldb + p0;
        for (int64_t k = 0; k < kc; ++k) dst[k * NR + c] = src[k];
      } else {
        for (int64_t k = 0; k < kc; ++k) dst[k * NR + c] = 0.0f;
      }
    }
    dst += kc * NR;
  }
}

// pack_b for B given as row pointers: rows[p0 + k] holds row p0 + k.
template <int NR>
void pack_b_rows(const float* const* rows, int64_t p0, int64_t j0, int64_t kc, int64_t nc, float* dst) {
  pack_b_by_rows<NR>([&](int64_t k) { return rows[p0 + k]; }, j0, kc, nc, dst);
}

using PackAFn = void (*)(bool, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, float*);
using PackBFn = void (*)(bool, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, float*);
using PackBRowsFn = void (*)(const float* const*, int64_t, int64_t, int64_t, int64_t, float*);

struct Arch {
  int mr, nr;
  bool direct_a;    // the kernel reads non-transposed A in place (no packing)
  bool fuses_activation;  // the kernel applies the epilogue's activation itself
  // Rows of A a multiple of 4 KB apart share one L1 set: the AVX2 kernel's 6
  // rows and B's line then overflow an 8-way L1 (128 x 768 x 3072 5% slower
  // in place than packed), so such A is packed.
  bool packs_a_at_4k_strides;
  MicroKernel kernel;
  PackAFn pack_a;
  PackBFn pack_b;
  PackBRowsFn pack_b_rows;
};

Arch pick_arch() {
#ifdef ONYX_GEMM_X86
  const CpuFeatures& f = cpu_features();
  if (has_avx512f_dq_vl()) return {8, 32, true, true, false, micro_avx512, pack_a<8>, pack_b<32>, pack_b_rows<32>};
  if (f.avx2 && f.fma) return {6, 16, true, true, true, micro_avx2, pack_a<6>, pack_b<16>, pack_b_rows<16>};
#endif
  return {kGenericMR,         kGenericNR,          false, false, false, micro_generic, pack_a<kGenericMR>,
          pack_b<kGenericNR>, pack_b_rows<kGenericNR>};
}

const Arch& arch() {
  static const Arch a = pick_arch();
  return a;
}

void apply_activation_tile(float* c, int64_t ldc, int mr, int nr, GemmActivation act) {
  for (int r = 0; r < mr; ++r) {
    float* row = c + r * ldc;
    switch (act) {
      case GemmActivation::None: break;
      case GemmActivation::Relu:
        for (int j = 0; j < nr; ++j) row[j] = row[j] > 0.0f ? row[j] : 0.0f;
        break;
      case GemmActivation::Gelu: vm::gelu_erf(row, row, nr); break;
      case GemmActivation::GeluTanh: vm::gelu_tanh(row, row, nr); break;
      case GemmActivation::Swish: vm::swish(row, row, nr, 1.0f); break;
    }
  }
}

// One GEMM call's operands. B is either raw (B with ldb, or its rows in
// b_rows) or pre-packed.
struct Job {
  bool trans_a = false, trans_b = false;
  const float* A = nullptr;
  int64_t lda = 0;
  const float* B = nullptr;
  int64_t ldb = 0;
  const float* const* b_rows = nullptr;
  const float* packed = nullptr;
  int64_t n_padded = 0;
  int64_t K = 0;
  float alpha = 1.0f;
  bool load_c = false;  // accumulate into C (beta != 0, C pre-scaled)
  float* C = nullptr;
  int64_t ldc = 0;
  GemmEpilogue epi;
};

// Whether the kernel reads A's rows where they lie, skipping the packing.
bool reads_a_in_place(const Arch& ar, const Job& g) {
  if (!ar.direct_a || g.trans_a || g.lda <= 0) return false;
  return !(ar.packs_a_at_4k_strides && g.lda * sizeof(float) % 4096 == 0);
}

// Rows of A per block: about MC, and as even as MR-row tiles allow. Each block
// streams all of B's block again, so a thin leftover (M = 128 over 6-row
// tiles: 126 + 2) read BERT-base's weights from memory twice.
int64_t row_block(int64_t rows, int MR) {
  const int64_t most = MC + MC / 4;
  const int64_t blocks = std::max<int64_t>(1, (rows + most - 1) / most);
  const int64_t per_block = (rows + blocks - 1) / blocks;
  return (per_block + MR - 1) / MR * MR;
}

// Computes rows [i_begin, i_end) x columns [j_begin, j_end) of C on the calling
// thread. j_begin is a multiple of NR when B is pre-packed.
void run_block(const Job& g, int64_t i_begin, int64_t i_end, int64_t j_begin, int64_t j_end) {
  const Arch& ar = arch();
  const int MR = ar.mr, NR = ar.nr;
  const int64_t mc_blk = row_block(i_end - i_begin, MR);
  thread_local std::vector<float> abuf, bbuf;
  int64_t kc_max = std::min<int64_t>(KC, g.K);
  size_t need_a = static_cast<size_t>(mc_blk * kc_max);
  if (abuf.size() < need_a) abuf.resize(need_a);
  if (!g.packed) {
    size_t need_b = static_cast<size_t>(std::min<int64_t>(NC, (j_end - j_begin + NR - 1) / NR * NR) * kc_max);
    if (bbuf.size() < need_b) bbuf.resize(need_b);
  }
  float* ap = abuf.data();
  const bool direct = reads_a_in_place(ar, g);
  for (int64_t j0 = j_begin; j0 < j_end; j0 += NC) {
    int64_t nc = std::min(NC, j_end - j0);
    for (int64_t p0 = 0; p0 < g.K; p0 += KC) {
      int64_t kc = std::min(KC, g.K - p0);
      const float* bp;
      if (g.packed) {
        bp = g.packed + p0 * g.n_padded + j0 * kc;
      } else {
        if (g.b_rows) ar.pack_b_rows(g.b_rows, p0, j0, kc, nc, bbuf.data());
        else ar.pack_b(g.trans_b, g.B, g.ldb, p0, j0, kc, nc, bbuf.data());
        bp = bbuf.data();
      }
      bool load = p0 > 0 || g.load_c;
      bool last = p0 + kc >= g.K;
      const float* bias = last && g.epi.bias ? g.epi.bias : nullptr;
      const GemmActivation kernel_act = last && ar.fuses_activation ? g.epi.activation : GemmActivation::None;
      const bool act = last && !ar.fuses_activation && g.epi.activation != GemmActivation::None;
      const bool row_bias = p0 == 0 && g.epi.row_bias;  // added once, with the first K block
      for (int64_t i0 = i_begin; i0 < i_end; i0 += mc_blk) {
        int64_t mc = std::min(mc_blk, i_end - i0);
        if (!direct) ar.pack_a(g.trans_a, g.A, g.lda, i0, p0, mc, kc, ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          int nr = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          const float* bpanel = bp + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            int mr = static_cast<int>(std::min<int64_t>(MR, mc - ir));
            float* c = g.C + (i0 + ir) * g.ldc + j0 + jr;
            const float* a = direct ? g.A + (i0 + ir) * g.lda + p0 : ap + ir * kc;
            ar.kernel(kc, a, direct ? g.lda : 0, bpanel, c, g.ldc, mr, nr, load, g.alpha,
                      bias ? bias + j0 + jr : nullptr, row_bias ? g.epi.row_bias + i0 + ir : nullptr, kernel_act);
            if (act) apply_activation_tile(c, g.ldc, mr, nr, g.epi.activation);
          }
        }
      }
    }
  }
}

// C = beta * C (+ bias, activation) for the degenerate K == 0 / alpha == 0 case.
void scale_only(int64_t M, int64_t N, float beta, float* C, int64_t ldc, const GemmEpilogue& epi) {
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    const float row = epi.row_bias ? epi.row_bias[i] : 0.0f;
    for (int64_t j = 0; j < N; ++j) c[j] = (beta == 0.0f ? 0.0f : beta * c[j]) + (epi.bias ? epi.bias[j] : 0.0f) + row;
    if (epi.activation == GemmActivation::None) continue;
    for (int64_t j0 = 0; j0 < N; j0 += 1 << 20)
      apply_activation_tile(c + j0, ldc, 1, static_cast<int>(std::min<int64_t>(N - j0, 1 << 20)), epi.activation);
  }
}

// Sets up beta, then splits C over the pool. prefer_m: split rows first (each
// thread then packs its own rows of A and all of B it uses).
void run_job(Job& g, int64_t M, int64_t N, float beta, ThreadPool* pool, bool prefer_m) {
  if (beta != 0.0f && beta != 1.0f) {
    for (int64_t i = 0; i < M; ++i) {
      float* c = g.C + i * g.ldc;
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
    }
  }
  g.load_c = beta != 0.0f;
  const Arch& ar = arch();
  int threads = pool ? pool->num_threads() : 1;
  double flops = 2.0 * M * N * g.K;
  // Few rows over large weights are bound by reading B, not by the FMAs: a
  // 1 x 400 x 1000 Gemm (RegNet's classifier) reads 1.6 MB for 0.8 MFLOP.
  const bool b_bound = static_cast<double>(N) * g.K >= (1 << 17);
  if (threads <= 1 || (flops < 1.0e6 && !b_bound)) {
    run_block(g, 0, M, 0, N);
    return;
  }
  int64_t mu = (M + ar.mr - 1) / ar.mr, nu = (N + ar.nr - 1) / ar.nr;
  // One part per thread. Finer parts (4 per thread, claimed as threads came
  // free) gained ~2% with another process busy on one core but lost 0-5%
  // when idle (bench/gemm_bench --threads 2; ViT-B/32 at 2 threads ~8%).
  int64_t m_parts = 1, n_parts = 1;
  if (prefer_m ? mu >= 2 * threads || nu < threads : !(nu >= 2 * threads || mu < threads)) {
    m_parts = std::min<int64_t>(mu, threads);
  } else {
    n_parts = std::min<int64_t>(nu, threads);
  }
  int64_t tasks = m_parts * n_parts;
  if (tasks <= 1) {
    run_block(g, 0, M, 0, N);
    return;
  }
  parallel_for(pool, tasks, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t mi = t / n_parts, ni = t % n_parts;
      int64_t i0 = mu * mi / m_parts * ar.mr, i1 = std::min(M, mu * (mi + 1) / m_parts * ar.mr);
      int64_t j0 = nu * ni / n_parts * ar.nr, j1 = std::min(N, nu * (ni + 1) / n_parts * ar.nr);
      if (i0 < i1 && j0 < j1) run_block(g, i0, i1, j0, j1);
    }
  });
}

// A product's operands but B's, which each entry point sets.
Job product(bool trans_a, const float* A, int64_t lda, int64_t K, float alpha, float* C, int64_t ldc,
            const GemmEpilogue& epilogue) {
  Job g;
  g.trans_a = trans_a;
  g.A = A;
  g.lda = lda;
  g.K = K;
  g.alpha = alpha;
  g.C = C;
  g.ldc = ldc;
  g.epi = epilogue;
  return g;
}

// run_job, or only beta and the epilogue where there is nothing to multiply.
void run_product(Job& g, int64_t M, int64_t N, float beta, ThreadPool* pool, bool prefer_m) {
  if (M <= 0 || N <= 0) return;
  if (g.K <= 0 || g.alpha == 0.0f) {
    scale_only(M, N, beta, g.C, g.ldc, g.epi);
    return;
  }
  run_job(g, M, N, beta, pool, prefer_m);
}

}  // namespace

void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool,
              const GemmEpilogue& epilogue) {
  Job g = product(trans_a, A, lda, K, alpha, C, ldc, epilogue);
  g.trans_b = trans_b;
  g.B = B;
  g.ldb = ldb;
  // Splitting rows repacks B in every thread, splitting columns repacks A.
  run_product(g, M, N, beta, pool, /*prefer_m=*/M >= N);
}

void gemm_f32_rows(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                   const float* const* b_rows, float beta, float* C, int64_t ldc, ThreadPool* pool,
                   const GemmEpilogue& epilogue) {
  Job g = product(false, A, lda, K, alpha, C, ldc, epilogue);
  g.b_rows = b_rows;
  run_product(g, M, N, beta, pool, /*prefer_m=*/M >= N);
}

PackedB gemm_pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb) {
  const Arch& ar = arch();
  PackedB p;
  p.K_ = K;
  p.N_ = N;
  p.n_padded_ = (N + ar.nr - 1) / ar.nr * ar.nr;
  size_t bytes = static_cast<size_t>(std::max<int64_t>(1, p.n_padded_ * K)) * sizeof(float);
  bytes = (bytes + 63) / 64 * 64;
  float* data = static_cast<float*>(allocate_aligned(bytes));
  p.data_ = std::shared_ptr<float>(data, [](float* q) { std::free(q); });
  // Layout: K blocks of KC rows; within a block, NR-column panels of kc x NR.
  for (int64_t p0 = 0; p0 < K; p0 += KC) {
    int64_t kc = std::min(KC, K - p0);
    ar.pack_b(trans_b, B, ldb, p0, 0, kc, N, data + p0 * p.n_padded_);
  }
  return p;
}

void gemm_f32_packed(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda, const PackedB& B, float beta,
                     float* C, int64_t ldc, ThreadPool* pool, const GemmEpilogue& epilogue) {
  Job g = product(trans_a, A, lda, B.K_, alpha, C, ldc, epilogue);
  g.packed = B.data_.get();
  g.n_padded = B.n_padded_;
  // Nothing is packed per call here, but each thread streams all of the operand
  // that is not split: split the larger one. Rows-first had both threads read a
  // 32 MB LM head (48 x 32000 x 256: 2 threads 300 -> 360-383 GFLOP/s with columns;
  // BERT-base's 128 x 768..3072 products 400-415 -> 435-460, gemm_bench --threads 2).
  run_product(g, M, B.N_, beta, pool, /*prefer_m=*/M >= B.N_);
}

}  // namespace onyx
