// A 1-D or 2-D convolution's geometry as plain 2-D numbers (a 1-D
// convolution is the 2-D one with a single row), for the 8-bit kernels.
#pragma once
#include <cstdint>

#include "cpu/conv_geometry.h"

namespace onyx {

struct Geo2 {
  int64_t H, W, KH, KW, SH, SW, DH, DW, PT, PL, OH, OW;
  int64_t pixels() const { return OH * OW; }
};

inline Geo2 as_2d(const SpatialGeometry& g) {
  if (g.nd == 1) return {1, g.in[0], 1, g.kernel[0], 1, g.strides[0], 1, g.dilations[0], 0, g.pad_begin[0], 1, g.out[0]};
  return {g.in[0],        g.in[1],        g.kernel[0],    g.kernel[1],    g.strides[0], g.strides[1],
          g.dilations[0], g.dilations[1], g.pad_begin[0], g.pad_begin[1], g.out[0],     g.out[1]};
}

}  // namespace onyx
