// The AVX-512 tile transforms of the Winograd F(4x4, 3x3) and F(2x2, 3x3)
// convolutions on the blocked layout (nchwc_winograd.h). Shared by the driver and the kernel file,
// which is compiled with -mavx512f: plain structs and function pointers only,
// as in nchwc_conv_kernel.h.
//
//   Y = A^T [ (G g G^T) (.) (B^T d B) ] A
//
// F(m, 3): d an (m+2)x(m+2) input tile, g a 3x3 filter, Y the m x m outputs;
// (.) is the elementwise product at the (m+2)^2 positions p = (m+2) * row +
// col. Summed over input channels, the product at each position is a matrix
// product (tiles x C) by (C x M), run by the direct convolution's 1x1 tile
// kernels.
#pragma once
#include <cstdint>

namespace onyx::nchwc {

// One input tile of one 16-channel block: the (m+2)^2 patch whose top-left
// pixel is (ih0, iw0) of an H x W plane x[h][w][16] (outside the plane:
// zeros), transformed into v[p * v_stride + lane] for the positions p.
struct WinoInputArgs {
  const float* x;
  int64_t H, W, ih0, iw0;
  float* v;
  int64_t v_stride;
};
using WinoInputFn = void (*)(const WinoInputArgs&);

// One output tile of one 16-channel block: the products m[p * m_stride +
// lane] transformed into the top-left rows x cols (<= m x m) outputs at
// y[(r * y_row + c) * 16 + lane], as y = act(Y + bias + z) (z like y, or
// null); lanes outside `mask` are stored as 0.
struct WinoOutputArgs {
  const float* m;
  int64_t m_stride;
  float* y;
  const float* z;
  int64_t y_row;
  int rows, cols;
  const float* bias;  // 16 values or null
  uint32_t mask;
  int act;
  float p0, p1;
};
using WinoOutputFn = void (*)(const WinoOutputArgs&);

// For output tiles of m = 4 or 2.
WinoInputFn wino_input_kernel_avx512(int m);
WinoOutputFn wino_output_kernel_avx512(int m);

}  // namespace onyx::nchwc
