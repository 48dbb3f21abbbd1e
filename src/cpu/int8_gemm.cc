#include "cpu/int8_gemm.h"
#include "base/cpu_features.h"
#include "onyx/status.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "cpu/requantize_avx512.h"
#define ONYX_INT8_X86 1
#define ONYX_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define ONYX_TARGET_AVX2 __attribute__((target("avx2")))
#define ONYX_TARGET_AVXVNNI __attribute__((target("avx2,avxvnni")))
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace onyx {

namespace {

constexpr int64_t kPanel = kInt8GemmPanel;  // columns per B panel
constexpr int64_t kRowBlock = 96;  // rows of A per parallel task

int64_t panel_width(const PackedInt8B& b, int64_t n0) { return std::min(kPanel, b.padded_n() - n0); }

// Per-row and per-column terms that turn the u8 x s8 dot product into the
// exact sum: y = dot + col_add[n] + row_sum[m] * col_shift[n] (when
// row_sums) + row_shift[m] * col_term[n] (when row_shifts; a single A zero
// point folds this term into col_add). With mult set (AVX-512 VNNI tiles),
// the tile stores y requantized to bytes (Int8Requant, its bias in col_add);
// with scale set, floats y * scale + bias.
struct Epilogue {
  const int32_t* col_add;
  const int32_t* row_sum;
  const int32_t* row_shift;
  const int32_t* col_shift;
  const int32_t* col_term;
  bool row_sums, row_shifts;
  const float* mult;  // the panel's N - n0 multipliers (read masked); null: no requantization
  float zero, lo, hi;
  const float* scale;  // the panel's N - n0 float scales (read masked); null: no float output
  const float* bias;   // with scale: the panel's N - n0 biases, or null
};

// One tile: rows x (panel width) outputs, of which `cols` are stored into y
// (int32, bytes when e.mult is set, floats when e.scale is set).
using TileFn = void (*)(int64_t k_groups, const uint8_t* a, int64_t lda, int rows, const int8_t* b, int width,
                        int cols, void* y, int64_t ldy, const Epilogue& e);

int32_t wrap_add(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
}

int32_t wrap_mul_add(int32_t acc, int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(x) * static_cast<uint32_t>(y));
}

// The exact sum from the dot product (Epilogue).
int32_t finish(int32_t dot, int r, int c, const Epilogue& e) {
  int32_t v = wrap_add(dot, e.col_add[c]);
  if (e.row_sums) v = wrap_mul_add(v, e.row_sum[r], e.col_shift[c]);
  if (e.row_shifts) v = wrap_mul_add(v, e.row_shift[r], e.col_term[c]);
  return v;
}

void tile_scalar(int64_t k_groups, const uint8_t* a, int64_t lda, int rows, const int8_t* b, int width, int cols,
                 void* y, int64_t ldy, const Epilogue& e) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      int32_t acc = 0;
      for (int64_t g = 0; g < k_groups; ++g)
        for (int j = 0; j < 4; ++j) acc = wrap_mul_add(acc, a[r * lda + 4 * g + j], b[(g * width + c) * 4 + j]);
      static_cast<int32_t*>(y)[r * ldy + c] = finish(acc, r, c, e);
    }
}

#ifdef ONYX_INT8_X86

int32_t load_group(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

template <int MR, int NB>
ONYX_TARGET_VNNI void tile_vnni(int64_t k_groups, const uint8_t* a, int64_t lda, int, const int8_t* b, int width,
                                int cols, void* y, int64_t ldy, const Epilogue& e) {
  __m512i acc[MR][NB];
  _Pragma("GCC unroll 8")
  for (int r = 0; r < MR; ++r)
    _Pragma("GCC unroll 8")
    for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_setzero_si512();
  for (int64_t g = 0; g < k_groups; ++g) {
    const int8_t* bg = b + g * width * 4;
    __m512i bv[NB];
    _Pragma("GCC unroll 8")
    for (int j = 0; j < NB; ++j) bv[j] = _mm512_loadu_si512(bg + 64 * j);
    _Pragma("GCC unroll 8")
    for (int r = 0; r < MR; ++r) {
      __m512i av = _mm512_set1_epi32(load_group(a + r * lda + 4 * g));
      _Pragma("GCC unroll 8")
      for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], av, bv[j]);
    }
  }
  const Requant16 q = requant16_setup(e.zero, e.lo, e.hi);
  _Pragma("GCC unroll 8")
  for (int j = 0; j < NB; ++j) {
    int left = cols - 16 * j;
    if (left <= 0) break;
    __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __m512i add = _mm512_loadu_si512(e.col_add + 16 * j);
    _Pragma("GCC unroll 8")
    for (int r = 0; r < MR; ++r) acc[r][j] = _mm512_add_epi32(acc[r][j], add);
    if (e.row_sums) {
      const __m512i cs = _mm512_loadu_si512(e.col_shift + 16 * j);
      _Pragma("GCC unroll 8")
      for (int r = 0; r < MR; ++r)
        acc[r][j] = _mm512_add_epi32(acc[r][j], _mm512_mullo_epi32(_mm512_set1_epi32(e.row_sum[r]), cs));
    }
    if (e.row_shifts) {
      const __m512i ct = _mm512_loadu_si512(e.col_term + 16 * j);
      _Pragma("GCC unroll 8")
      for (int r = 0; r < MR; ++r)
        acc[r][j] = _mm512_add_epi32(acc[r][j], _mm512_mullo_epi32(_mm512_set1_epi32(e.row_shift[r]), ct));
    }
    if (e.mult) {
      const __m512 m = _mm512_maskz_loadu_ps(mask, e.mult + 16 * j);
      _Pragma("GCC unroll 8")
      for (int r = 0; r < MR; ++r)
        requant16_store(q, acc[r][j], m, mask, static_cast<uint8_t*>(y) + r * ldy + 16 * j);
    } else if (e.scale) {
      // Multiply, then add: the rounding of the other ISAs (the explicit
      // rounding mode keeps the compiler from fusing them).
      const __m512 s = _mm512_maskz_loadu_ps(mask, e.scale + 16 * j);
      const __m512 bias = e.bias ? _mm512_maskz_loadu_ps(mask, e.bias + 16 * j) : _mm512_setzero_ps();
      _Pragma("GCC unroll 8")
      for (int r = 0; r < MR; ++r)
        _mm512_mask_storeu_ps(static_cast<float*>(y) + r * ldy + 16 * j, mask,
                              _mm512_add_ps(_mm512_mul_round_ps(_mm512_cvtepi32_ps(acc[r][j]), s, kNearest), bias));
    } else {
      _Pragma("GCC unroll 8")
      for (int r = 0; r < MR; ++r)
        _mm512_mask_storeu_epi32(static_cast<int32_t*>(y) + r * ldy + 16 * j, mask, acc[r][j]);
    }
  }
}

template <int MR, int NB>
constexpr TileFn vnni_entry() {
  return tile_vnni<MR, NB>;
}

// u8 x s8 groups of 4 without vpdpbusd: even and odd bytes widened to 16 bits,
// whose vpmaddwd pair sums are exact.
ONYX_TARGET_AVX2 inline __m256i dot4_avx2(__m256i acc, __m256i a_even, __m256i a_odd, __m256i b_even, __m256i b_odd) {
  return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even), _mm256_madd_epi16(a_odd, b_odd)));
}

// finish() on 8 lanes for MR rows x 16 columns from c0 (the column terms are
// padded to whole panels); wrapping int32 arithmetic.
template <int MR>
ONYX_TARGET_AVX2 inline void store_sums_avx2(const __m256i (&acc)[MR][2], int c0, int cols, int32_t* y, int64_t ldy,
                                             const Epilogue& e) {
  _Pragma("GCC unroll 2")
  for (int h = 0; h < 2; ++h) {
    const int c = c0 + 8 * h;
    if (c >= cols) break;
    const __m256i add = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.col_add + c));
    const __m256i cs = e.row_sums ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.col_shift + c)) : add;
    const __m256i ct = e.row_shifts ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.col_term + c)) : add;
    _Pragma("GCC unroll 8")
    for (int r = 0; r < MR; ++r) {
      __m256i v = _mm256_add_epi32(acc[r][h], add);
      if (e.row_sums) v = _mm256_add_epi32(v, _mm256_mullo_epi32(_mm256_set1_epi32(e.row_sum[r]), cs));
      if (e.row_shifts) v = _mm256_add_epi32(v, _mm256_mullo_epi32(_mm256_set1_epi32(e.row_shift[r]), ct));
      if (c + 8 <= cols) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + r * ldy + c), v);
      } else {
        alignas(32) int32_t out[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(out), v);
        std::copy(out, out + (cols - c), y + r * ldy + c);
      }
    }
  }
}

// MR rows x 16 columns starting at column c0 of the panel.
template <int MR>
ONYX_TARGET_AVX2 void slice_avx2(int64_t k_groups, const uint8_t* a, int64_t lda, const int8_t* b, int width, int c0,
                                 int cols, int32_t* y, int64_t ldy, const Epilogue& e) {
  __m256i acc[MR][2];
  _Pragma("GCC unroll 8")
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const __m256i low = _mm256_set1_epi16(0x00FF);
  for (int64_t g = 0; g < k_groups; ++g) {
    const int8_t* bg = b + (g * width + c0) * 4;
    __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg));
    __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg + 32));
    __m256i b0e = _mm256_srai_epi16(_mm256_slli_epi16(b0, 8), 8), b0o = _mm256_srai_epi16(b0, 8);
    __m256i b1e = _mm256_srai_epi16(_mm256_slli_epi16(b1, 8), 8), b1o = _mm256_srai_epi16(b1, 8);
    _Pragma("GCC unroll 8")
    for (int r = 0; r < MR; ++r) {
      __m256i av = _mm256_set1_epi32(load_group(a + r * lda + 4 * g));
      __m256i ae = _mm256_and_si256(av, low), ao = _mm256_srli_epi16(av, 8);
      acc[r][0] = dot4_avx2(acc[r][0], ae, ao, b0e, b0o);
      acc[r][1] = dot4_avx2(acc[r][1], ae, ao, b1e, b1o);
    }
  }
  store_sums_avx2<MR>(acc, c0, cols, y, ldy, e);
}

// int32_rows_to_float 8 columns at a time: multiply, then add (no FMA, as
// the other ISAs round), the last columns in plain C++.
ONYX_TARGET_AVX2 void int32_rows_to_float_avx2(const int32_t* sums, int64_t rows, int64_t cols, int64_t lds,
                                               const float* scale, const float* bias, float* y, int64_t ldy) {
  const int64_t full = cols / 8 * 8;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* s = sums + r * lds;
    float* yr = y + r * ldy;
    for (int64_t c = 0; c < full; c += 8) {
      const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + c))),
                                     _mm256_loadu_ps(scale + c));
      _mm256_storeu_ps(yr + c, _mm256_add_ps(v, bias ? _mm256_loadu_ps(bias + c) : _mm256_setzero_ps()));
    }
    for (int64_t c = full; c < cols; ++c) yr[c] = static_cast<float>(s[c]) * scale[c] + (bias ? bias[c] : 0.f);
  }
}

template <int MR>
ONYX_TARGET_AVX2 void tile_avx2(int64_t k_groups, const uint8_t* a, int64_t lda, int, const int8_t* b, int width,
                                int cols, void* y, int64_t ldy, const Epilogue& e) {
  for (int c0 = 0; c0 < cols; c0 += 16)
    slice_avx2<MR>(k_groups, a, lda, b, width, c0, cols, static_cast<int32_t*>(y), ldy, e);
}

// The AVX2 slice with vpdpbusd on 256-bit vectors (AVX-VNNI): one
// instruction per 4 k of 8 columns instead of the emulation's widening and
// two vpmaddwd. Six rows: 12 sums, 2 B vectors and the broadcast fill the 16
// registers.
template <int MR>
ONYX_TARGET_AVXVNNI void slice_avxvnni(int64_t k_groups, const uint8_t* a, int64_t lda, const int8_t* b, int width,
                                       int c0, int cols, int32_t* y, int64_t ldy, const Epilogue& e) {
  __m256i acc[MR][2];
  _Pragma("GCC unroll 8")
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < k_groups; ++g) {
    const int8_t* bg = b + (g * width + c0) * 4;
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg + 32));
    _Pragma("GCC unroll 8")
    for (int r = 0; r < MR; ++r) {
      const __m256i av = _mm256_set1_epi32(load_group(a + r * lda + 4 * g));
      acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, b1);
    }
  }
  store_sums_avx2<MR>(acc, c0, cols, y, ldy, e);
}

template <int MR>
ONYX_TARGET_AVXVNNI void tile_avxvnni(int64_t k_groups, const uint8_t* a, int64_t lda, int, const int8_t* b, int width,
                                      int cols, void* y, int64_t ldy, const Epilogue& e) {
  for (int c0 = 0; c0 < cols; c0 += 16)
    slice_avxvnni<MR>(k_groups, a, lda, b, width, c0, cols, static_cast<int32_t*>(y), ldy, e);
}

#endif

// The tile for `rows` (1..max_rows) rows and a panel of `width` columns.
struct Kernels {
  int max_rows = 1;
  TileFn (*pick)(int rows, int width) = nullptr;
};

TileFn pick_scalar(int, int) { return tile_scalar; }

#ifdef ONYX_INT8_X86
TileFn pick_vnni(int rows, int width) {
  static constexpr TileFn table[6][4] = {
      {vnni_entry<1, 1>(), vnni_entry<1, 2>(), vnni_entry<1, 3>(), vnni_entry<1, 4>()},
      {vnni_entry<2, 1>(), vnni_entry<2, 2>(), vnni_entry<2, 3>(), vnni_entry<2, 4>()},
      {vnni_entry<3, 1>(), vnni_entry<3, 2>(), vnni_entry<3, 3>(), vnni_entry<3, 4>()},
      {vnni_entry<4, 1>(), vnni_entry<4, 2>(), vnni_entry<4, 3>(), vnni_entry<4, 4>()},
      {vnni_entry<5, 1>(), vnni_entry<5, 2>(), vnni_entry<5, 3>(), vnni_entry<5, 4>()},
      {vnni_entry<6, 1>(), vnni_entry<6, 2>(), vnni_entry<6, 3>(), vnni_entry<6, 4>()},
  };
  return table[rows - 1][width / 16 - 1];
}

TileFn pick_avx2(int rows, int) {
  static constexpr TileFn table[4] = {tile_avx2<1>, tile_avx2<2>, tile_avx2<3>, tile_avx2<4>};
  return table[rows - 1];
}

TileFn pick_avxvnni(int rows, int) {
  static constexpr TileFn table[6] = {tile_avxvnni<1>, tile_avxvnni<2>, tile_avxvnni<3>,
                                      tile_avxvnni<4>, tile_avxvnni<5>, tile_avxvnni<6>};
  return table[rows - 1];
}
#endif

Kernels kernels_for(Int8Isa isa) {
#ifdef ONYX_INT8_X86
  if (isa == Int8Isa::Avx512Vnni) return {6, pick_vnni};
  if (isa == Int8Isa::AvxVnni && cpu_features().avxvnni) return {6, pick_avxvnni};
  if (isa == Int8Isa::Avx2 || isa == Int8Isa::AvxVnni) return {4, pick_avx2};
#endif
  (void)isa;
  return {1, pick_scalar};
}

// Sum of row[k] ^ flip over K bytes, copied to dst when given.
int32_t flip_sum_scalar(const uint8_t* row, int64_t K, uint8_t flip, uint8_t* dst) {
  int32_t sum = 0;
  for (int64_t k = 0; k < K; ++k) {
    uint8_t v = row[k] ^ flip;
    if (dst) dst[k] = v;
    sum += v;
  }
  return sum;
}

#ifdef ONYX_INT8_X86
ONYX_TARGET_AVX2 int32_t flip_sum_avx2(const uint8_t* row, int64_t K, uint8_t flip, uint8_t* dst) {
  const __m256i f = _mm256_set1_epi8(static_cast<char>(flip)), zero = _mm256_setzero_si256();
  __m256i acc = zero;
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k)), f);
    if (dst) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), v);
    acc = _mm256_add_epi64(acc, _mm256_sad_epu8(v, zero));
  }
  alignas(32) int64_t part[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(part), acc);
  int64_t sum = part[0] + part[1] + part[2] + part[3];
  return static_cast<int32_t>(sum + flip_sum_scalar(row + k, K - k, flip, dst ? dst + k : nullptr));
}
#endif

// A as uint8 (int8 shifted up by 128) in rows of whole groups of 4, and its
// row sums. Unsigned row-major A with K a multiple of 4 (or group-padded
// rows) is used in place.
struct PackedA {
  std::vector<uint8_t> copy;
  const uint8_t* data = nullptr;
  std::vector<int32_t> row_sum;
  int64_t ld = 0;
};

// Row sums only matter where some column's shift is non-zero (int8 weights
// with zero point 0 have none), so in-place A may skip them.
PackedA pack_a(int64_t M, int64_t K, const Int8A& a, Int8Isa isa, bool need_sums) {
  PackedA p;
  const uint8_t* src = static_cast<const uint8_t*>(a.data);
  const uint8_t flip = a.is_signed ? 0x80 : 0;  // int8 x + 128 as a byte
  auto flip_sum = flip_sum_scalar;
#ifdef ONYX_INT8_X86
  if (isa != Int8Isa::Scalar) flip_sum = flip_sum_avx2;
#endif
  if (need_sums) p.row_sum.assign(static_cast<size_t>(M), 0);
  if (!a.trans && !a.is_signed && (K % 4 == 0 || a.group_padded)) {
    p.data = src;
    p.ld = a.lda;
    if (!need_sums) return p;
    for (int64_t m = 0; m < M; ++m) p.row_sum[m] = flip_sum(src + m * a.lda, K, 0, nullptr);
    return p;
  }
  p.ld = (K + 3) / 4 * 4;
  p.copy.assign(static_cast<size_t>(M * p.ld), 0);
  p.data = p.copy.data();
  for (int64_t m = 0; m < M; ++m) {
    uint8_t* row = p.copy.data() + m * p.ld;
    if (!a.trans) {
      const int32_t sum = flip_sum(src + m * a.lda, K, flip, row);
      if (need_sums) p.row_sum[m] = sum;
      continue;
    }
    for (int64_t k = 0; k < K; ++k) row[k] = static_cast<uint8_t>(src[k * a.lda + m] ^ flip);
    if (need_sums) p.row_sum[m] = flip_sum(row, K, 0, nullptr);
  }
  return p;
}

int32_t zero_point_at(const std::vector<int32_t>& zp, int64_t i) {
  return zp.empty() ? 0 : zp[zp.size() == 1 ? 0 : static_cast<size_t>(i)];
}

// What gemm stores: int32 sums (both null), their requantization into bytes
// (rq) or floats sum * scale[n] + bias[n] (scale; bias may be null).
struct OutputStage {
  const Int8Requant* rq = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
};

// The sums of columns [c0, c1) into y through `out`, with the per-column
// terms `columns` made for this B, these zero points and the output's bias.
// Tiles without a fused output stage write a small int32 block that is
// converted while it is in L1.
void gemm(int64_t M, const Int8A& a, const Int8GemmColumns& columns, const PackedInt8B& b, const OutputStage& out,
          void* y, int64_t ldy, ThreadPool* pool, Int8Isa isa, int64_t c0 = 0, int64_t c1 = -1) {
  const Int8Requant* rq = out.rq;
  const int64_t K = b.K(), N = b.N();
  if (M <= 0 || N <= 0) return;
  ONYX_CHECK(columns.a_signed == a.is_signed && static_cast<int64_t>(columns.add.size()) == b.padded_n(),
             "int8 GEMM: the column terms were made for another operand");
  const bool row_shifts = columns.a_zp.size() > 1;
  std::vector<int32_t> row_shift(row_shifts ? static_cast<size_t>(M) : 0);
  for (int64_t m = 0; m < M && row_shifts; ++m) row_shift[m] = (a.is_signed ? -128 : 0) - columns.a_zp[m];
  const int32_t *col_add = columns.add.data(), *col_shift = columns.shift.data(), *col_term = columns.term.data();
  const bool need_sums = columns.row_sums;
  PackedA pa = pack_a(M, K, a, isa, need_sums);
  const Kernels kern = kernels_for(isa);
  const bool fused = (rq || out.scale) && isa == Int8Isa::Avx512Vnni;
  const float lo = rq && rq->is_signed ? -128.f : 0.f, hi = rq && rq->is_signed ? 127.f : 255.f;
  const int64_t n_end = c1 < 0 ? N : std::min(N, c1), first_panel = c0 / kPanel;
  const int64_t panels = (n_end + kPanel - 1) / kPanel - first_panel, row_blocks = (M + kRowBlock - 1) / kRowBlock;
  const bool big = M * (n_end - c0) * std::max<int64_t>(K, 1) >= (int64_t{1} << 18);
  parallel_for(big ? pool : nullptr, panels * row_blocks, [&](int64_t t0, int64_t t1) {
    int32_t block[6 * kPanel];  // one tile's sums on their way to requantization
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = (first_panel + t / row_blocks) * kPanel, m_end = std::min(M, (t % row_blocks + 1) * kRowBlock);
      const int width = static_cast<int>(panel_width(b, n0));
      const int cols = static_cast<int>(std::min<int64_t>(width, n_end - n0));
      const int8_t* bp = b.data() + n0 * b.k_groups() * 4;
      for (int64_t m = (t % row_blocks) * kRowBlock; m < m_end; m += kern.max_rows) {
        const int rows = static_cast<int>(std::min<int64_t>(kern.max_rows, m_end - m));
        Epilogue e{col_add + n0, need_sums ? pa.row_sum.data() + m : nullptr,
                   row_shifts ? row_shift.data() + m : nullptr, col_shift + n0, col_term + n0, need_sums, row_shifts,
                   fused && rq ? rq->mult + n0 : nullptr,
                   rq ? rq->zero : 0.f, lo, hi, fused && out.scale ? out.scale + n0 : nullptr,
                   out.bias ? out.bias + n0 : nullptr};
        const TileFn tile = kern.pick(rows, width);
        const uint8_t* am = pa.data + m * pa.ld;
        if (!rq && !out.scale) {
          tile(b.k_groups(), am, pa.ld, rows, bp, width, cols, static_cast<int32_t*>(y) + m * ldy + n0, ldy, e);
        } else if (fused) {
          const int64_t bytes = rq ? 1 : int64_t{sizeof(float)};
          tile(b.k_groups(), am, pa.ld, rows, bp, width, cols,
               static_cast<uint8_t*>(y) + (m * ldy + n0) * bytes, ldy, e);
        } else if (out.scale) {
          tile(b.k_groups(), am, pa.ld, rows, bp, width, cols, block, kPanel, e);
          int32_rows_to_float(block, rows, cols, kPanel, out.scale + n0, out.bias ? out.bias + n0 : nullptr,
                              static_cast<float*>(y) + m * ldy + n0, ldy);
        } else {
          tile(b.k_groups(), am, pa.ld, rows, bp, width, cols, block, kPanel, e);
          requantize_rows_8bit(block, rows, cols, kPanel, nullptr, rq->mult + n0, rq->zero, rq->is_signed,
                               static_cast<uint8_t*>(y) + m * ldy + n0, ldy);
        }
      }
    }
  });
}

// int8_gemm_requantized's column ranges start and end on panels.
void check_panel_range(const PackedInt8B& b, int64_t col_begin, int64_t col_end) {
  ONYX_CHECK(col_begin % kPanel == 0 && (col_end >= b.N() || col_end % kPanel == 0),
             "int8_gemm_requantized: a column range must start and end on a panel");
}

}  // namespace

Int8Isa int8_gemm_best_isa() {
#ifdef ONYX_INT8_X86
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vnni) return Int8Isa::Avx512Vnni;
  if (f.avx2 && f.avxvnni) return Int8Isa::AvxVnni;
  if (f.avx2) return Int8Isa::Avx2;
  return Int8Isa::Scalar;
#else
  return Int8Isa::Scalar;
#endif
}

namespace {

// One column of B stored as a row (K contiguous bytes, flipped to int8) into
// its panel: groups of 4 bytes go to dst + (k / 4) * width * 4 as they are,
// whole words at a time (packing loads faster: a byte at a time it took a
// quarter of a quantized MobileNetV2's load).
void pack_row(const uint8_t* row, int64_t K, uint8_t flip, int64_t width, int8_t* dst, int32_t* col_sum) {
  int32_t sum = 0;
  for (int64_t k = 0; k < K; ++k) sum += static_cast<int8_t>(row[k] ^ flip);
  *col_sum = sum;
  const uint32_t flip4 = flip * 0x01010101u;
  int64_t k = 0;
  for (; k + 4 <= K; k += 4) {
    uint32_t v;
    std::memcpy(&v, row + k, 4);
    v ^= flip4;
    std::memcpy(dst + (k / 4) * width * 4, &v, 4);
  }
  for (; k < K; ++k) dst[(k / 4) * width * 4 + k % 4] = static_cast<int8_t>(row[k] ^ flip);
}

// Columns n0 .. n0 + cols of B stored row-major (rows k .. k + 3 at src, ldb
// apart; `rows` < 4 at the end of K, the rest padding left zero) into one
// group of their panel: each column's four bytes side by side. Reading whole
// rows instead of a column at a time packs BERT-base's int8 MatMuls 4x faster
// (the byte-per-column loop was 40% of its load).
void pack_group(const uint8_t* src, int64_t ldb, int64_t rows, int64_t cols, uint8_t flip, int8_t* dst,
                int32_t* col_sum) {
  int64_t c = 0;  // columns done
#ifdef __SSE2__
  if (rows == 4) {
    const uint8_t *r0 = src, *r1 = src + ldb, *r2 = src + 2 * ldb, *r3 = src + 3 * ldb;
    const __m128i flip16 = _mm_set1_epi8(static_cast<char>(flip)), zero = _mm_setzero_si128();
    auto load = [&](const uint8_t* r) {
      return _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + c)), flip16);
    };
    // int8 lanes widened to int16, low and high halves
    auto widen_lo = [&](__m128i v) { return _mm_unpacklo_epi8(v, _mm_cmpgt_epi8(zero, v)); };
    auto widen_hi = [&](__m128i v) { return _mm_unpackhi_epi8(v, _mm_cmpgt_epi8(zero, v)); };
    for (; c + 16 <= cols; c += 16) {
      const __m128i v0 = load(r0), v1 = load(r1), v2 = load(r2), v3 = load(r3);
      const __m128i lo01 = _mm_unpacklo_epi8(v0, v1), hi01 = _mm_unpackhi_epi8(v0, v1);
      const __m128i lo23 = _mm_unpacklo_epi8(v2, v3), hi23 = _mm_unpackhi_epi8(v2, v3);
      auto* out = reinterpret_cast<__m128i*>(dst + c * 4);
      _mm_storeu_si128(out, _mm_unpacklo_epi16(lo01, lo23));
      _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));
      _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));
      _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));
      const __m128i sum_lo = _mm_add_epi16(_mm_add_epi16(widen_lo(v0), widen_lo(v1)),
                                           _mm_add_epi16(widen_lo(v2), widen_lo(v3)));
      const __m128i sum_hi = _mm_add_epi16(_mm_add_epi16(widen_hi(v0), widen_hi(v1)),
                                           _mm_add_epi16(widen_hi(v2), widen_hi(v3)));
      auto* acc = reinterpret_cast<__m128i*>(col_sum + c);
      const __m128i halves[2] = {sum_lo, sum_hi};
      for (int h = 0; h < 2; ++h) {
        const __m128i sign = _mm_cmpgt_epi16(zero, halves[h]);
        _mm_storeu_si128(acc + 2 * h, _mm_add_epi32(_mm_loadu_si128(acc + 2 * h), _mm_unpacklo_epi16(halves[h], sign)));
        _mm_storeu_si128(acc + 2 * h + 1,
                         _mm_add_epi32(_mm_loadu_si128(acc + 2 * h + 1), _mm_unpackhi_epi16(halves[h], sign)));
      }
    }
  }
#endif
  for (int64_t j = 0; j < rows; ++j)
    for (int64_t k = c; k < cols; ++k) {
      auto v = static_cast<int8_t>(src[j * ldb + k] ^ flip);
      dst[k * 4 + j] = v;
      col_sum[k] += v;
    }
}

}  // namespace

PackedInt8B::PackedInt8B(const void* b, bool is_signed, int64_t K, int64_t N, int64_t ldb, bool trans)
    : K_(K), N_(N), shift_(is_signed ? 0 : 128) {
  const int64_t groups = k_groups(), np = padded_n();
  data_.assign(static_cast<size_t>(np * groups * 4), 0);
  col_sum_.assign(static_cast<size_t>(np), 0);
  const uint8_t* src = static_cast<const uint8_t*>(b);
  const uint8_t flip = is_signed ? 0 : 0x80;  // uint8 x - 128 as a byte
  for (int64_t n0 = 0; n0 < np; n0 += kPanel) {
    const int64_t width = panel_width(*this, n0);
    int8_t* panel = data_.data() + n0 * groups * 4;
    const int64_t cols = std::min(width, N - n0);
    if (trans) {
      for (int64_t c = 0; c < cols; ++c)
        pack_row(src + (n0 + c) * ldb, K, flip, width, panel + c * 4, &col_sum_[n0 + c]);
      continue;
    }
    for (int64_t k = 0; k < K; k += 4)
      pack_group(src + k * ldb + n0, ldb, std::min<int64_t>(4, K - k), cols, flip, panel + (k / 4) * width * 4,
                 &col_sum_[n0]);
  }
}

void int8_gemm(int64_t M, const Int8A& a, const std::vector<int32_t>& a_zp, const PackedInt8B& b,
               const std::vector<int32_t>& b_zp, int32_t* y, int64_t ldy, ThreadPool* pool) {
  int8_gemm(M, a, a_zp, b, b_zp, y, ldy, pool, int8_gemm_best_isa());
}

Int8GemmColumns int8_gemm_columns(const PackedInt8B& b, bool a_signed, const std::vector<int32_t>& a_zp,
                                  const std::vector<int32_t>& b_zp, const int32_t* bias) {
  // A = a_u8 - 128 (int8) or a_u8; B = b_s8 + shift.
  const int64_t K = b.K(), N = b.N(), np = b.padded_n();
  Int8GemmColumns c;
  c.a_signed = a_signed;
  c.a_zp = a_zp.empty() ? std::vector<int32_t>{0} : a_zp;
  c.add.assign(static_cast<size_t>(np), 0);
  c.shift.assign(static_cast<size_t>(np), 0);
  c.term.assign(static_cast<size_t>(np), 0);
  const int32_t row_shift = (a_signed ? -128 : 0) - c.a_zp[0];
  for (int64_t n = 0; n < N; ++n) {
    c.shift[n] = b.shift() - zero_point_at(b_zp, n);
    c.term[n] = static_cast<int32_t>(static_cast<uint32_t>(b.col_sums()[n]) +
                                     static_cast<uint32_t>(K) * static_cast<uint32_t>(c.shift[n]));
    if (c.a_zp.size() == 1) c.add[n] = wrap_mul_add(0, row_shift, c.term[n]);
    if (bias) c.add[n] = wrap_add(c.add[n], bias[n]);
    c.row_sums = c.row_sums || c.shift[n] != 0;
  }
  return c;
}

void int8_gemm(int64_t M, const Int8A& a, const std::vector<int32_t>& a_zp, const PackedInt8B& b,
               const std::vector<int32_t>& b_zp, int32_t* y, int64_t ldy, ThreadPool* pool, Int8Isa isa) {
  gemm(M, a, int8_gemm_columns(b, a.is_signed, a_zp, b_zp, nullptr), b, OutputStage{}, y, ldy, pool, isa);
}

void int8_gemm(int64_t M, const Int8A& a, const Int8GemmColumns& cols, const PackedInt8B& b, int32_t* y,
               int64_t ldy, Int8Isa isa) {
  gemm(M, a, cols, b, OutputStage{}, y, ldy, nullptr, isa);
}

void int8_gemm_requantized(int64_t M, const Int8A& a, const std::vector<int32_t>& a_zp, const PackedInt8B& b,
                           const std::vector<int32_t>& b_zp, const Int8Requant& rq, uint8_t* y, int64_t ldy,
                           ThreadPool* pool, Int8Isa isa, int64_t col_begin, int64_t col_end) {
  check_panel_range(b, col_begin, col_end);
  gemm(M, a, int8_gemm_columns(b, a.is_signed, a_zp, b_zp, rq.bias), b, OutputStage{&rq}, y, ldy, pool, isa,
       col_begin, col_end);
}

void int8_gemm_requantized(int64_t M, const Int8A& a, const Int8GemmColumns& cols, const PackedInt8B& b,
                           const Int8Requant& rq, uint8_t* y, int64_t ldy, Int8Isa isa, int64_t col_begin,
                           int64_t col_end) {
  check_panel_range(b, col_begin, col_end);
  ONYX_CHECK(!rq.bias, "int8_gemm_requantized: with precomputed columns the bias is in the columns");
  gemm(M, a, cols, b, OutputStage{&rq}, y, ldy, nullptr, isa, col_begin, col_end);
}

void int32_rows_to_float(const int32_t* sums, int64_t rows, int64_t cols, int64_t lds, const float* scale,
                         const float* bias, float* y, int64_t ldy) {
#ifdef ONYX_INT8_X86
  if (cpu_features().avx2) return int32_rows_to_float_avx2(sums, rows, cols, lds, scale, bias, y, ldy);
#endif
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      y[r * ldy + c] = static_cast<float>(sums[r * lds + c]) * scale[c] + (bias ? bias[c] : 0.f);
}

void int8_gemm_to_float(int64_t M, const Int8A& a, const std::vector<int32_t>& a_zp, const PackedInt8B& b,
                        const std::vector<int32_t>& b_zp, const float* scale, const float* bias, float* y, int64_t ldy,
                        ThreadPool* pool, Int8Isa isa) {
  gemm(M, a, int8_gemm_columns(b, a.is_signed, a_zp, b_zp, nullptr), b, OutputStage{nullptr, scale, bias}, y, ldy,
       pool, isa);
}

}  // namespace onyx
