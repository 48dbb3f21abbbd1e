#include "cpu/int4_block_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define ONYX_INT4_X86 1
#define ONYX_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define ONYX_TARGET_AVXVNNI __attribute__((target("avx2,fma,avxvnni")))
#endif

namespace onyx {

namespace {

int code_at(const uint8_t* row, int64_t k) { return (row[k / 2] >> (4 * (k % 2))) & 15; }

}  // namespace

PackedInt4B::PackedInt4B(const uint8_t* codes, int64_t row_bytes, int64_t N, int64_t K, int64_t block,
                         const float* scales, const float* zero_points)
    : N_(N), K_(K), block_(block), k_blocks_((K + block - 1) / block) {
  const int64_t groups = padded_k() / 8;
  codes_.assign(static_cast<size_t>(tiles() * groups * 64), 0);
  scales_.assign(static_cast<size_t>(tiles() * k_blocks_ * 16), 0.f);
  offsets_.assign(scales_.size(), 0.f);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t t = n / 16, c = n % 16;
    const uint8_t* row = codes + n * row_bytes;
    uint8_t* tile = codes_.data() + t * groups * 64;
    // Whole groups of 8 codes: input bytes (k0 k1)(k2 k3)(k4 k5)(k6 k7), low
    // nibble first, become (k0 k4)(k1 k5)(k2 k6)(k3 k7).
    int64_t g = 0;
    for (; 8 * g + 8 <= K; ++g) {
      const uint8_t* in = row + 4 * g;
      uint8_t* out = tile + g * 64 + c * 4;
      out[0] = static_cast<uint8_t>((in[0] & 15) | (in[2] << 4));
      out[1] = static_cast<uint8_t>((in[0] >> 4) | (in[2] & 0xF0));
      out[2] = static_cast<uint8_t>((in[1] & 15) | (in[3] << 4));
      out[3] = static_cast<uint8_t>((in[1] >> 4) | (in[3] & 0xF0));
    }
    for (int64_t k = 8 * g; k < K; ++k) {  // a last partial group: codes past K stay zero
      const int64_t i = k % 8;
      tile[g * 64 + c * 4 + i % 4] |= static_cast<uint8_t>(code_at(row, k) << (i < 4 ? 0 : 4));
    }
    for (int64_t j = 0; j < k_blocks_; ++j) {
      const float s = scales[n * k_blocks_ + j];
      scales_[(t * k_blocks_ + j) * 16 + c] = s;
      offsets_[(t * k_blocks_ + j) * 16 + c] = -(s * zero_points[n * k_blocks_ + j]);
    }
  }
}

#ifdef ONYX_INT4_X86

namespace {

// A's rows as int8 per block (zero past K), each block's scale and scale * sum.
struct QuantizedA {
  std::vector<int8_t> q;
  std::vector<float> scale, scaled_sum;
  int64_t ld = 0;
};

__mmask16 lanes_below(int64_t k, int64_t K) {
  const int64_t left = K - k;
  return left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
}

// One row, block by block: the scalar rounding std::clamp(nearbyint(a *
// 127 / max|a|), -127, 127) on 16 lanes.
ONYX_TARGET_VNNI void quantize_row(const float* a, int64_t K, int64_t block, int64_t k_blocks, int8_t* q,
                                   float* scale, float* scaled_sum) {
  for (int64_t j = 0; j < k_blocks; ++j) {
    const int64_t k0 = j * block;
    __m512 mx = _mm512_setzero_ps();
    for (int64_t k = k0; k < k0 + block; k += 16)
      mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_maskz_loadu_ps(lanes_below(k, K), a + k)));
    const float m = _mm512_reduce_max_ps(mx);
    const __m512 inv = _mm512_set1_ps(m > 0.f ? 127.f / m : 0.f);
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
    __m512i sum = _mm512_setzero_si512();
    for (int64_t k = k0; k < k0 + block; k += 16) {
      __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(lanes_below(k, K), a + k), inv));
      v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
      sum = _mm512_add_epi32(sum, v);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k), _mm512_cvtepi32_epi8(v));
    }
    scale[j] = m / 127.f;
    scaled_sum[j] = scale[j] * static_cast<float>(_mm512_reduce_add_epi32(sum));
  }
}

// quantize_row on 8 AVX2 lanes, the same float steps (a product, then
// round-to-even conversion), so the same bytes; K's last lanes one at a time.
ONYX_TARGET_AVXVNNI void quantize_row_avx2(const float* a, int64_t K, int64_t block, int64_t k_blocks, int8_t* q,
                                           float* scale, float* scaled_sum) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t j = 0; j < k_blocks; ++j) {
    const int64_t k0 = j * block, k1 = std::min(K, k0 + block), whole = k0 + std::max<int64_t>(0, k1 - k0) / 8 * 8;
    __m256 mx = _mm256_setzero_ps();
    for (int64_t k = k0; k < whole; k += 8) mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, _mm256_loadu_ps(a + k)));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, mx);
    float m = 0.f;
    for (float v : lanes) m = std::max(m, v);
    for (int64_t k = whole; k < k1; ++k) m = std::max(m, std::fabs(a[k]));
    const float inv_s = m > 0.f ? 127.f / m : 0.f;
    const __m256 inv = _mm256_set1_ps(inv_s);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    __m256i sum = _mm256_setzero_si256();
    for (int64_t k = k0; k < whole; k += 8) {
      __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(a + k), inv));
      v = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
      sum = _mm256_add_epi32(sum, v);
      const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(q + k), _mm_packs_epi16(words, words));
    }
    alignas(32) int32_t parts[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(parts), sum);
    int32_t total = 0;
    for (int32_t v : parts) total += v;
    for (int64_t k = whole; k < k1; ++k) {
      const int32_t v = std::clamp(static_cast<int32_t>(std::nearbyint(a[k] * inv_s)), -127, 127);
      q[k] = static_cast<int8_t>(v);
      total += v;
    }
    scale[j] = m / 127.f;
    scaled_sum[j] = scale[j] * static_cast<float>(total);
  }
}

bool has_avx512_vnni() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni;
}

bool has_avx_vnni() {
  const CpuFeatures& f = cpu_features();
  return f.avx2 && f.fma && f.avxvnni;
}

QuantizedA quantize_a(int64_t M, const float* A, const PackedInt4B& b, ThreadPool* pool) {
  QuantizedA qa;
  const int64_t K = b.K(), kb = b.k_blocks();
  qa.ld = b.padded_k();
  qa.q.resize(static_cast<size_t>(M * qa.ld));
  qa.scale.resize(static_cast<size_t>(M * kb));
  qa.scaled_sum.resize(qa.scale.size());
  const auto row = has_avx512_vnni() ? quantize_row : quantize_row_avx2;
  parallel_for(M * K >= (int64_t{1} << 16) ? pool : nullptr, M, [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m)
      row(A + m * K, K, b.block(), kb, qa.q.data() + m * qa.ld, qa.scale.data() + m * kb,
          qa.scaled_sum.data() + m * kb);
  });
  return qa;
}

int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// MR rows x NB tiles of 16 columns, from tile t0 and row m0.
template <int MR, int NB>
ONYX_TARGET_VNNI void tile_kernel(const PackedInt4B& b, int64_t t0, const QuantizedA& a, int64_t m0, const float* bias,
                                  float* y) {
  const int64_t kb = b.k_blocks(), groups_per_block = b.block() / 8, N = b.N();
  const __m512i nibble = _mm512_set1_epi8(15);
  const uint8_t* w[NB];
  _Pragma("GCC unroll 4")
  for (int c = 0; c < NB; ++c) w[c] = b.tile_codes(t0 + c);
  const int8_t* ar[MR];
  _Pragma("GCC unroll 4")
  for (int r = 0; r < MR; ++r) ar[r] = a.q.data() + (m0 + r) * a.ld;
  __m512 accf[MR][NB];
  _Pragma("GCC unroll 4")
  for (int r = 0; r < MR; ++r)
    _Pragma("GCC unroll 4")
    for (int c = 0; c < NB; ++c) accf[r][c] = _mm512_setzero_ps();
  for (int64_t j = 0; j < kb; ++j) {
    __m512i acci[MR][NB];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < MR; ++r)
      _Pragma("GCC unroll 4")
      for (int c = 0; c < NB; ++c) acci[r][c] = _mm512_setzero_si512();
    for (int64_t g = j * groups_per_block; g < (j + 1) * groups_per_block; ++g) {
      __m512i lo[NB], hi[NB];
      _Pragma("GCC unroll 4")
      for (int c = 0; c < NB; ++c) {
        const __m512i v = _mm512_loadu_si512(w[c] + g * 64);
        lo[c] = _mm512_and_si512(v, nibble);
        hi[c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
      }
      _Pragma("GCC unroll 4")
      for (int r = 0; r < MR; ++r) {
        const __m512i a0 = _mm512_set1_epi32(load4(ar[r] + g * 8)), a1 = _mm512_set1_epi32(load4(ar[r] + g * 8 + 4));
        _Pragma("GCC unroll 4")
        for (int c = 0; c < NB; ++c)
          acci[r][c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acci[r][c], lo[c], a0), hi[c], a1);
      }
    }
    _Pragma("GCC unroll 4")
    for (int c = 0; c < NB; ++c) {
      const __m512 s = _mm512_loadu_ps(b.tile_scales(t0 + c) + j * 16);
      const __m512 z = _mm512_loadu_ps(b.tile_offsets(t0 + c) + j * 16);
      _Pragma("GCC unroll 4")
      for (int r = 0; r < MR; ++r) {
        const int64_t at = (m0 + r) * kb + j;
        const __m512 sa = _mm512_mul_ps(s, _mm512_set1_ps(a.scale[at]));
        accf[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acci[r][c]), sa, accf[r][c]);
        accf[r][c] = _mm512_fmadd_ps(z, _mm512_set1_ps(a.scaled_sum[at]), accf[r][c]);
      }
    }
  }
  _Pragma("GCC unroll 4")
  for (int c = 0; c < NB; ++c) {
    const int64_t n0 = (t0 + c) * 16;
    const __mmask16 mask = lanes_below(n0, N);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(mask, bias + n0) : _mm512_setzero_ps();
    _Pragma("GCC unroll 4")
    for (int r = 0; r < MR; ++r) _mm512_mask_storeu_ps(y + (m0 + r) * N + n0, mask, _mm512_add_ps(accf[r][c], bv));
  }
}

// tile_kernel with AVX-VNNI's 256-bit vpdpbusd, on NU units of 8 columns
// (half tiles) from unit u0: the same operations lane for lane, so the same
// floats. The float sums stay in memory (touched once per block) to leave
// the 16 registers to the integer ones.
template <int MR, int NU>
ONYX_TARGET_AVXVNNI void unit_kernel_avxvnni(const PackedInt4B& b, int64_t u0, const QuantizedA& a, int64_t m0,
                                             const float* bias, float* y) {
  const int64_t kb = b.k_blocks(), groups_per_block = b.block() / 8, N = b.N();
  const __m256i nibble = _mm256_set1_epi8(15);
  const uint8_t* w[NU];
  _Pragma("GCC unroll 4")
  for (int c = 0; c < NU; ++c) w[c] = b.tile_codes((u0 + c) / 2) + 32 * ((u0 + c) % 2);
  const int8_t* ar[MR];
  _Pragma("GCC unroll 4")
  for (int r = 0; r < MR; ++r) ar[r] = a.q.data() + (m0 + r) * a.ld;
  alignas(32) float accf[MR][NU][8] = {};
  for (int64_t j = 0; j < kb; ++j) {
    __m256i acci[MR][NU];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < MR; ++r)
      _Pragma("GCC unroll 4")
      for (int c = 0; c < NU; ++c) acci[r][c] = _mm256_setzero_si256();
    for (int64_t g = j * groups_per_block; g < (j + 1) * groups_per_block; ++g) {
      __m256i lo[NU], hi[NU];
      _Pragma("GCC unroll 4")
      for (int c = 0; c < NU; ++c) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[c] + g * 64));
        lo[c] = _mm256_and_si256(v, nibble);
        hi[c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
      }
      _Pragma("GCC unroll 4")
      for (int r = 0; r < MR; ++r) {
        const __m256i a0 = _mm256_set1_epi32(load4(ar[r] + g * 8)), a1 = _mm256_set1_epi32(load4(ar[r] + g * 8 + 4));
        _Pragma("GCC unroll 4")
        for (int c = 0; c < NU; ++c)
          acci[r][c] = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acci[r][c], lo[c], a0), hi[c], a1);
      }
    }
    _Pragma("GCC unroll 4")
    for (int c = 0; c < NU; ++c) {
      const int64_t t = (u0 + c) / 2, half = 8 * ((u0 + c) % 2);
      const __m256 s = _mm256_loadu_ps(b.tile_scales(t) + j * 16 + half);
      const __m256 z = _mm256_loadu_ps(b.tile_offsets(t) + j * 16 + half);
      _Pragma("GCC unroll 4")
      for (int r = 0; r < MR; ++r) {
        const int64_t at = (m0 + r) * kb + j;
        const __m256 sa = _mm256_mul_ps(s, _mm256_set1_ps(a.scale[at]));
        __m256 f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acci[r][c]), sa, _mm256_load_ps(accf[r][c]));
        f = _mm256_fmadd_ps(z, _mm256_set1_ps(a.scaled_sum[at]), f);
        _mm256_store_ps(accf[r][c], f);
      }
    }
  }
  _Pragma("GCC unroll 4")
  for (int c = 0; c < NU; ++c) {
    const int64_t n0 = (u0 + c) * 8, cols = std::min<int64_t>(8, N - n0);
    if (cols <= 0) break;
    for (int r = 0; r < MR; ++r)
      for (int64_t i = 0; i < cols; ++i) y[(m0 + r) * N + n0 + i] = accf[r][c][i] + (bias ? bias[n0 + i] : 0.f);
  }
}

using TileFn = void (*)(const PackedInt4B&, int64_t, const QuantizedA&, int64_t, const float*, float*);

// The AVX-VNNI kernel for `rows` (1..4) rows and nu (1, 2 or 4) units of 8 columns.
TileFn pick_units(int rows, int nu) {
  static constexpr TileFn table[4][3] = {
      {unit_kernel_avxvnni<1, 1>, unit_kernel_avxvnni<1, 2>, unit_kernel_avxvnni<1, 4>},
      {unit_kernel_avxvnni<2, 1>, unit_kernel_avxvnni<2, 2>, unit_kernel_avxvnni<2, 2>},
      {unit_kernel_avxvnni<3, 1>, unit_kernel_avxvnni<3, 2>, unit_kernel_avxvnni<3, 2>},
      {unit_kernel_avxvnni<4, 1>, unit_kernel_avxvnni<4, 2>, unit_kernel_avxvnni<4, 2>},
  };
  return table[rows - 1][nu == 1 ? 0 : nu == 2 ? 1 : 2];
}

constexpr int kMaxRows = 4;

// The kernel for `rows` (1..4) rows and nb (1, 2 or 4) tiles.
TileFn pick_tile(int rows, int nb) {
  static constexpr TileFn table[kMaxRows][3] = {
      {tile_kernel<1, 1>, tile_kernel<1, 2>, tile_kernel<1, 4>},
      {tile_kernel<2, 1>, tile_kernel<2, 2>, tile_kernel<2, 4>},
      {tile_kernel<3, 1>, tile_kernel<3, 2>, tile_kernel<3, 2>},
      {tile_kernel<4, 1>, tile_kernel<4, 2>, tile_kernel<4, 2>},
  };
  return table[rows - 1][nb == 1 ? 0 : nb == 2 ? 1 : 2];
}

// The M rows x `units` column units (tiles of 16 columns, or half tiles of 8
// on AVX-VNNI) in parallel blocks of 32 rows by a group of units, each
// tile call taking up to 4 rows and 4, 2 or 1 units as `pick`'s table has
// them. Four units per step for up to `wide_rows` rows (decode: the columns
// share each row of A); two for more rows, whose accumulators fill the
// registers.
void run_units(int64_t M, int64_t units, int wide_rows, TileFn (*pick)(int rows, int step), const QuantizedA& qa,
               const PackedInt4B& b, const float* bias, float* Y, ThreadPool* pool) {
  const int nb = M <= wide_rows ? 4 : 2;
  constexpr int64_t kRowBlock = 32;
  const int64_t col_groups = (units + nb - 1) / nb, row_blocks = (M + kRowBlock - 1) / kRowBlock;
  const bool big = M * b.N() * b.K() >= (int64_t{1} << 18);
  parallel_for(big ? pool : nullptr, col_groups * row_blocks, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t u0 = (i / row_blocks) * nb, count = std::min<int64_t>(nb, units - u0);
      const int64_t m_begin = (i % row_blocks) * kRowBlock, m_end = std::min(M, m_begin + kRowBlock);
      for (int64_t m = m_begin; m < m_end; m += kMaxRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, m_end - m));
        for (int64_t u = u0; u < u0 + count;) {
          const int64_t left = u0 + count - u;
          const int step = left >= 4 && rows <= wide_rows ? 4 : left >= 2 ? 2 : 1;
          pick(rows, step)(b, u, qa, m, bias, Y);
          u += step;
        }
      }
    }
  });
}

}  // namespace

bool int4_block_gemm_supported(int64_t block) {
  return (has_avx512_vnni() || has_avx_vnni()) && block > 0 && block % 16 == 0;
}

void int4_block_gemm(int64_t M, const float* A, const PackedInt4B& b, const float* bias, float* Y, ThreadPool* pool) {
  if (M <= 0 || b.N() <= 0) return;
  const QuantizedA qa = quantize_a(M, A, b, pool);
  // AVX-512: tiles of 16 columns, four per step for one or two rows. AVX-VNNI:
  // half tiles of 8, four per step for one row only (its 16 registers).
  if (has_avx512_vnni()) run_units(M, b.tiles(), 2, pick_tile, qa, b, bias, Y, pool);
  else run_units(M, (b.N() + 7) / 8, 1, pick_units, qa, b, bias, Y, pool);
}

#else

bool int4_block_gemm_supported(int64_t) { return false; }

void int4_block_gemm(int64_t, const float*, const PackedInt4B&, const float*, float*, ThreadPool*) {}

#endif

}  // namespace onyx
