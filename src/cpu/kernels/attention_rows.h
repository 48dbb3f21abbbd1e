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

}  // namespace onyx
