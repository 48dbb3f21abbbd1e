#include "cpu/row_reduce.h"

#include <cmath>
#include <cstring>

namespace onyx::rr {

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONYX_RR_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))
#else
#define ONYX_RR_CLONES
#endif

// 16 floats as one GCC vector (one AVX-512 register, or split by the compiler
// for narrower targets): the loops below are explicit about their lanes.
using V16 = float __attribute__((vector_size(64)));
using M16 = int __attribute__((vector_size(64)));

inline V16 load16(const float* p) {
  V16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Lane-wise extremes, with NaNs collected on the side.
template <bool kMax>
__attribute__((always_inline)) inline float extreme(const float* x, int64_t n) {
  int64_t i = 0;
  float m = x[0];
  bool any_nan = false;
  if (n >= 16) {
    V16 lane = load16(x);
    M16 nan = lane != lane;
    for (i = 16; i + 16 <= n; i += 16) {
      const V16 v = load16(x + i);
      lane = kMax ? (lane < v ? v : lane) : (v < lane ? v : lane);
      nan |= v != v;
    }
    for (int k = 0; k < 16; ++k) {
      m = (kMax ? m < lane[k] : lane[k] < m) ? lane[k] : m;
      any_nan |= nan[k] != 0;
    }
  }
  for (; i < n; ++i) {
    m = (kMax ? m < x[i] : x[i] < m) ? x[i] : m;
    any_nan |= x[i] != x[i];
  }
  return any_nan ? __builtin_nanf("") : m;
}

}  // namespace

ONYX_RR_CLONES double sum(const float* x, int64_t n) {
  using D8 = double __attribute__((vector_size(64)));
  D8 lo = {}, hi = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const V16 v = load16(x + i);
    lo += D8{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
    hi += D8{v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]};
  }
  double s = 0;
  for (int k = 0; k < 8; ++k) s += lo[k] + hi[k];
  for (; i < n; ++i) s += static_cast<double>(x[i]);
  return s;
}

ONYX_RR_CLONES double sum_squared_deviation(const float* x, int64_t n, double mean) {
  using D8 = double __attribute__((vector_size(64)));
  D8 lo = {}, hi = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const V16 v = load16(x + i);
    const D8 a = D8{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]} - mean;
    const D8 b = D8{v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]} - mean;
    lo += a * a;
    hi += b * b;
  }
  double s = 0;
  for (int k = 0; k < 8; ++k) s += lo[k] + hi[k];
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    s += d * d;
  }
  return s;
}

ONYX_RR_CLONES float rms_normalize(const float* x, float* y, int64_t n, const float* scale, float eps) {
  const double mean_square = n ? sum_squared_deviation(x, n, 0.0) / static_cast<double>(n) : 0.0;
  const float inv = static_cast<float>(1.0 / std::sqrt(mean_square + static_cast<double>(eps)));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * scale[i];
  return inv;
}

ONYX_RR_CLONES void add_into(const float* __restrict x, double* __restrict acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(x[i]);
}
ONYX_RR_CLONES void add_squares_into(const float* __restrict x, double* __restrict acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
}
// A NaN in x is taken (x != x); once m is NaN neither test replaces it.
ONYX_RR_CLONES void max_into(const float* __restrict x, float* __restrict m, int64_t n) {
  for (int64_t i = 0; i < n; ++i) m[i] = (m[i] < x[i] || x[i] != x[i]) ? x[i] : m[i];
}
ONYX_RR_CLONES void min_into(const float* __restrict x, float* __restrict m, int64_t n) {
  for (int64_t i = 0; i < n; ++i) m[i] = (x[i] < m[i] || x[i] != x[i]) ? x[i] : m[i];
}

ONYX_RR_CLONES float max(const float* x, int64_t n) { return extreme<true>(x, n); }
ONYX_RR_CLONES float min(const float* x, int64_t n) { return extreme<false>(x, n); }

}  // namespace onyx::rr
