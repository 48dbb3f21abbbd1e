// The vector math of gemm_vmath.h written for AVX2 + FMA with intrinsics, for
// CPUs without AVX-512: the functions whose auto-vectorized loops
// (vmath_loops.h) or libm fallbacks ran 1.5-5x slower than onnxruntime's
// (scripts/op_sweep.py on a Zen 3). Callers check the CPU has AVX2 and FMA.
#pragma once
#include <cstdint>

namespace onyx::vm::avx2 {

void exp(const float* x, float* y, int64_t n);
void sigmoid(const float* x, float* y, int64_t n);
void swish(const float* x, float* y, int64_t n, float alpha);
void tanh(const float* x, float* y, int64_t n);
void erf(const float* x, float* y, int64_t n);
void gelu_erf(const float* x, float* y, int64_t n);
void gelu_tanh(const float* x, float* y, int64_t n);
void log(const float* x, float* y, int64_t n);
void floor(const float* x, float* y, int64_t n);
void ceil(const float* x, float* y, int64_t n);
void round_even(const float* x, float* y, int64_t n);
void softmax(const float* x, float* y, int64_t n);
void softmax_columns(const float* x, float* y, int64_t n, int64_t inner, bool log);

}  // namespace onyx::vm::avx2
