#include "cpu/row_reduce.h"

#include <cmath>
#include <cstring>

#include "base/cpu_features.h"

// The 16-float vectors below never cross a call boundary between differently
// compiled clones (the helpers are inlined), so the ABI note GCC gives for
// returning them without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onyx::rr {

namespace {

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

// Per lane the extreme seen and where (the lane's first, or last, occurrence),
// then the lanes holding the overall extreme settle the index: one pass, no
// branch per element.
template <bool kMax, bool kLast>
__attribute__((always_inline)) inline int64_t arg_extreme_lanes(const float* x, int64_t n) {
  using I16 = int __attribute__((vector_size(64)));
  int64_t i = 0;
  float best = x[0];
  int64_t at = 0;
  M16 nan = {};
  if (n >= 16) {
    V16 lane = load16(x);
    I16 where = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, idx = where;
    nan = lane != lane;
    for (i = 16; i + 16 <= n; i += 16) {
      const V16 v = load16(x + i);
      idx += 16;
      const M16 take = kMax ? (kLast ? v >= lane : v > lane) : (kLast ? v <= lane : v < lane);
      lane = take ? v : lane;
      where = take ? idx : where;
      nan |= v != v;
    }
    best = lane[0];
    for (int k = 1; k < 16; ++k) best = kMax ? (lane[k] > best ? lane[k] : best) : (lane[k] < best ? lane[k] : best);
    at = kLast ? -1 : n;
    for (int k = 0; k < 16; ++k)
      if (lane[k] == best) at = kLast ? (where[k] > at ? where[k] : at) : (where[k] < at ? where[k] : at);
  }
  bool any_nan = false;
  for (int k = 0; k < 16; ++k) any_nan |= nan[k] != 0;
  for (; i < n; ++i) {
    const float v = x[i];
    any_nan |= v != v;
    const bool take = kMax ? (kLast ? v >= best : v > best) : (kLast ? v <= best : v < best);
    if (take) best = v, at = i;
  }
  return any_nan || best != best ? -1 : at;
}

}  // namespace

ONYX_VECTOR_CLONES int64_t arg_extreme(const float* x, int64_t n, bool is_max, bool last) {
  if (n >= (int64_t{1} << 31)) return -1;
  if (is_max) return last ? arg_extreme_lanes<true, true>(x, n) : arg_extreme_lanes<true, false>(x, n);
  return last ? arg_extreme_lanes<false, true>(x, n) : arg_extreme_lanes<false, false>(x, n);
}

ONYX_VECTOR_CLONES double sum(const float* x, int64_t n) {
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

ONYX_VECTOR_CLONES double sum_squared_deviation(const float* x, int64_t n, double mean) {
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

ONYX_VECTOR_CLONES float rms_normalize(const float* x, float* y, int64_t n, const float* scale, float eps) {
  const double mean_square = n ? sum_squared_deviation(x, n, 0.0) / static_cast<double>(n) : 0.0;
  const float inv = static_cast<float>(1.0 / std::sqrt(mean_square + static_cast<double>(eps)));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * scale[i];
  return inv;
}

ONYX_VECTOR_CLONES void add_into(const float* __restrict x, double* __restrict acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(x[i]);
}
ONYX_VECTOR_CLONES void add_squares_into(const float* __restrict x, double* __restrict acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
}
// A NaN in x is taken (x != x); once m is NaN neither test replaces it.
ONYX_VECTOR_CLONES void max_into(const float* __restrict x, float* __restrict m, int64_t n) {
  for (int64_t i = 0; i < n; ++i) m[i] = (m[i] < x[i] || x[i] != x[i]) ? x[i] : m[i];
}
ONYX_VECTOR_CLONES void min_into(const float* __restrict x, float* __restrict m, int64_t n) {
  for (int64_t i = 0; i < n; ++i) m[i] = (x[i] < m[i] || x[i] != x[i]) ? x[i] : m[i];
}

ONYX_VECTOR_CLONES float max(const float* x, int64_t n) { return extreme<true>(x, n); }
ONYX_VECTOR_CLONES float min(const float* x, int64_t n) { return extreme<false>(x, n); }

}  // namespace onyx::rr
