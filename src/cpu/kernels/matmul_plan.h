// The batching plan of a numpy-style matmul, shared by MatMul and the
// com.microsoft FusedMatMul.
#pragma once
#include <vector>

#include "kernels/kernel.h"

namespace onyx {

// A [..., M, K] (or [K]) times B [..., K, N] (or [K]): the output shape, the
// matrix sizes and each batch's element offsets into A and B.
struct MatMulPlan {
  Shape out_shape;
  int64_t M = 0, N = 0, K = 0;
  int64_t batches = 1;
  std::vector<int64_t> a_off, b_off;  // element offsets of each batch's matrices
};

// Fails when the shapes do not multiply. With fold_batches, a single B matrix
// folds A's batch dimensions into M (one GEMM); callers that read A transposed
// per batch pass false.
MatMulPlan plan_matmul(const Shape& as, const Shape& bs, bool fold_batches = true);

}  // namespace onyx
