// One query row of attention read straight from K and V, without packing them: a decode
// step (one new token against the whole KV cache, or against an encoder's keys) reads each
// cached key and value once, where the packed GEMM path copied all of them first.
#pragma once
#include <cstdint>

namespace onyx {

// scores[t] = scale * dot(q, key t) for t < T: key t at k + t * ldk (D values), or with
// k_transposed at k[d * ldk + t].
void attention_row_scores(const float* q, const float* k, int64_t T, int64_t D, int64_t ldk, bool k_transposed,
                          float scale, float* scores);

// out[0:Dv] = sum_t probs[t] * v[t * ldv : t * ldv + Dv].
void attention_row_values(const float* probs, const float* v, int64_t T, int64_t Dv, int64_t ldv, float* out);

// out[r * ld_out + d] = dot(probs[r * T : (r + 1) * T], vt[d * T : (d + 1) * T]) for r < rows,
// d < Dv: a block of attention rows times V^T [Dv, T], for value heads too narrow for the
// GEMM's panels.
void attention_block_values_narrow(const float* probs, int64_t rows, int64_t T, const float* vt, int64_t Dv,
                                   float* out, int64_t ld_out);

}  // namespace onyx
