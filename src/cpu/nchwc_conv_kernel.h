// The AVX-512 micro-kernels of the direct blocked convolution (see
// nchwc_conv.h). This header is shared by the driver and the kernel file,
// which is compiled with -mavx512f: it holds plain structs and function
// pointers only (no inline std:: code, so nothing AVX-512 leaks into other
// translation units through the linker).
#pragma once
#include <cstdint>

namespace onyx::nchwc {

// Activation applied in the store: y = act(acc + bias + z).
enum ActKind : int {
  kActNone = 0,
  kActRelu,
  kActLeakyRelu,   // p0 = alpha
  kActClip,        // p0 = min, p1 = max
  kActHardSigmoid, // clip(p0 * x + p1, 0, 1)
  kActHardSwish,   // x * clip(p0 x + p1, 0, 1): p0 = 1/6, p1 = 1/2 for ONNX's HardSwish
  kActSigmoid,
  kActTanh,
  kActSwish,       // x * sigmoid(p0 * x)
  kActGelu,        // x * Phi(x) (erf form)
  kActGeluTanh,    // its tanh approximation
};

// One tile: NB output blocks (16 channels each) x P output pixels of one
// output row, summed over icb_count input blocks x kh_count x kw_count taps x
// ic_inner input channels. Pointers are at the first tap that is summed.
//   x[icb * x_icb_stride + kh * x_kh_stride + kw * x_kw_stride + ic * x_ic_stride + p * x_px_stride]
//   w[icb * w_icb_stride + kh * w_kh_stride + kw * w_kw_stride + (ic * NB + b) * 16 + lane]
//   y[b * y_block_stride + p * 16 + lane] (z likewise)
struct TileArgs {
  const float* x;
  const float* w;
  float* y;
  const float* z;     // residual or null
  const float* bias;  // NB * 16 values or null
  int64_t icb_count, x_icb_stride, w_icb_stride;
  int64_t kh_count, x_kh_stride, w_kh_stride;
  int64_t kw_count, x_kw_stride, w_kw_stride;
  int64_t ic_inner, x_ic_stride;  // ic_inner = 16 with x_ic_stride 1 for blocked input
  int64_t x_px_stride;
  int64_t y_block_stride;
  uint32_t last_mask;  // lanes of the last block that are real channels (others are stored as 0)
  // Weights a later call will read, fetched into L2 while this one computes:
  // pf_lines cache lines from pf at every kernel tap (null: none). Layers
  // whose weights come from memory otherwise wait on each chunk's first use.
  const float* pf;
  int64_t pf_lines;
  bool accumulate;     // start from the values in y (a partial sum over earlier input blocks)
  bool finish;         // apply bias, z and the activation; else store the raw sums
  int act;
  float p0, p1;
};
using TileFn = void (*)(const TileArgs&);

// Depthwise, one whole output row of one 16-channel block: pixels whose taps
// reach into the left / right padding sum their valid taps, the others go in
// tiles of 8.
//   x: the input row of the first summed kernel row (column 0);
//   w: [kh][kw][16] from that kernel row; y, z: the output row.
struct DwRowArgs {
  const float* x;
  const float* w;
  float* y;
  const float* z;
  const float* bias;  // 16 values or null
  int64_t kh_count, x_kh_stride;
  int64_t KW, SW, DW, PW, W, OW;
  // blocks in this call (1 or 2) and the strides between them (more
  // independent FMA chains per tile)
  int64_t ncb, x_cb_stride, w_cb_stride, y_cb_stride;
  uint32_t last_mask;  // of the last block in this call
  int act;
  float p0, p1;
};
using DwRowFn = void (*)(const DwRowArgs&);
DwRowFn dw_row_kernel_avx512();

constexpr int kMaxBlocks = 4;
// The most pixels a tile of nb blocks holds (24-28 accumulators).
constexpr int max_pixels(int nb) { return nb == 1 ? 14 : nb == 2 ? 12 : nb == 3 ? 8 : 6; }

// The kernel for nb blocks (1..4) x p pixels (1..max_pixels(nb)) and an
// inner channel loop of ic: 16 (blocked input, x_ic_stride 1), 3 (plain RGB
// input), else any (0: ic_inner is read).
TileFn tile_kernel_avx512(int nb, int p, int ic);

}  // namespace onyx::nchwc
