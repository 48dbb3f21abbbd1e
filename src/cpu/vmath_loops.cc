#include "cpu/vmath_loops.h"

#include <cmath>

#include "cpu/elementwise_loops.h"

namespace onyx::vm {
namespace {

// Inlined into each build's loops, where the compiler vectorizes them: no
// calls, no branches (selects).
#define ONYX_VM_INLINE __attribute__((always_inline)) inline

// Written so that NaN passes: the comparison is false for it and x is kept.
ONYX_VM_INLINE float at_most(float x, float hi) { return x > hi ? hi : x; }
ONYX_VM_INLINE float at_least(float x, float lo) { return x < lo ? lo : x; }

// exp, sigmoid, tanh and erf: the elementwise kernels' branch-free forms (cpu/elementwise_loops.h).
ONYX_VM_INLINE float exp_one(float x) { return ew::fast_expf(x); }
ONYX_VM_INLINE float sigmoid_one(float x) { return ew::fast_sigmoidf(x); }
ONYX_VM_INLINE float tanh_one(float x) { return ew::fast_tanhf(x); }
ONYX_VM_INLINE float erf_one(float x) { return ew::fast_erff(x); }

// Abramowitz & Stegun 7.1.26's polynomial in t = 1 / (1 + 0.3275911 |z|): erfc|z| = p e^(-z^2).
ONYX_VM_INLINE float erfc_poly(float t) {
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  return p * t;
}

// x Phi(x) as gelu16_avx512: 1 + erf(z) is 2 - p e for z >= 0 and p e below.
ONYX_VM_INLINE float gelu_erf_one(float x) {
  const float z = x * 0.70710678118654752f;
  const float az = std::fabs(z);
  const float p = erfc_poly(1.0f / (az * 0.3275911f + 1.0f));
  const float pe = az < 10.0f ? p * exp_one(-az * az) : 0.0f;  // erfc < 1e-44 past 10; the division is NaN at inf
  return 0.5f * x * (z < 0.0f ? pe : 2.0f - pe);
}

// x sigmoid(2u), u = sqrt(2 / pi) (x + 0.044715 x^3), as gelu_tanh16_avx512.
ONYX_VM_INLINE float gelu_tanh_one(float x) {
  const float two_u = 2.0f * 0.7978845608028654f * (x * x * x * 0.044715f + x);
  return x * (two_u >= -88.0f ? sigmoid_one(two_u) : 0.0f);
}

ONYX_VM_INLINE float hard_sigmoid_one(float x, float alpha, float beta) {
  return at_most(at_least(alpha * x + beta, 0.0f), 1.0f);
}

// Sums and maxima in kLanes independent accumulators: a single one is a
// dependency chain the compiler may not reorder (float addition is not associative).
constexpr int kLanes = 16;

struct Lanes {
  float v[kLanes] = {};
  ONYX_VM_INLINE float total() const {
    float s = 0.0f;
    for (float e : v) s += e;
    return s;
  }
};

ONYX_VM_INLINE float max_of(const float* x, int64_t n) {
  float m[kLanes];
  for (float& e : m) e = -INFINITY;
  const int64_t full = n / kLanes * kLanes;
  for (int64_t i = 0; i < full; i += kLanes)
    for (int j = 0; j < kLanes; ++j) m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
  float r = -INFINITY;
  for (float e : m) r = e > r ? e : r;
  for (int64_t i = full; i < n; ++i) r = x[i] > r ? x[i] : r;
  return r;
}

namespace avx2 {
#if defined(__x86_64__) && defined(__GNUC__)
#define ONYX_VM_TARGET __attribute__((target("avx2,fma")))
#else
#define ONYX_VM_TARGET
#endif
#include "cpu/vmath_loops.inc"
#undef ONYX_VM_TARGET
}  // namespace avx2

namespace baseline {
#define ONYX_VM_TARGET
#include "cpu/vmath_loops.inc"
#undef ONYX_VM_TARGET
}  // namespace baseline

}  // namespace

const LoopTable& avx2_loops() { return avx2::kTable; }
const LoopTable& baseline_loops() { return baseline::kTable; }

}  // namespace onyx::vm
