// Rotary position embedding, shared by ai.onnx RotaryEmbedding (attention.cc)
// and the com.microsoft RotaryEmbedding / GroupQueryAttention (contrib_llm.cc).
#pragma once
#include <cstdint>
#include <vector>

namespace onyx {

// Heads of x: 3-D [B, S, H * D] (three_d) or 4-D [B, H, S, D].
struct RotaryLayout {
  int64_t B = 0, H = 0, S = 0, D = 0;
  bool three_d = true;
  int64_t offset(int64_t b, int64_t h, int64_t s) const {
    return three_d ? ((b * S + s) * H + h) * D : ((b * H + h) * S + s) * D;
  }
};

// y = x with the first `rot` values of every head rotated: pairs (k, k + rot/2),
// or (2k, 2k + 1) when interleaved, by the angle whose cos / sin are row
// rows[b * S + s] of the [*, rot / 2] caches. y may be x.
inline void rotary_rotate(const float* x, float* y, const RotaryLayout& l, const float* cos_cache, const float* sin_cache,
                          int64_t rot, bool interleaved, const std::vector<int64_t>& rows) {
  const int64_t half = rot / 2;
  for (int64_t b = 0; b < l.B; ++b)
    for (int64_t s = 0; s < l.S; ++s) {
      const float* c = cos_cache + rows[b * l.S + s] * half;
      const float* sn = sin_cache + rows[b * l.S + s] * half;
      for (int64_t h = 0; h < l.H; ++h) {
        const float* xi = x + l.offset(b, h, s);
        float* yo = y + l.offset(b, h, s);
        if (yo != xi)
          for (int64_t d = rot; d < l.D; ++d) yo[d] = xi[d];
        for (int64_t k = 0; k < half; ++k) {
          int64_t i1 = interleaved ? 2 * k : k, i2 = interleaved ? 2 * k + 1 : k + half;
          float x1 = xi[i1], x2 = xi[i2];
          yo[i1] = c[k] * x1 - sn[k] * x2;
          yo[i2] = sn[k] * x1 + c[k] * x2;
        }
      }
    }
}

}  // namespace onyx
