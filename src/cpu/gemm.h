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
#include <memory>

#include "base/thread_pool.h"

namespace onyx {

// Applied to C after the product, inside the GEMM while the tile is in cache:
// C = act(alpha * op(A) op(B) + beta * C + bias + row_bias), bias[N] added per
// column, row_bias[M] per row (a convolution's per-channel bias, with the
// channels as rows).
enum class GemmActivation { None, Relu, Gelu, GeluTanh, Swish };  // Swish: x * sigmoid(x) (SiLU)
struct GemmEpilogue {
  const float* bias = nullptr;
  const float* row_bias = nullptr;
  GemmActivation activation = GemmActivation::None;
};

void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool = nullptr,
              const GemmEpilogue& epilogue = {});

// gemm_f32 (no transposes) with B's rows gathered from anywhere: row k of
// B [K, N] is the N floats at b_rows[k] (a convolution's shifted input planes,
// read where they lie instead of copied into one matrix first).
void gemm_f32_rows(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                   const float* const* b_rows, float beta, float* C, int64_t ldc, ThreadPool* pool = nullptr,
                   const GemmEpilogue& epilogue = {});

// op(B)[K, N] packed once into the micro-kernel's panel layout (for constant
// weights: pack at kernel init, multiply at every run without packing).
class PackedB {
 public:
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  bool empty() const { return !data_; }

 private:
  friend PackedB gemm_pack_b(bool, int64_t, int64_t, const float*, int64_t);
  friend void gemm_f32_packed(bool, int64_t, float, const float*, int64_t, const PackedB&, float, float*, int64_t,
                              ThreadPool*, const GemmEpilogue&);
  int64_t K_ = 0, N_ = 0, n_padded_ = 0;
  std::shared_ptr<float> data_;
};
PackedB gemm_pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb);
// C[M,N] = act(alpha * op(A) * B + beta * C + bias) with B packed by gemm_pack_b.
void gemm_f32_packed(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda, const PackedB& B, float beta,
                     float* C, int64_t ldc, ThreadPool* pool = nullptr, const GemmEpilogue& epilogue = {});

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
