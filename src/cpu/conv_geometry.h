// Spatial geometry shared by the Conv and pooling kernels: output sizes and
// pads from kernel_shape / strides / dilations / pads / auto_pad / ceil_mode.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace onyx {

struct SpatialAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: [b1..bn, e1..en]
  bool ceil_mode = false;

  static SpatialAttrs read(const AttributeReader& a) {
    SpatialAttrs s;
    s.auto_pad = a.get_string("auto_pad", "NOTSET");
    s.kernel = a.get_ints("kernel_shape");
    s.strides = a.get_ints("strides");
    s.dilations = a.get_ints("dilations");
    s.pads = a.get_ints("pads");
    s.ceil_mode = a.get_int("ceil_mode", 0) != 0;
    return s;
  }
};

// A 1x1, stride-1, unpadded, ungrouped convolution of at most 8 output channels (a
// segmentation or detection head): one small GEMM over the plain input. oneDNN first
// reorders the whole input to channels-last, and the blocked layout computes a whole block
// of output lanes, most of them padding.
inline bool is_pointwise_head(const std::vector<int64_t>& w_shape, const SpatialAttrs& a, int64_t group) {
  if (group != 1 || w_shape.size() < 3 || w_shape[0] > 8) return false;
  for (size_t i = 2; i < w_shape.size(); ++i)
    if (w_shape[i] != 1) return false;
  for (int64_t s : a.strides)
    if (s != 1) return false;
  for (int64_t p : a.pads)
    if (p != 0) return false;
  return a.auto_pad == "NOTSET" || a.auto_pad.empty() || a.auto_pad == "VALID";
}

struct SpatialGeometry {
  int nd = 0;
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;
  int64_t in_size() const { int64_t n = 1; for (auto v : in) n *= v; return n; }
  int64_t out_size() const { int64_t n = 1; for (auto v : out) n *= v; return n; }
  int64_t kernel_size() const { int64_t n = 1; for (auto v : kernel) n *= v; return n; }
};

// `kernel` must already be filled (from the attribute or the weights).
inline SpatialGeometry compute_geometry(const std::vector<int64_t>& in, const SpatialAttrs& a,
                                        const std::vector<int64_t>& kernel) {
  SpatialGeometry g;
  g.nd = static_cast<int>(in.size());
  g.in = in;
  g.kernel = kernel;
  if (static_cast<int>(kernel.size()) != g.nd)
    kernel_fail("kernel_shape has " + std::to_string(kernel.size()) + " dims but the input has " +
                std::to_string(g.nd) + " spatial dims");
  auto fill = [&](const std::vector<int64_t>& v, const char* name, int64_t def) {
    if (v.empty()) return std::vector<int64_t>(g.nd, def);
    if (static_cast<int>(v.size()) != g.nd)
      kernel_fail(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(g.nd));
    return v;
  };
  g.strides = fill(a.strides, "strides", 1);
  g.dilations = fill(a.dilations, "dilations", 1);
  g.pad_begin.assign(g.nd, 0);
  g.pad_end.assign(g.nd, 0);
  g.out.assign(g.nd, 0);
  bool explicit_pads = a.auto_pad == "NOTSET" || a.auto_pad.empty();
  if (explicit_pads && !a.pads.empty()) {
    if (static_cast<int>(a.pads.size()) != 2 * g.nd)
      kernel_fail("pads has " + std::to_string(a.pads.size()) + " values, expected " + std::to_string(2 * g.nd));
    for (int i = 0; i < g.nd; ++i) {
      g.pad_begin[i] = a.pads[i];
      g.pad_end[i] = a.pads[i + g.nd];
      if (g.pad_begin[i] < 0 || g.pad_end[i] < 0) kernel_fail("negative pads are not supported");
    }
  }
  for (int i = 0; i < g.nd; ++i) {
    if (g.kernel[i] <= 0) kernel_fail("kernel dims must be positive");
    if (g.strides[i] <= 0) kernel_fail("strides must be positive");
    if (g.dilations[i] <= 0) kernel_fail("dilations must be positive");
    int64_t eff = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t s = g.strides[i];
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      int64_t o = (g.in[i] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (o - 1) * s + eff - g.in[i]);
      if (a.auto_pad == "SAME_UPPER") {
        g.pad_begin[i] = total / 2;
        g.pad_end[i] = total - total / 2;
      } else {
        g.pad_end[i] = total / 2;
        g.pad_begin[i] = total - total / 2;
      }
      g.out[i] = o;
    } else if (a.auto_pad == "VALID") {
      int64_t span = g.in[i] - eff;
      g.out[i] = span < 0 ? 0 : span / s + 1;
    } else if (explicit_pads) {
      int64_t span = g.in[i] + g.pad_begin[i] + g.pad_end[i] - eff;
      if (a.ceil_mode) {
        // ceil(span / s) + 1, span possibly negative: a window larger than the
        // input (EfficientNet's pooling in Hugging Face) still gives one output.
        int64_t o = span + s > 0 ? (span + 2 * s - 1) / s : 0;
        // the last window must start inside the input or the left padding
        if ((o - 1) * s >= g.in[i] + g.pad_begin[i]) --o;
        g.out[i] = o;
      } else {
        g.out[i] = span < 0 ? 0 : span / s + 1;
      }
    } else {
      kernel_fail("unknown auto_pad value '" + a.auto_pad + "'");
    }
    if (g.out[i] <= 0)
      kernel_fail("spatial dim " + std::to_string(i) + " of size " + std::to_string(g.in[i]) +
                  " is too small for a kernel of " + std::to_string(g.kernel[i]) + " (dilation " +
                  std::to_string(g.dilations[i]) + ")");
  }
  return g;
}

// ConvTranspose's geometry: `in` is its input, `out` its output, as col2im reads them.
// pad_end is what is cropped from the end of the full output (in - 1) * s + eff, so that
// out = full - pad_begin - pad_end; output_padding makes it smaller, possibly negative.
inline SpatialGeometry compute_transpose_geometry(const std::vector<int64_t>& in, const SpatialAttrs& a,
                                                  const std::vector<int64_t>& kernel,
                                                  const std::vector<int64_t>& output_padding,
                                                  const std::vector<int64_t>& output_shape) {
  SpatialGeometry g;
  g.nd = static_cast<int>(in.size());
  g.in = in;
  g.kernel = kernel;
  const int nd = g.nd;
  auto fill = [&](const std::vector<int64_t>& v, const char* name, int64_t def) {
    if (v.empty()) return std::vector<int64_t>(nd, def);
    if (static_cast<int>(v.size()) != nd)
      kernel_fail(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(nd));
    return v;
  };
  if (!a.kernel.empty() && a.kernel != kernel) kernel_fail("kernel_shape attribute does not match the weights");
  g.strides = fill(a.strides, "strides", 1);
  g.dilations = fill(a.dilations, "dilations", 1);
  const std::vector<int64_t> opad = fill(output_padding, "output_padding", 0);
  std::vector<int64_t> target;
  if (static_cast<int>(output_shape.size()) == nd) target = output_shape;
  else if (static_cast<int>(output_shape.size()) == nd + 2) target.assign(output_shape.begin() + 2, output_shape.end());
  else if (!output_shape.empty())
    kernel_fail("output_shape has " + std::to_string(output_shape.size()) + " values, expected " + std::to_string(nd));
  if (!a.pads.empty() && static_cast<int>(a.pads.size()) != 2 * nd)
    kernel_fail("pads has " + std::to_string(a.pads.size()) + " values, expected " + std::to_string(2 * nd));
  const bool same = a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER";
  g.pad_begin.assign(nd, 0);
  g.pad_end.assign(nd, 0);
  g.out.assign(nd, 0);
  auto floor_half = [](int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };
  for (int d = 0; d < nd; ++d) {
    if (g.kernel[d] <= 0 || g.strides[d] <= 0 || g.dilations[d] <= 0)
      kernel_fail("kernel dims, strides and dilations must be positive");
    const int64_t eff = (g.kernel[d] - 1) * g.dilations[d] + 1;
    const int64_t full = g.strides[d] * (g.in[d] - 1) + eff, natural = full + opad[d];
    if (!target.empty() || same) {
      g.out[d] = !target.empty() ? target[d] : g.in[d] * g.strides[d];
      const int64_t total = natural - g.out[d];
      g.pad_begin[d] = a.auto_pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
    } else if (a.auto_pad == "VALID") {
      g.out[d] = natural;
    } else {
      if (!a.pads.empty()) g.pad_begin[d] = a.pads[d];
      g.out[d] = natural - g.pad_begin[d] - (a.pads.empty() ? 0 : a.pads[d + nd]);
    }
    if (g.out[d] <= 0) kernel_fail("ConvTranspose output dim " + std::to_string(d) + " is not positive");
    g.pad_end[d] = full - g.out[d] - g.pad_begin[d];
  }
  return g;
}

// For a row of `out` outputs over a row of `in` inputs (stride, dilation,
// `pad` before): the outputs [lo[j], hi[j]) whose tap j reads inside the
// row. A pool that loops tap by tap over these ranges needs no bounds check
// per element.
struct TapRanges {
  std::vector<int64_t> lo, hi;
  TapRanges(int64_t in, int64_t out, int64_t taps, int64_t stride, int64_t dilation, int64_t pad)
      : lo(taps), hi(taps) {
    for (int64_t j = 0; j < taps; ++j) {
      const int64_t off = j * dilation - pad;  // input column of tap j at output 0
      lo[j] = std::min(out, off >= 0 ? 0 : (-off + stride - 1) / stride);
      hi[j] = in - 1 - off < 0 ? lo[j] : std::clamp((in - 1 - off) / stride + 1, lo[j], out);
    }
  }
};

}  // namespace onyx
