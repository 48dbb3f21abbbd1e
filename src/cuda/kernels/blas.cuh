// Row-major GEMM on cuBLAS (column-major): C = alpha op(A) op(B) + beta C is
// computed as C^T = op(B)^T op(A)^T. float and float16 (float accumulation;
// no TF32, so float results stay close to the CPU's).
#pragma once
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

template <class T> constexpr cudaDataType_t cuda_type();
template <> constexpr cudaDataType_t cuda_type<float>() { return CUDA_R_32F; }
template <> constexpr cudaDataType_t cuda_type<half>() { return CUDA_R_16F; }

// A is M x K (or K x M when trans_a), lda its row stride; B is K x N (or N x K
// when trans_b); C is M x N with row stride ldc. `batch` matrices at the given
// element strides (0: the same matrix for every batch).
template <class T>
void gemm_rm(cublasHandle_t h, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
             int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, float beta, T* C, int64_t ldc,
             int64_t stride_c, int64_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  constexpr cudaDataType_t t = cuda_type<T>();
  const cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (batch == 1) {
    ONYX_CUBLAS(cublasGemmEx(h, ob, oa, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, B, t,
                             static_cast<int>(ldb), A, t, static_cast<int>(lda), &beta, C, t, static_cast<int>(ldc),
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else {
    ONYX_CUBLAS(cublasGemmStridedBatchedEx(h, ob, oa, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha,
                                           B, t, static_cast<int>(ldb), stride_b, A, t, static_cast<int>(lda), stride_a,
                                           &beta, C, t, static_cast<int>(ldc), stride_c, static_cast<int>(batch),
                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace cuda
}  // namespace onyx
