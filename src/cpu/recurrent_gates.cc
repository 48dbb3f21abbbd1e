#include "cpu/recurrent_gates.h"

#include "base/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 reports the undefined vector the masked min / max intrinsics start
// from as "maybe uninitialized" when inlined into a target("avx512f") function.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "cpu/exp_avx512.h"
#define ONYX_RECURRENT_AVX512 1
#endif

namespace onyx {

#ifdef ONYX_RECURRENT_AVX512
namespace {

// Lanes [j, j + 16) of an n-long row that exist.
ONYX_TARGET_AVX512 inline __mmask16 lanes(int64_t j, int64_t n) {
  return n - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j)) - 1);
}

// a[0, 16) + b[0, 16), the lanes of m.
ONYX_TARGET_AVX512 inline __m512 sum16(__mmask16 m, const float* a, const float* b) {
  return _mm512_add_ps(_mm512_maskz_loadu_ps(m, a), _mm512_maskz_loadu_ps(m, b));
}

// v bounded to [-clip, clip] when clip > 0.
ONYX_TARGET_AVX512 inline __m512 clipped(__m512 v, float clip) {
  if (clip > 0) v = _mm512_max_ps(_mm512_min_ps(v, _mm512_set1_ps(clip)), _mm512_set1_ps(-clip));
  return v;
}

ONYX_TARGET_AVX512 void lstm_avx512(const LstmGateRow& row) {
  const int64_t H = row.H;
  const float* g = row.gates;
  const float* x = row.x;
  const float* p = row.peephole;
  for (int64_t j = 0; j < H; j += 16) {
    const __mmask16 m = lanes(j, H);
    __m512 c = _mm512_maskz_loadu_ps(m, row.c + j);
    __m512 gi = sum16(m, g + j, x + j), go = sum16(m, g + H + j, x + H + j);
    __m512 gf = sum16(m, g + 2 * H + j, x + 2 * H + j), gc = sum16(m, g + 3 * H + j, x + 3 * H + j);
    if (p) {
      gi = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, p + j), c, gi);
      gf = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, p + 2 * H + j), c, gf);
    }
    const __m512 i = sigmoid16_avx512(clipped(gi, row.clip));
    const __m512 f = row.input_forget ? _mm512_sub_ps(_mm512_set1_ps(1.0f), i) : sigmoid16_avx512(clipped(gf, row.clip));
    const __m512 candidate = tanh16_avx512(clipped(gc, row.clip));
    c = _mm512_fmadd_ps(f, c, _mm512_mul_ps(i, candidate));
    if (p) go = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, p + H + j), c, go);
    const __m512 o = sigmoid16_avx512(clipped(go, row.clip));
    _mm512_mask_storeu_ps(row.c + j, m, c);
    _mm512_mask_storeu_ps(row.h + j, m, _mm512_mul_ps(o, tanh16_avx512(c)));
  }
}

ONYX_TARGET_AVX512 void gru_reset_avx512(float* g, const float* x, const float* h, const float* hidden_bias, bool lbr,
                                  float clip, float* out, int64_t H) {
  for (int64_t j = 0; j < H; j += 16) {
    const __mmask16 m = lanes(j, H);
    const __m512 z = sigmoid16_avx512(clipped(sum16(m, g + j, x + j), clip));
    const __m512 r = sigmoid16_avx512(clipped(sum16(m, g + H + j, x + H + j), clip));
    _mm512_mask_storeu_ps(g + j, m, z);
    _mm512_mask_storeu_ps(g + H + j, m, r);
    const __m512 v = lbr ? sum16(m, g + 2 * H + j, hidden_bias + j) : _mm512_maskz_loadu_ps(m, h + j);
    _mm512_mask_storeu_ps(out + j, m, _mm512_mul_ps(r, v));
  }
}

ONYX_TARGET_AVX512 void gru_update_avx512(const float* z_row, const float* x_n, const float* t, const float* bias,
                                   float clip, float* h, int64_t H) {
  for (int64_t j = 0; j < H; j += 16) {
    const __mmask16 m = lanes(j, H);
    __m512 pre = sum16(m, x_n + j, t + j);
    if (bias) pre = _mm512_add_ps(pre, _mm512_maskz_loadu_ps(m, bias + j));
    const __m512 n = tanh16_avx512(clipped(pre, clip));
    const __m512 z = _mm512_maskz_loadu_ps(m, z_row + j);
    const __m512 keep = _mm512_mul_ps(z, _mm512_maskz_loadu_ps(m, h + j));
    _mm512_mask_storeu_ps(h + j, m, _mm512_fmadd_ps(_mm512_sub_ps(_mm512_set1_ps(1.0f), z), n, keep));
  }
}

}  // namespace

bool lstm_gate_row(const LstmGateRow& row) {
  if (!has_avx512f_dq_vl()) return false;
  lstm_avx512(row);
  return true;
}

bool gru_reset_row(float* gates, const float* x, const float* h, const float* hidden_bias, bool linear_before_reset,
                   float clip, float* out, int64_t H) {
  if (!has_avx512f_dq_vl()) return false;
  gru_reset_avx512(gates, x, h, hidden_bias, linear_before_reset, clip, out, H);
  return true;
}

bool gru_update_row(const float* z, const float* x_n, const float* t, const float* bias, float clip, float* h,
                    int64_t H) {
  if (!has_avx512f_dq_vl()) return false;
  gru_update_avx512(z, x_n, t, bias, clip, h, H);
  return true;
}

#else  // no x86-64 vector path: the caller's loops run

bool lstm_gate_row(const LstmGateRow&) { return false; }
bool gru_reset_row(float*, const float*, const float*, const float*, bool, float, float*, int64_t) { return false; }
bool gru_update_row(const float*, const float*, const float*, const float*, float, float*, int64_t) { return false; }

#endif

}  // namespace onyx
