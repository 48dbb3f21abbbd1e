#include "cpu/half_convert.h"
#include "base/cpu_features.h"

#include "onyx/dtype.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONYX_F16C 1
#endif

namespace onyx {

namespace {

#ifdef ONYX_F16C
__attribute__((target("avx,f16c"))) void to_halves_f16c(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = float_to_half(x[i]);
}

__attribute__((target("avx,f16c"))) void to_floats_f16c(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = half_to_float(x[i]);
}

bool has_f16c() { return cpu_features().f16c; }
#endif

}  // namespace

void floats_to_halves(const float* x, uint16_t* y, int64_t n) {
#ifdef ONYX_F16C
  if (has_f16c()) return to_halves_f16c(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = float_to_half(x[i]);
}

void halves_to_floats(const uint16_t* x, float* y, int64_t n) {
#ifdef ONYX_F16C
  if (has_f16c()) return to_floats_f16c(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = half_to_float(x[i]);
}

}  // namespace onyx
