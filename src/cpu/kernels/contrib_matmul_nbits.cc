// MatMulNBits (com.microsoft): Y = A * dequant(B)^T + bias, where B holds
// 2-, 4- or 8-bit codes in blocks of block_size along K, each block with a
// scale and a zero point: W[n, k] = (q[n, k] - zp[n, blk]) * scale[n, blk].
// This is what onnxruntime-genai and ORT's MatMulNBitsQuantizer put in LLMs.
//
// accuracy_level 4 means, as in ORT, that A is quantized to int8 per block
// (scale max|a| / 127, round to nearest) before the product: Onyx does the
// same so its numbers are ORT's, up to float rounding. With AVX-512 VNNI and
// 4-bit codes every row count runs the int8 x 4-bit kernel
// (cpu/int4_block_gemm.h); otherwise a decode row (M = 1, 4-bit, AVX2)
// multiplies int8 by the codes directly and other shapes round A through
// int8 and back to float and take the float paths (int8 products are exact
// in float). Like ORT, only for constant B without float zero points;
// everything else computes in float, as ORT's CPU kernel does.
//
// One row of A (decode) reads the packed codes directly (fused
// dequantize-dot). More rows use SGEMM on B dequantized once at init and
// prepacked, when B is constant and its float copy under kMaxPrepackBytes;
// otherwise up to kFusedMaxRows rows take the fused kernel and more rows
// dequantize B per run in column tiles for SGEMM.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "base/cpu_features.h"
#include "cpu/float_values.h"
#include "cpu/gemm.h"
#include "cpu/int4_block_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define ONYX_NBITS_X86 1
#define ONYX_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define ONYX_TARGET_AVX512F __attribute__((target("avx512f")))
#endif

namespace onyx {
namespace {

std::string S(int64_t v) { return std::to_string(v); }

// Rows of A up to which the fused kernel beats dequantizing all of B per run.
// Against B prepacked as float it wins at one row only (K = N = 4096, one
// thread: M = 1 0.76 vs 1.2 ms, M = 4 3.2 vs 1.9 ms).
constexpr int64_t kFusedMaxRows = 4;
// A constant B whose float copy would exceed this is dequantized per run in
// column tiles instead of kept as float. The cap is per node and a session
// has no shared budget, so it is small: at 256 MiB an int4 LLM (hundreds of
// projections) would have needed 8x its weights' memory to run prompts.
constexpr int64_t kMaxPrepackBytes = int64_t{4} << 20;

struct NBitsShape {
  int64_t K = 0, N = 0, bits = 4, block = 0, k_blocks = 0, blob = 0;
  int64_t zp_row_bytes() const { return (k_blocks * bits + 7) / 8; }
  int64_t default_zero_point() const { return int64_t{1} << (bits - 1); }
};

// B, scales and zero points, unpacked enough for both paths: codes stay
// packed, scales and zero points become float [N, k_blocks].
struct NBitsWeights {
  std::vector<uint8_t> codes;  // [N, k_blocks, blob]
  std::vector<float> scales, zero_points;
  std::vector<float> scaled_zero_points;  // scale * zero point, for the fused kernels' offset
  std::vector<int32_t> g_idx;  // empty, or the block of each k
};

NBitsShape read_shape(const KernelInitContext& ic) {
  NBitsShape s;
  s.K = ic.get_int("K", 0);
  s.N = ic.get_int("N", 0);
  s.bits = ic.get_int("bits", 4);
  s.block = ic.get_int("block_size", 0);
  if (s.K <= 0 || s.N <= 0) kernel_fail("MatMulNBits: attributes K and N must be positive, got K=" + S(s.K) + ", N=" + S(s.N));
  if (s.bits != 2 && s.bits != 4 && s.bits != 8) kernel_fail("MatMulNBits: bits must be 2, 4 or 8, got " + S(s.bits));
  if (s.block < 16 || (s.block & (s.block - 1)) != 0)
    kernel_fail("MatMulNBits: block_size must be a power of 2 and at least 16, got " + S(s.block));
  s.k_blocks = (s.K + s.block - 1) / s.block;
  s.blob = s.block * s.bits / 8;
  return s;
}

NBitsWeights read_weights(const NBitsShape& s, const Tensor& b, const Tensor& scales, const Tensor* zp, const Tensor* g_idx) {
  if (b.dtype() != DataType::UInt8) kernel_fail("MatMulNBits: B must be uint8, got " + dtype_name(b.dtype()));
  if (b.numel() != s.N * s.k_blocks * s.blob)
    kernel_fail("MatMulNBits: B shape " + shape_to_string(b.shape()) + " should be [" + S(s.N) + ", " + S(s.k_blocks) +
                ", " + S(s.blob) + "] for K=" + S(s.K) + ", N=" + S(s.N) + ", bits=" + S(s.bits) + ", block_size=" + S(s.block));
  if (!dtype_is_float(scales.dtype()) || scales.numel() != s.N * s.k_blocks)
    kernel_fail("MatMulNBits: scales should be " + S(s.N * s.k_blocks) + " float values, got " + dtype_name(scales.dtype()) +
                " " + shape_to_string(scales.shape()));
  NBitsWeights w;
  w.codes.assign(b.data<uint8_t>(), b.data<uint8_t>() + b.numel());
  w.scales = load_floats<float>(scales);
  w.zero_points.assign(static_cast<size_t>(s.N * s.k_blocks), static_cast<float>(s.default_zero_point()));
  if (zp && zp->dtype() == DataType::UInt8) {
    if (zp->numel() != s.N * s.zp_row_bytes())
      kernel_fail("MatMulNBits: packed uint8 zero_points should have " + S(s.N * s.zp_row_bytes()) + " bytes, got " +
                  shape_to_string(zp->shape()));
    const uint8_t* z = zp->data<uint8_t>();
    const int64_t per_byte = 8 / s.bits, mask = (1 << s.bits) - 1;
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t j = 0; j < s.k_blocks; ++j)
        w.zero_points[n * s.k_blocks + j] =
            static_cast<float>((z[n * s.zp_row_bytes() + j / per_byte] >> ((j % per_byte) * s.bits)) & mask);
  } else if (zp) {
    if (!dtype_is_float(zp->dtype()) || zp->numel() != s.N * s.k_blocks)
      kernel_fail("MatMulNBits: zero_points must be packed uint8 or " + S(s.N * s.k_blocks) + " floats like scales, got " +
                  dtype_name(zp->dtype()) + " " + shape_to_string(zp->shape()));
    w.zero_points = load_floats<float>(*zp);
  }
  w.scaled_zero_points.resize(w.scales.size());
  for (size_t i = 0; i < w.scales.size(); ++i) w.scaled_zero_points[i] = w.scales[i] * w.zero_points[i];
  if (g_idx) {
    if (g_idx->dtype() != DataType::Int32 || g_idx->numel() != s.K)
      kernel_fail("MatMulNBits: g_idx must be " + S(s.K) + " int32 values, got " + dtype_name(g_idx->dtype()) + " " +
                  shape_to_string(g_idx->shape()));
    // ORT's numbers for this pairing follow none of the documented layouts: refuse rather than differ.
    if (zp && zp->dtype() == DataType::UInt8)
      kernel_fail("MatMulNBits: g_idx with packed uint8 zero_points is not supported (use float zero_points)");
    w.g_idx.assign(g_idx->data<int32_t>(), g_idx->data<int32_t>() + s.K);
    for (int32_t g : w.g_idx)
      if (g < 0 || g >= s.k_blocks) kernel_fail("MatMulNBits: g_idx value " + S(g) + " is outside [0, " + S(s.k_blocks) + ")");
  }
  return w;
}

// Float W[n0..n1, 0..K) into out (row stride K).
#ifdef ONYX_NBITS_X86
bool has_avx2();

// 32 4-bit codes (16 bytes, low nibble first) -> q * scale - offset, as the
// scalar loop computes it (multiply, then subtract: no FMA, same bits).
ONYX_TARGET_AVX2 void dequantize_32_4bit_avx2(const uint8_t* codes, float scale, float offset, float* dst) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
  const __m128i low_mask = _mm_set1_epi8(15);
  const __m128i lo = _mm_and_si128(bytes, low_mask), hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low_mask);
  const __m128i q[2] = {_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi)};  // codes in k order
  const __m256 vs = _mm256_set1_ps(scale), vo = _mm256_set1_ps(offset);
  for (int h = 0; h < 2; ++h) {
    __m256 a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q[h]));
    __m256 b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q[h], 8)));
    _mm256_storeu_ps(dst + 16 * h, _mm256_sub_ps(_mm256_mul_ps(a, vs), vo));
    _mm256_storeu_ps(dst + 16 * h + 8, _mm256_sub_ps(_mm256_mul_ps(b, vs), vo));
  }
}
#endif

void dequantize_rows(const NBitsShape& s, const NBitsWeights& w, int64_t n0, int64_t n1, float* out) {
  const int mask = (1 << s.bits) - 1;
#ifdef ONYX_NBITS_X86
  const bool avx2 = has_avx2();
#endif
  const int64_t row_bytes = s.k_blocks * s.blob;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = w.codes.data() + n * row_bytes;
    const float* sc = w.scales.data() + n * s.k_blocks;
    const float* zp = w.zero_points.data() + n * s.k_blocks;
    float* o = out + (n - n0) * s.K;
    if (!w.g_idx.empty()) {
      for (int64_t k = 0; k < s.K; ++k) {
        int64_t bit = k * s.bits, j = w.g_idx[k];
        o[k] = (static_cast<float>((row[bit >> 3] >> (bit & 7)) & mask) - zp[j]) * sc[j];
      }
      continue;
    }
    // Block by block: W = q * scale - zp * scale.
    for (int64_t j = 0; j < s.k_blocks; ++j) {
      const uint8_t* codes = row + j * s.blob;
      const int64_t k0 = j * s.block, len = std::min(s.block, s.K - k0);
      const float scale = sc[j], offset = zp[j] * sc[j];
      float* dst = o + k0;
#ifdef ONYX_NBITS_X86
      if (s.bits == 4 && len == s.block && s.block % 32 == 0 && avx2) {
        for (int64_t i = 0; i < len; i += 32) dequantize_32_4bit_avx2(codes + i / 2, scale, offset, dst + i);
        continue;
      }
#endif
      if (s.bits == 4 && len == s.block) {
        for (int64_t i = 0; i < s.blob; ++i) {
          dst[2 * i] = static_cast<float>(codes[i] & 15) * scale - offset;
          dst[2 * i + 1] = static_cast<float>(codes[i] >> 4) * scale - offset;
        }
      } else if (s.bits == 8) {
        for (int64_t i = 0; i < len; ++i) dst[i] = static_cast<float>(codes[i]) * scale - offset;
      } else {
        for (int64_t i = 0; i < len; ++i) {
          int64_t bit = i * s.bits;
          dst[i] = static_cast<float>((codes[bit >> 3] >> (bit & 7)) & mask) * scale - offset;
        }
      }
    }
  }
}

// ---- fused dequantize-dot for few rows ----

// Per block of one row of A, what the fused dot needs: the row reordered to
// the codes' order in memory and the block's sum (for the zero point).
struct PreparedRow {
  std::vector<float> a;    // [k_blocks * block]: 4-bit: per group of codes, the even then the odd k
  std::vector<float> sum;  // [k_blocks]
};

// group: the 4-bit codes a row dot takes at once (16 or 32).
PreparedRow prepare_row(const NBitsShape& s, const float* a, int64_t group) {
  PreparedRow p;
  p.a.assign(static_cast<size_t>(s.k_blocks * s.block), 0.f);
  p.sum.assign(static_cast<size_t>(s.k_blocks), 0.f);
  for (int64_t k = 0; k < s.K; ++k) {
    int64_t pos = k;
    if (s.bits == 4) {  // byte i of a group holds k = 2i (low) and 2i + 1 (high)
      int64_t g = k / group, r = k % group;
      pos = g * group + (r % 2) * (group / 2) + r / 2;
    }
    p.a[pos] = a[k];
    p.sum[k / s.block] += a[k];
  }
  return p;
}

// sum_j scale[j] * sum_k q[j, k] a[j, k] over a row's blocks, portable:
// decode each block then dot.
float row_dot_generic(const NBitsShape& s, const uint8_t* codes, const float* a, const float* scale) {
  float total = 0.f;
  const int mask = (1 << s.bits) - 1;
  for (int64_t j = 0; j < s.k_blocks; ++j, codes += s.blob, a += s.block) {
    float acc = 0.f;
    if (s.bits == 4) {
      for (int64_t g = 0; g < s.block / 16; ++g)
        for (int i = 0; i < 8; ++i)
          acc += static_cast<float>(codes[g * 8 + i] & 15) * a[g * 16 + i] + static_cast<float>(codes[g * 8 + i] >> 4) * a[g * 16 + 8 + i];
    } else {
      for (int64_t k = 0; k < s.block; ++k) {
        int64_t bit = k * s.bits;
        acc += static_cast<float>((codes[bit >> 3] >> (bit & 7)) & mask) * a[k];
      }
    }
    total += scale[j] * acc;
  }
  return total;
}

#ifdef ONYX_NBITS_X86
ONYX_TARGET_AVX2 float hsum(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
  return _mm_cvtss_f32(x);
}

// 4-bit: 8 bytes give 8 low codes (even k) and 8 high codes (odd k); the
// block's scale is applied to the vector sum, so one horizontal sum per row.
ONYX_TARGET_AVX2 float row_dot_4bit_avx2(const NBitsShape& s, const uint8_t* codes, const float* a, const float* scale) {
  __m256 total = _mm256_setzero_ps();
  const __m256i low_mask = _mm256_set1_epi32(15);
  for (int64_t j = 0; j < s.k_blocks; ++j) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t g = 0; g < s.block / 16; ++g, codes += 8, a += 16) {
      __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes)));
      acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(bytes, low_mask)), _mm256_loadu_ps(a), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(bytes, 4)), _mm256_loadu_ps(a + 8), acc1);
    }
    total = _mm256_fmadd_ps(_mm256_add_ps(acc0, acc1), _mm256_set1_ps(scale[j]), total);
  }
  return hsum(total);
}

// sum_k q[k] a[k] over one block of 4-bit codes, 32 per step.
ONYX_TARGET_AVX512F inline __m512 block_dot_4bit_avx512(const uint8_t* codes, const float* a, int64_t steps) {
  const __m512i low_mask = _mm512_set1_epi32(15);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  for (int64_t g = 0; g < steps; ++g, codes += 16, a += 32) {
    __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
    acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(bytes, low_mask)), _mm512_loadu_ps(a), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(bytes, 4)), _mm512_loadu_ps(a + 16), acc1);
  }
  return _mm512_add_ps(acc0, acc1);
}

// row_dot_4bit_avx2 with 16 bytes (32 codes) per step on AVX-512 (blocks of
// 32k). Blocks alternate between two totals: one would make each block wait
// on the previous block's FMA.
ONYX_TARGET_AVX512F float row_dot_4bit_avx512(const NBitsShape& s, const uint8_t* codes, const float* a,
                                              const float* scale) {
  const int64_t steps = s.block / 32;
  __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 2 <= s.k_blocks; j += 2, codes += 2 * s.blob, a += 2 * s.block) {
    even = _mm512_fmadd_ps(block_dot_4bit_avx512(codes, a, steps), _mm512_set1_ps(scale[j]), even);
    odd = _mm512_fmadd_ps(block_dot_4bit_avx512(codes + s.blob, a + s.block, steps), _mm512_set1_ps(scale[j + 1]), odd);
  }
  if (j < s.k_blocks) even = _mm512_fmadd_ps(block_dot_4bit_avx512(codes, a, steps), _mm512_set1_ps(scale[j]), even);
  return _mm512_reduce_add_ps(_mm512_add_ps(even, odd));
}

ONYX_TARGET_AVX2 float row_dot_8bit_avx2(const NBitsShape& s, const uint8_t* codes, const float* a, const float* scale) {
  __m256 total = _mm256_setzero_ps();
  for (int64_t j = 0; j < s.k_blocks; ++j) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t k = 0; k < s.block; k += 16, codes += 16, a += 16) {
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
      acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)), _mm256_loadu_ps(a), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8))), _mm256_loadu_ps(a + 8), acc1);
    }
    total = _mm256_fmadd_ps(_mm256_add_ps(acc0, acc1), _mm256_set1_ps(scale[j]), total);
  }
  return hsum(total);
}

bool has_avx2() { return cpu_features().avx2 && cpu_features().fma; }
#endif

using RowDot = float (*)(const NBitsShape&, const uint8_t*, const float*, const float*);

// A row dot and the group of 4-bit codes it takes at once (prepare_row).
struct RowKernel {
  RowDot dot;
  int64_t group;
};

RowKernel pick_row_kernel(const NBitsShape& s) {
#ifdef ONYX_NBITS_X86
  if (cpu_features().avx512f && s.bits == 4 && s.block % 32 == 0) return {row_dot_4bit_avx512, 32};
  if (has_avx2() && s.bits == 4) return {row_dot_4bit_avx2, 16};
  if (has_avx2() && s.bits == 8) return {row_dot_8bit_avx2, 16};
#endif
  return {row_dot_generic, 16};
}

// x . y over n floats with independent partial sums (a single running sum
// would wait on each add's latency: a quarter of a decode step).
float dot_floats(const float* x, const float* y, int64_t n) {
  float part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) part[l] += x[i + l] * y[i + l];
  float sum = 0.f;
  for (; i < n; ++i) sum += x[i] * y[i];
  for (float p : part) sum += p;
  return sum;
}

// y[m, n] for a few rows of A, straight from the codes (no g_idx):
// sum_j scale_j (q_j . a_j) - sum_j scale_j zp_j sum(a_j).
void fused_matmul(const NBitsShape& s, const NBitsWeights& w, const float* A, int64_t M, const float* bias, float* Y,
                  ThreadPool* pool) {
  std::vector<PreparedRow> rows;
  const RowKernel kernel = pick_row_kernel(s);
  for (int64_t m = 0; m < M; ++m) rows.push_back(prepare_row(s, A + m * s.K, kernel.group));
  const int64_t row_bytes = s.k_blocks * s.blob;
  parallel_for(s.N * s.K > (1 << 15) ? pool : nullptr, s.N, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const uint8_t* codes = w.codes.data() + n * row_bytes;
      const float* sc = w.scales.data() + n * s.k_blocks;
      const float* szp = w.scaled_zero_points.data() + n * s.k_blocks;
      for (int64_t m = 0; m < M; ++m) {
        const PreparedRow& r = rows[m];
        const float offset = dot_floats(szp, r.sum.data(), s.k_blocks);
        Y[m * s.N + n] = kernel.dot(s, codes, r.a.data(), sc) - offset + (bias ? bias[n] : 0.f);
      }
    }
  });
}

// ---- accuracy_level 4: A quantized to int8 per block, as ORT does ----

// One row of A per block as int8 with a scale, reordered to the codes'
// order per 16 bytes (32 codes): the 16 low nibbles (even k), then the 16
// high ones (odd k); and each block's code sum for the zero point.
struct Int8Row {
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<float> scaled_sum;  // scale * sum of the block's int8 values
};

Int8Row quantize_row_int8(const NBitsShape& s, const float* a) {
  Int8Row r;
  r.q.assign(static_cast<size_t>(s.k_blocks * s.block), 0);
  r.scale.assign(static_cast<size_t>(s.k_blocks), 0.f);
  r.scaled_sum.assign(static_cast<size_t>(s.k_blocks), 0.f);
  for (int64_t j = 0; j < s.k_blocks; ++j) {
    const int64_t k0 = j * s.block, k1 = std::min(s.K, k0 + s.block);
    float mx = 0.f;
    for (int64_t k = k0; k < k1; ++k) mx = std::max(mx, std::fabs(a[k]));
    r.scale[j] = mx / 127.f;
    const float inv = mx > 0.f ? 127.f / mx : 0.f;
    int32_t sum = 0;
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t g = k / 32, t = k % 32;
      auto v = static_cast<int8_t>(std::clamp(std::nearbyint(a[k] * inv), -127.f, 127.f));
      r.q[g * 32 + (t % 2) * 16 + t / 2] = v;
      sum += v;
    }
    r.scaled_sum[j] = r.scale[j] * static_cast<float>(sum);
  }
  return r;
}

// A's rows through the same int8 blocks, back in float: the float paths
// then give ORT's accuracy_level 4 numbers (int8 products are exact in float).
std::vector<float> int8_round_trip(const NBitsShape& s, const float* A, int64_t M) {
  std::vector<float> out(A, A + M * s.K);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k0 = 0; k0 < s.K; k0 += s.block) {
      float* a = out.data() + m * s.K;
      const int64_t k1 = std::min(s.K, k0 + s.block);
      float mx = 0.f;
      for (int64_t k = k0; k < k1; ++k) mx = std::max(mx, std::fabs(a[k]));
      const float scale = mx / 127.f, inv = mx > 0.f ? 127.f / mx : 0.f;
      for (int64_t k = k0; k < k1; ++k) a[k] = std::clamp(std::nearbyint(a[k] * inv), -127.f, 127.f) * scale;
    }
  return out;
}

#ifdef ONYX_NBITS_X86
// sum_j scale[j] a_scale[j] (codes_j . a_j) with u8 x s8 pairwise products.
ONYX_TARGET_AVX2 float row_dot_4bit_int8_avx2(const NBitsShape& s, const uint8_t* codes, const Int8Row& r, const float* scale) {
  __m256 total = _mm256_setzero_ps();
  const __m128i low_mask = _mm_set1_epi8(15);
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* a = r.q.data();
  for (int64_t j = 0; j < s.k_blocks; ++j) {
    __m256i acc = _mm256_setzero_si256();
    for (int64_t g = 0; g < s.block / 32; ++g, codes += 16, a += 32) {
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
      __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low_mask), _mm_and_si128(b, low_mask));
      __m256i prod = _mm256_maddubs_epi16(u, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(prod, ones));
    }
    total = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(scale[j] * r.scale[j]), total);
  }
  return hsum(total);
}
#endif

bool int8_path_available(const NBitsShape& s) {
#ifdef ONYX_NBITS_X86
  return s.bits == 4 && s.block % 32 == 0 && has_avx2();
#else
  return false;
#endif
}

void fused_matmul_int8(const NBitsShape& s, const NBitsWeights& w, const float* A, int64_t M, const float* bias, float* Y,
                       ThreadPool* pool) {
#ifdef ONYX_NBITS_X86
  std::vector<Int8Row> rows;
  for (int64_t m = 0; m < M; ++m) rows.push_back(quantize_row_int8(s, A + m * s.K));
  const int64_t row_bytes = s.k_blocks * s.blob;
  parallel_for(s.N * s.K > (1 << 15) ? pool : nullptr, s.N, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const float* sc = w.scales.data() + n * s.k_blocks;
      const float* szp = w.scaled_zero_points.data() + n * s.k_blocks;
      for (int64_t m = 0; m < M; ++m) {
        const Int8Row& r = rows[m];
        const float offset = dot_floats(szp, r.scaled_sum.data(), s.k_blocks);
        Y[m * s.N + n] = row_dot_4bit_int8_avx2(s, w.codes.data() + n * row_bytes, r, sc) - offset + (bias ? bias[n] : 0.f);
      }
    }
  });
#endif
}

// Dequantizes N in column tiles and multiplies each: float memory stays one
// tile. Each tile is computed transposed, Y^T[tile, M] = W_tile A^T, so the
// GEMM packs the dequantized rows as they lie (packing them transposed took
// 44% of a K = N = 4096, M = 64 run), and A^T is packed once for all tiles.
void tiled_matmul(const NBitsShape& s, const NBitsWeights& w, const float* A, int64_t M, const float* bias, float* Y,
                  ThreadPool* pool) {
  const int64_t tile = std::max<int64_t>(16, (int64_t{4} << 20) / (4 * s.K) / 16 * 16);  // ~4 MiB of float
  std::vector<float> wt(static_cast<size_t>(std::min(tile, s.N) * s.K));
  std::vector<float> yt(static_cast<size_t>(std::min(tile, s.N) * M));
  const PackedB a_t = gemm_pack_b(true, s.K, M, A, s.K);
  for (int64_t n0 = 0; n0 < s.N; n0 += tile) {
    const int64_t n1 = std::min(s.N, n0 + tile), width = n1 - n0;
    parallel_for(pool, width, [&](int64_t a, int64_t b) { dequantize_rows(s, w, n0 + a, n0 + b, wt.data() + a * s.K); });
    gemm_f32_packed(false, width, 1.f, wt.data(), s.K, a_t, 0.f, yt.data(), M, pool);
    parallel_for(M * width > (1 << 14) ? pool : nullptr, M, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        float* y = Y + m * s.N + n0;
        for (int64_t j = 0; j < width; ++j) y[j] = yt[j * M + m] + (bias ? bias[n0 + j] : 0.f);
      }
    });
  }
}

class MatMulNBitsKernel final : public Kernel {
 public:
  explicit MatMulNBitsKernel(const KernelInitContext& ic) : s_(read_shape(ic)) {
    int64_t level = ic.get_int("accuracy_level", 0);
    if (level < 0 || level > 4) kernel_fail("MatMulNBits: accuracy_level must be 0 to 4, got " + S(level));
    const Tensor* b = ic.constant_input(1);
    const Tensor* scales = ic.constant_input(2);
    bool zp_const = !ic.has_input(3) || ic.constant_input(3);
    bool g_const = !ic.has_input(4) || ic.constant_input(4);
    if (!b || !scales || !zp_const || !g_const) return;
    auto weights =
        std::make_shared<NBitsWeights>(read_weights(s_, *b, *scales, ic.constant_input(3), ic.constant_input(4)));
    // ORT quantizes A only where it prepacks B: constant, with uint8 zero points or none.
    int8_a_ = level == 4 && !(ic.has_input(3) && dtype_is_float(ic.constant_input(3)->dtype()));
    for (size_t i = 1; i <= 4; ++i) ic.packed_constant(i);
    const Tensor* bias = ic.constant_input(5);
    if (bias && bias->dtype() == DataType::Float) bias_ = *bias;
    if (int8_a_ && s_.bits == 4 && weights->g_idx.empty() && int4_block_gemm_supported(s_.block)) {
      // Every row count takes the int8 x 4-bit kernel: neither the codes nor a float copy are kept.
      int4_ = std::make_shared<const PackedInt4B>(weights->codes.data(), s_.k_blocks * s_.blob, s_.N, s_.K, s_.block,
                                                  weights->scales.data(), weights->zero_points.data());
      return;
    }
    weights_ = weights;
    if (s_.N * s_.K * 4 <= kMaxPrepackBytes) {
      std::vector<float> wf(static_cast<size_t>(s_.N * s_.K));
      dequantize_rows(s_, *weights_, 0, s_.N, wf.data());
      packed_ = gemm_pack_b(true, s_.K, s_.N, wf.data(), s_.K);
    }
  }

  void run(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    if (!dtype_is_float(a.dtype()) || a.dtype() == DataType::Double)
      kernel_fail("MatMulNBits: A must be float or float16, got " + dtype_name(a.dtype()));
    if (a.rank() < 1 || a.dim(-1) != s_.K)
      kernel_fail("MatMulNBits: A shape " + shape_to_string(a.shape()) + " must end in K = " + S(s_.K));
    std::shared_ptr<const NBitsWeights> w = weights_;
    if (!w && !int4_) {
      w = std::make_shared<NBitsWeights>(read_weights(s_, ctx.input(1), ctx.input(2), ctx.has_input(3) ? &ctx.input(3) : nullptr,
                                                      ctx.has_input(4) ? &ctx.input(4) : nullptr));
    }
    std::vector<float> bias_vals;
    const float* bias = nullptr;
    if (ctx.has_input(5)) {
      const Tensor& bt = bias_.defined() ? bias_ : ctx.input(5);
      if (!dtype_is_float(bt.dtype()) || bt.numel() != s_.N)
        kernel_fail("MatMulNBits: bias should be " + S(s_.N) + " floats, got " + dtype_name(bt.dtype()) + " " +
                    shape_to_string(bt.shape()));
      if (bt.dtype() == DataType::Float) {
        bias = bt.data<float>();
      } else {
        bias_vals = load_floats<float>(bt);
        bias = bias_vals.data();
      }
    }
    const int64_t M = a.numel() / s_.K;
    Shape out_shape = a.shape();
    out_shape.back() = s_.N;
    Tensor& y = ctx.allocate_output(0, a.dtype(), out_shape);
    if (M == 0) return;
    std::vector<float> a_vals, y_vals;
    const float* ap = float_values(a, a_vals);
    float* yp = a.dtype() == DataType::Float ? y.data<float>() : (y_vals.resize(static_cast<size_t>(M * s_.N)), y_vals.data());
    if (int4_) int4_block_gemm(M, ap, *int4_, bias, yp, ctx.thread_pool());
    else multiply(*w, ap, M, bias, yp, ctx.thread_pool());
    if (a.dtype() != DataType::Float) store_floats(yp, y);
  }

 private:
  void multiply(const NBitsWeights& w, const float* a, int64_t M, const float* bias, float* y, ThreadPool* pool) const {
    const bool few_rows = M <= kFusedMaxRows && w.g_idx.empty();
    std::vector<float> a_int8;
    if (int8_a_) {
      if (M == 1 && few_rows && int8_path_available(s_)) return fused_matmul_int8(s_, w, a, M, bias, y, pool);
      a_int8 = int8_round_trip(s_, a, M);
      a = a_int8.data();
    }
    if (M == 1 && few_rows) {
      fused_matmul(s_, w, a, M, bias, y, pool);
    } else if (!packed_.empty()) {
      GemmEpilogue epi;
      epi.bias = bias;
      gemm_f32_packed(false, M, 1.f, a, s_.K, packed_, 0.f, y, s_.N, pool, epi);
    } else if (few_rows) {
      fused_matmul(s_, w, a, M, bias, y, pool);
    } else {
      tiled_matmul(s_, w, a, M, bias, y, pool);
    }
  }

  NBitsShape s_;
  std::shared_ptr<const NBitsWeights> weights_;  // when B, scales, zero points and g_idx are constant
  std::shared_ptr<const PackedInt4B> int4_;      // instead, for accuracy_level 4 on 4-bit codes (AVX-512 VNNI)
  PackedB packed_;
  Tensor bias_;
  bool int8_a_ = false;  // accuracy_level 4: decode rows may go through int8
};

}  // namespace

void register_contrib_matmul_nbits(KernelRegistry& r) {
  r.add("MatMulNBits", 1, kMaxOpset,
        [](const KernelInitContext& ic) -> std::unique_ptr<Kernel> { return std::make_unique<MatMulNBitsKernel>(ic); },
        "com.microsoft");
}

}  // namespace onyx
