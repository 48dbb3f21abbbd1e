// Runs an elementwise routine of cpu/gemm_vmath.h over a long float array in
// chunks spread on the intra-op pool (inline when the array is short or there
// is no pool): the one threading rule for the vectorized unary kernels.
#pragma once
#include <algorithm>
#include <cstdint>

#include "base/thread_pool.h"

namespace onyx::vm {

// Calls vec(x + i, y + i, count) over [0, n) in chunks.
template <class Vec>
void parallel_map(ThreadPool* pool, const float* x, float* y, int64_t n, Vec vec) {
  constexpr int64_t kChunk = 8192;  // elements per task: large enough to amortize the dispatch
  parallel_for(n > 4 * kChunk ? pool : nullptr, (n + kChunk - 1) / kChunk, [&](int64_t b, int64_t e) {
    vec(x + b * kChunk, y + b * kChunk, std::min(n, e * kChunk) - b * kChunk);
  });
}

}  // namespace onyx::vm
