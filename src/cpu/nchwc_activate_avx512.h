// The store activation of the blocked convolution kernels (nchwc_conv_kernel.h
// ActKind) on one vector of 16 channels, shared by the direct and the
// Winograd kernels. For files compiled with -mavx512f only; `static`, so a
// copy compiled for AVX-512 is never picked by the linker for another file.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "cpu/exp_avx512.h"
#include "cpu/nchwc_conv_kernel.h"

namespace onyx::nchwc {

#if defined(__AVX512F__)
__attribute__((always_inline)) static inline __m512 activate(__m512 v, int act, float p0, float p1) {
  switch (act) {
    case kActRelu:
      return _mm512_max_ps(v, _mm512_setzero_ps());
    case kActLeakyRelu: {
      __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
      return _mm512_mask_mul_ps(v, neg, v, _mm512_set1_ps(p0));
    }
    case kActClip:
      return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(p0)), _mm512_set1_ps(p1));
    case kActHardSigmoid: {
      __m512 t = _mm512_fmadd_ps(v, _mm512_set1_ps(p0), _mm512_set1_ps(p1));
      return _mm512_min_ps(_mm512_max_ps(t, _mm512_setzero_ps()), _mm512_set1_ps(1.0f));
    }
    case kActHardSwish: {
      __m512 t = _mm512_fmadd_ps(v, _mm512_set1_ps(p0), _mm512_set1_ps(p1));
      t = _mm512_min_ps(_mm512_max_ps(t, _mm512_setzero_ps()), _mm512_set1_ps(1.0f));
      return _mm512_mul_ps(v, t);
    }
    case kActSigmoid:
      return sigmoid16_avx512(v);
    case kActGelu:
      return gelu16_avx512(v);
    case kActGeluTanh:
      return gelu_tanh16_avx512(v);
    case kActSwish:
      return _mm512_mul_ps(v, sigmoid16_avx512(_mm512_mul_ps(v, _mm512_set1_ps(p0))));
    case kActTanh:
      return tanh16_avx512(v);
    default:
      return v;
  }
}

#endif

}  // namespace onyx::nchwc
