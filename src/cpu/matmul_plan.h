// Numpy-matmul shape planning and the int32 matmul shared by MatMul,
// MatMulInteger, QLinearMatMul and ORT's quantized matmul contrib ops.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/int8_gemm.h"
#include "onyx/tensor.h"

namespace onyx {

// Numpy matmul shapes: A [..., M, K] (or [K]) times B [..., K, N] (or [K]).
struct MatMulPlan {
  Shape out_shape;
  int64_t M = 0, N = 0, K = 0;
  int64_t batches = 1;
  std::vector<int64_t> a_off, b_off;  // element offsets of each batch's matrices
};

// Fails when the shapes do not multiply. With fold_batches, a single B matrix
// folds A's batch dimensions into M (one GEMM); callers that read A transposed
// per batch (com.microsoft FusedMatMul) pass false.
MatMulPlan plan_matmul(const Shape& as, const Shape& bs, bool fold_batches = true);

// x's values (uint8 or int8) as int32 minus its zero point: a scalar, one per
// row [M] of A (per_row) or one per column [N] of B, or any shape
// broadcastable into x such as [D1, D2, M, 1].
std::vector<int32_t> subtract_zero_point(const Tensor& x, const Tensor* zp, bool per_row, const char* name);

// int32 batched matmul of prepared operands into y (out_shape of the plan).
void int_matmul(const MatMulPlan& p, const int32_t* a, const int32_t* b, int32_t* y, ThreadPool* pool = nullptr);

// C[M,N] = op(A) op(B) for int32 operands holding 8-bit-range values (row
// major; lda/ldb as stored). Exact: runs as a float GEMM when no partial sum
// can reach 2^24 (max|A| * the largest column sum of |op(B)|), else as an
// int32 loop.
void gemm_int32_exact(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const int32_t* A, int64_t lda,
                      const int32_t* B, int64_t ldb, int32_t* C, ThreadPool* pool = nullptr);

// Y = (A - a_zp) x (B - b_zp) for uint8/int8 A and B into y (out_shape of
// the plan), through the 8-bit GEMM; zero points as subtract_zero_point
// takes them. packed_b: B already packed (a constant 2-D B), else null.
void int8_matmul(const MatMulPlan& p, const Tensor& A, const Tensor* a_zp, const Tensor& B, const Tensor* b_zp,
                 const PackedInt8B* packed_b, int32_t* y, ThreadPool* pool, const char* a_name, const char* b_name);

// The same product as floats, y = float(sum) * (a_scale * b_scale[n]) +
// bias[n] (b_scale: a float scalar or N floats, checked by the caller; bias:
// N values or null), converted in the GEMM's tiles.
void int8_matmul_to_float(const MatMulPlan& p, const Tensor& A, const Tensor* a_zp, float a_scale, const Tensor& B,
                          const Tensor* b_zp, const Tensor& b_scale, const PackedInt8B* packed_b, const float* bias,
                          float* y, ThreadPool* pool, const char* a_name, const char* b_name);

// B packed for int8_matmul when it is a constant 2-D uint8/int8 matrix.
std::shared_ptr<const PackedInt8B> pack_constant_int8_b(const Tensor* b);

}  // namespace onyx
