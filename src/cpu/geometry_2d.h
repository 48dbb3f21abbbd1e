// A 1-D or 2-D convolution's geometry as plain 2-D numbers (a 1-D
// convolution is the 2-D one with a single row), for the 8-bit kernels; a 3-D
// one adds its depth (only the GEMM path reads the depth fields, which are 1 /
// 0 otherwise).
#pragma once
#include <cstdint>

#include "cpu/conv_geometry.h"

namespace onyx {

struct Geo2 {
  int64_t H, W, KH, KW, SH, SW, DH, DW, PT, PL, OH, OW;
  int64_t D = 1, KD = 1, SD = 1, DD = 1, PF = 0, OD = 1;  // depth: size, kernel, stride, dilation, front pad, out
  int64_t pixels() const { return OD * OH * OW; }
  int64_t plane() const { return H * W; }
  bool flat() const { return D == 1 && KD == 1 && OD == 1; }
};

inline Geo2 as_2d(const SpatialGeometry& g) {
  if (g.nd == 1) return {1, g.in[0], 1, g.kernel[0], 1, g.strides[0], 1, g.dilations[0], 0, g.pad_begin[0], 1, g.out[0]};
  if (g.nd == 3)
    return {g.in[1],        g.in[2],        g.kernel[1],    g.kernel[2],    g.strides[1],   g.strides[2],
            g.dilations[1], g.dilations[2], g.pad_begin[1], g.pad_begin[2], g.out[1],       g.out[2],
            g.in[0],        g.kernel[0],    g.strides[0],   g.dilations[0], g.pad_begin[0], g.out[0]};
  return {g.in[0],        g.in[1],        g.kernel[0],    g.kernel[1],    g.strides[0], g.strides[1],
          g.dilations[0], g.dilations[1], g.pad_begin[0], g.pad_begin[1], g.out[0],     g.out[1]};
}

}  // namespace onyx
