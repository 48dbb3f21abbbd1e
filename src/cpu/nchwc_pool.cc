#include "cpu/nchwc_pool.h"
#include "base/cpu_features.h"

#include <algorithm>
#include <cfloat>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ONYX_POOL_X86 1
#endif

namespace onyx {

namespace {

using RowFn = void (*)(const float*, float*, int64_t, const SpatialGeometry&, BlockedPoolConfig::Kind, bool);
using GlobalFn = void (*)(const float*, int64_t, float*);

namespace portable {
template <int B>
struct Vec {
  static constexpr int kWidth = B;
  struct Reg { float v[B]; };
  static Reg zero() { return set1(0.0f); }
  static Reg lowest() { return set1(-FLT_MAX); }
  static Reg set1(float s) { Reg r; for (int i = 0; i < B; ++i) r.v[i] = s; return r; }
  static Reg load(const float* p) { Reg r; for (int i = 0; i < B; ++i) r.v[i] = p[i]; return r; }
  static void store(float* p, const Reg& r) { for (int i = 0; i < B; ++i) p[i] = r.v[i]; }
  static Reg max(const Reg& a, const Reg& b) { Reg r; for (int i = 0; i < B; ++i) r.v[i] = std::max(a.v[i], b.v[i]); return r; }
  static Reg add(const Reg& a, const Reg& b) { Reg r; for (int i = 0; i < B; ++i) r.v[i] = a.v[i] + b.v[i]; return r; }
  static Reg mul(const Reg& a, const Reg& b) { Reg r; for (int i = 0; i < B; ++i) r.v[i] = a.v[i] * b.v[i]; return r; }
};
#include "cpu/nchwc_pool_rows.inc"
}  // namespace portable

#ifdef ONYX_POOL_X86
#pragma GCC push_options
#pragma GCC target("avx512f")
// GCC 12 flags _mm512_max_ps's internal _mm512_undefined_ps() as maybe
// uninitialized (a false positive: the masked builtin never reads it).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace avx512 {
struct Vec {
  static constexpr int kWidth = 16;
  using Reg = __m512;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg lowest() { return _mm512_set1_ps(-FLT_MAX); }
  static Reg set1(float s) { return _mm512_set1_ps(s); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
};
#include "cpu/nchwc_pool_rows.inc"
#pragma GCC diagnostic pop
}  // namespace avx512
#pragma GCC pop_options
#endif

#ifdef ONYX_POOL_X86
// Blocks of 8 channels, the layout without AVX-512: one AVX2 vector each.
#pragma GCC push_options
#pragma GCC target("avx2")
namespace avx2 {
struct Vec {
  static constexpr int kWidth = 8;
  using Reg = __m256;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg lowest() { return _mm256_set1_ps(-FLT_MAX); }
  static Reg set1(float s) { return _mm256_set1_ps(s); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
};
#include "cpu/nchwc_pool_rows.inc"
}  // namespace avx2
#pragma GCC pop_options
#endif

bool has_avx512() { return cpu_features().avx512f; }
bool has_avx2() { return cpu_features().avx2; }

RowFn row_kernel(int block) {
#ifdef ONYX_POOL_X86
  if (block == 16 && has_avx512()) return avx512::pool_row<avx512::Vec>;
  if (block == 8 && has_avx2()) return avx2::pool_row<avx2::Vec>;
#endif
  return block == 16 ? portable::pool_row<portable::Vec<16>> : portable::pool_row<portable::Vec<8>>;
}

GlobalFn global_kernel(int block) {
#ifdef ONYX_POOL_X86
  if (block == 16 && has_avx512()) return avx512::global_average<avx512::Vec>;
  if (block == 8 && has_avx2()) return avx2::global_average<avx2::Vec>;
#endif
  return block == 16 ? portable::global_average<portable::Vec<16>> : portable::global_average<portable::Vec<8>>;
}

}  // namespace

SpatialGeometry BlockedPool::geometry(const Shape& xl) const {
  std::vector<int64_t> in(xl.begin() + 2, xl.end());
  if (cfg_.kind == BlockedPoolConfig::GlobalAverage) return compute_geometry(in, SpatialAttrs{}, in);
  if (cfg_.attrs.kernel.empty()) kernel_fail("pooling needs kernel_shape");
  return compute_geometry(in, cfg_.attrs, cfg_.attrs.kernel);
}

Shape BlockedPool::output_shape(const Shape& xl) const {
  SpatialGeometry g = geometry(xl);
  Shape out = {xl[0], xl[1]};
  for (auto o : g.out) out.push_back(o);
  return out;
}

void BlockedPool::run(const float* x, const Shape& xl, int block, float* y, ThreadPool* pool) const {
  if (block != 8 && block != 16) kernel_fail("blocked pooling needs block 8 or 16, got " + std::to_string(block));
  const SpatialGeometry g = geometry(xl);
  const int64_t planes = xl[0] * ((xl[1] + block - 1) / block);
  const int64_t in_plane = g.in_size() * block, out_plane = g.out_size() * block;
  if (cfg_.kind == BlockedPoolConfig::GlobalAverage) {
    GlobalFn fn = global_kernel(block);
    parallel_for(pool, planes, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) fn(x + p * in_plane, g.in_size(), y + p * out_plane);
    });
    return;
  }
  if (g.nd != 2) kernel_fail("blocked pooling is 2-D only, got " + std::to_string(g.nd) + " spatial dims");
  RowFn fn = row_kernel(block);
  const int64_t OH = g.out[0], row = g.out[1] * block;
  // Units of (band of output rows, channel block), bands outermost: across
  // threads, a thread pools rows the producing convolution most likely wrote
  // on the same core (it splits by rows too); within a unit, consecutive
  // rows of one block reuse the input rows their windows share while they
  // are in L1. One thread takes one band: block by block, row by row (rows
  // outermost there left each input row to be read again after a pass over
  // every block - Inception-v3's 3x3 average pools 1.6-2x slower).
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t bands = threads > 1 ? std::min<int64_t>(OH, 4 * threads) : 1;
  parallel_for(pool, bands * planes, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t band = u / planes, p = u % planes;
      for (int64_t oh = OH * band / bands; oh < OH * (band + 1) / bands; ++oh)
        fn(x + p * in_plane, y + p * out_plane + oh * row, oh, g, cfg_.kind, cfg_.count_include_pad);
    }
  });
}

}  // namespace onyx
