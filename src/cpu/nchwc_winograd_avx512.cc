// AVX-512 tile transforms of the Winograd F(4x4, 3x3) and F(2x2, 3x3)
// convolutions; see nchwc_winograd_kernel.h. Compiled with -mavx512f, like nchwc_conv_avx512.cc:
// nothing but intrinsics and internal-linkage helpers.
//
// Each vector holds one pixel's 16 channels, so a 2-D transform is six 1-D
// transforms along the rows, then six down the columns.
#include <immintrin.h>

#include <cstdint>

#include "cpu/nchwc_activate_avx512.h"
#include "cpu/nchwc_winograd_kernel.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace onyx::nchwc {

#if defined(__AVX512F__)
namespace {

template <int M>
struct Transform;

// F(4, 3)
template <>
struct Transform<4> {
  static constexpr int kIn = 6;

  // r = B^T z for B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0;
  //                      0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
  __attribute__((always_inline)) static void input_1d(const __m512 (&z)[6], __m512 (&r)[6]) {
    const __m512 four = _mm512_set1_ps(4.0f), five = _mm512_set1_ps(5.0f);
    r[0] = _mm512_fmadd_ps(four, z[0], _mm512_fnmadd_ps(five, z[2], z[4]));
    const __m512 t1 = _mm512_fnmadd_ps(four, z[2], z[4]);  // z4 - 4 z2
    const __m512 t2 = _mm512_fnmadd_ps(four, z[1], z[3]);  // z3 - 4 z1
    r[1] = _mm512_add_ps(t1, t2);
    r[2] = _mm512_sub_ps(t1, t2);
    const __m512 t3 = _mm512_sub_ps(z[4], z[2]);
    __m512 t4 = _mm512_sub_ps(z[3], z[1]);
    t4 = _mm512_add_ps(t4, t4);
    r[3] = _mm512_add_ps(t3, t4);
    r[4] = _mm512_sub_ps(t3, t4);
    r[5] = _mm512_fmadd_ps(four, z[1], _mm512_fnmadd_ps(five, z[3], z[5]));
  }

  // o = A^T m for A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
  __attribute__((always_inline)) static void output_1d(const __m512 (&m)[6], __m512 (&o)[4]) {
    const __m512 a = _mm512_add_ps(m[1], m[2]), b = _mm512_sub_ps(m[1], m[2]);
    const __m512 c = _mm512_add_ps(m[3], m[4]), d = _mm512_sub_ps(m[3], m[4]);
    o[0] = _mm512_add_ps(_mm512_add_ps(m[0], a), c);
    o[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), d, b);
    o[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), c, a);
    o[3] = _mm512_fmadd_ps(_mm512_set1_ps(8.0f), d, _mm512_add_ps(b, m[5]));
  }
};

// F(2, 3)
template <>
struct Transform<2> {
  static constexpr int kIn = 4;

  // r = B^T z for B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
  __attribute__((always_inline)) static void input_1d(const __m512 (&z)[4], __m512 (&r)[4]) {
    r[0] = _mm512_sub_ps(z[0], z[2]);
    r[1] = _mm512_add_ps(z[1], z[2]);
    r[2] = _mm512_sub_ps(z[2], z[1]);
    r[3] = _mm512_sub_ps(z[1], z[3]);
  }

  // o = A^T m for A^T = [1 1 1 0; 0 1 -1 -1]
  __attribute__((always_inline)) static void output_1d(const __m512 (&m)[4], __m512 (&o)[2]) {
    o[0] = _mm512_add_ps(_mm512_add_ps(m[0], m[1]), m[2]);
    o[1] = _mm512_sub_ps(_mm512_sub_ps(m[1], m[2]), m[3]);
  }
};

template <int M>
void input_tile(const WinoInputArgs& a) {
  constexpr int N = Transform<M>::kIn;
  const bool inside = a.ih0 >= 0 && a.iw0 >= 0 && a.ih0 + N <= a.H && a.iw0 + N <= a.W;
  __m512 t[N][N];  // rows transformed: t[i][k] = (d B)[i][k]
#pragma GCC unroll 6
  for (int i = 0; i < N; ++i) {
    __m512 z[N];
    const int64_t ih = a.ih0 + i;
    const float* row = a.x + (ih * a.W + a.iw0) * 16;
    if (inside) {
#pragma GCC unroll 6
      for (int j = 0; j < N; ++j) z[j] = _mm512_loadu_ps(row + j * 16);
    } else {
      const bool row_in = ih >= 0 && ih < a.H;
#pragma GCC unroll 6
      for (int j = 0; j < N; ++j) {
        const int64_t iw = a.iw0 + j;
        z[j] = row_in && iw >= 0 && iw < a.W ? _mm512_loadu_ps(row + j * 16) : _mm512_setzero_ps();
      }
    }
    Transform<M>::input_1d(z, t[i]);
  }
#pragma GCC unroll 6
  for (int k = 0; k < N; ++k) {
    __m512 z[N], r[N];
#pragma GCC unroll 6
    for (int i = 0; i < N; ++i) z[i] = t[i][k];
    Transform<M>::input_1d(z, r);
#pragma GCC unroll 6
    for (int l = 0; l < N; ++l) _mm512_storeu_ps(a.v + (l * N + k) * a.v_stride, r[l]);
  }
}

template <int M, int ACT>
__attribute__((always_inline)) inline void output_tile_act(const WinoOutputArgs& a) {
  constexpr int N = Transform<M>::kIn;
  __m512 t[N][M];  // rows transformed: t[l][j] = (m A)[l][j]
#pragma GCC unroll 6
  for (int l = 0; l < N; ++l) {
    __m512 m[N];
#pragma GCC unroll 6
    for (int k = 0; k < N; ++k) m[k] = _mm512_loadu_ps(a.m + (l * N + k) * a.m_stride);
    Transform<M>::output_1d(m, t[l]);
  }
  const __m512 bias = a.bias ? _mm512_loadu_ps(a.bias) : _mm512_setzero_ps();
  const __mmask16 mask = static_cast<__mmask16>(a.mask);
  const int act = ACT < 0 ? a.act : ACT;
#pragma GCC unroll 4
  for (int j = 0; j < M; ++j) {
    if (j >= a.cols) break;
    __m512 m[N], o[M];
#pragma GCC unroll 6
    for (int l = 0; l < N; ++l) m[l] = t[l][j];
    Transform<M>::output_1d(m, o);
#pragma GCC unroll 4
    for (int r = 0; r < M; ++r) {
      if (r >= a.rows) break;
      const int64_t off = (r * a.y_row + j) * 16;
      __m512 v = _mm512_add_ps(o[r], bias);
      if (a.z) v = _mm512_add_ps(v, _mm512_loadu_ps(a.z + off));
      _mm512_storeu_ps(a.y + off, _mm512_maskz_mov_ps(mask, activate(v, act, a.p0, a.p1)));
    }
  }
}

template <int M>
void output_tile(const WinoOutputArgs& a) {
  switch (a.act) {
    case kActNone: output_tile_act<M, kActNone>(a); break;
    case kActRelu: output_tile_act<M, kActRelu>(a); break;
    case kActClip: output_tile_act<M, kActClip>(a); break;
    default: output_tile_act<M, -1>(a); break;
  }
}

}  // namespace

WinoInputFn wino_input_kernel_avx512(int m) { return m == 4 ? &input_tile<4> : m == 2 ? &input_tile<2> : nullptr; }
WinoOutputFn wino_output_kernel_avx512(int m) { return m == 4 ? &output_tile<4> : m == 2 ? &output_tile<2> : nullptr; }

#else  // built without AVX-512: never asked for (nchwc_direct_available() is false)

WinoInputFn wino_input_kernel_avx512(int) { return nullptr; }
WinoOutputFn wino_output_kernel_avx512(int) { return nullptr; }

#endif

}  // namespace onyx::nchwc
