// Shared float32 GEMM for CPU kernels (Conv, MatMul, Gemm, ...).
//
//   C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C
//
// Row-major; op(X) is X or X^T. lda/ldb/ldc are the row strides (in elements)
// of A, B, C as stored (so for transA, A is stored [K, lda>=M]). beta == 0
// overwrites C without reading it (NaNs in C do not propagate).
// Cache-blocked with packed panels and a register-tiled micro-kernel chosen
// once per CPU (AVX-512 / AVX2+FMA / baseline) through function clones.
// `pool` may be null; work is split over it in output tiles.
#pragma once
#include <cstdint>

#include "base/thread_pool.h"

namespace onyx {

void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool = nullptr);

// Plain reference GEMM for other element types (double, integer accumulators).
// Acc is the accumulation type; values are read as T and converted.
template <class T, class Acc = T>
void gemm_ref(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, Acc alpha, const T* A, int64_t lda,
              const T* B, int64_t ldb, Acc beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    T* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = beta == Acc(0) ? T(0) : T(Acc(c[j]) * beta);
    for (int64_t k = 0; k < K; ++k) {
      Acc a = alpha * Acc(trans_a ? A[k * lda + i] : A[i * lda + k]);
      if (!trans_b) {
        const T* b = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) c[j] = T(Acc(c[j]) + a * Acc(b[j]));
      } else {
        for (int64_t j = 0; j < N; ++j) c[j] = T(Acc(c[j]) + a * Acc(B[j * ldb + k]));
      }
    }
  }
}

}  // namespace onyx
