#include "cpu/vmath_loops.h"

#include <cmath>
#include <cstring>

namespace onyx::vm {
namespace {

// Inlined into each build's loops, where the compiler vectorizes them: no
// calls, no branches (selects), no float-to-int conversions.
#define ONYX_VM_INLINE __attribute__((always_inline)) inline

ONYX_VM_INLINE float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

ONYX_VM_INLINE uint32_t to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Written so that NaN passes: the comparison is false for it and x is kept.
ONYX_VM_INLINE float at_most(float x, float hi) { return x > hi ? hi : x; }
ONYX_VM_INLINE float at_least(float x, float lo) { return x < lo ? lo : x; }

// e^x = 2^k e^r, |r| <= ln2 / 2, e^r by its degree-6 Taylor polynomial (as
// exp16_avx512). k comes from adding 1.5 * 2^23, which rounds x log2(e) to an
// integer and leaves it in the low mantissa bits; 2^k is built in two halves
// so that k = 128 (x at the upper clamp) does not overflow before the product.
ONYX_VM_INLINE float exp_one(float x) {
  constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23
  const bool normal = !(x < -87.3365f);    // below: under float's smallest normal, 0
  const bool overflow = x > 88.7228f;      // above: over float's largest value, inf
  x = at_least(at_most(x, 88.7228f), -87.3365f);
  const float shifted = x * 1.44269504088896341f + kShifter;
  const float k = shifted - kShifter;
  const int32_t ki = static_cast<int32_t>(to_bits(shifted) - to_bits(kShifter));
  float r = x - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t half = ki >> 1;
  const float scaled = p * from_bits(static_cast<uint32_t>(half + 127) << 23) *
                       from_bits(static_cast<uint32_t>(ki - half + 127) << 23);
  return overflow ? INFINITY : normal ? scaled : 0.0f;
}

ONYX_VM_INLINE float sigmoid_one(float x) { return 1.0f / (1.0f + exp_one(-x)); }

// tanh by the rational fit of tanh16_avx512.
ONYX_VM_INLINE float tanh_one(float x) {
  constexpr float kP[] = {1.3354453179898704e-08f, 2.0608930896062657e-05f, 0.0034955788506021803f,
                          0.1338101779334468f, 0.999999979451809f};
  constexpr float kQ[] = {7.776472782839893e-07f, 0.0003285619705612531f, 0.025876946804282073f,
                          0.46714333381983497f, 1.0f};
  const float c = at_least(at_most(x, 9.0f), -9.0f);
  const float t = c * c;
  float p = kP[0], q = kQ[0];
  for (int k = 1; k < 5; ++k) {
    p = p * t + kP[k];
    q = q * t + kQ[k];
  }
  return at_least(at_most(c * p / q, 1.0f), -1.0f);
}

// Abramowitz & Stegun 7.1.26's polynomial in t = 1 / (1 + 0.3275911 |z|): erfc|z| = p e^(-z^2).
ONYX_VM_INLINE float erfc_poly(float t) {
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  return p * t;
}

// erf as erf16: 1 - p e from |x| = 0.5 up, the Maclaurin series to x^13 below.
ONYX_VM_INLINE float erf_one(float x) {
  const float ax = std::fabs(x);
  const float far = 1.0f - erfc_poly(1.0f / (ax * 0.3275911f + 1.0f)) * exp_one(-ax * ax);
  const float x2 = x * x;
  float q = 1.0f / 9360.0f;
  q = q * x2 - 1.0f / 1320.0f;
  q = q * x2 + 1.0f / 216.0f;
  q = q * x2 - 1.0f / 42.0f;
  q = q * x2 + 1.0f / 10.0f;
  q = q * x2 - 1.0f / 3.0f;
  q = q * x2 + 1.0f;
  const float near = q * x * 1.1283791670955126f;  // 2 / sqrt(pi)
  return ax < 0.5f ? near : from_bits(to_bits(far) | (to_bits(x) & 0x80000000u));
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
