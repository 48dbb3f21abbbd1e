// The vector math of cpu/gemm_vmath.h for CPUs without AVX-512: plain loops
// over floats that the compiler vectorizes (exp, tanh and erf as the
// elementwise kernels' branch-free forms, GELU as the AVX-512 version forms
// it), built twice: for AVX2 + FMA and for baseline x86-64. The scalar libm
// versions they replace ran GELU, softmax and layer normalization 3-5x slower
// than AVX-512 on the same machine.
#pragma once
#include <cstdint>

namespace onyx::vm {

struct LoopTable {
  void (*exp)(const float*, float*, int64_t);
  void (*sigmoid)(const float*, float*, int64_t);
  void (*swish)(const float*, float*, int64_t, float);
  void (*tanh)(const float*, float*, int64_t);
  void (*erf)(const float*, float*, int64_t);
  void (*gelu_erf)(const float*, float*, int64_t);
  void (*gelu_tanh)(const float*, float*, int64_t);
  void (*hard_sigmoid)(const float*, float*, int64_t, float, float, bool);
  void (*softmax)(const float*, float*, int64_t);
  void (*layer_norm)(const float*, const float*, float*, int64_t, const float*, const float*, float);
};

// The AVX2 + FMA build (callers check the CPU has both).
const LoopTable& avx2_loops();
// The build for any x86-64 (SSE2 vectors) or other CPU.
const LoopTable& baseline_loops();

}  // namespace onyx::vm
