// Per-channel affine ops on an NCHW value (y = x * scale[c] + shift[c]): an
// inference BatchNormalization or a Mul/Add/Sub by a per-channel constant. The
// blocked layout runs them as depthwise 1x1 NchwcConvs (see nchwc_layout.cc).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "opt/graph_view.h"
#include "opt/rewrite.h"

namespace onyx {

struct ChannelAffine {
  std::vector<float> scale, shift;
};

// A BatchNormalization in inference mode with constant float parameters of C
// channels: scale = gamma / sqrt(var + eps), shift = beta - mean * scale.
std::optional<ChannelAffine> batchnorm_affine(const GraphView& view, const Node& bn, int64_t C);

// Mul / Add / Sub of `x` (NCHW, C channels) and a float constant that is a
// scalar or varies along channels only ([C, 1, 1] or [1, C, 1, 1]).
std::optional<ChannelAffine> arithmetic_affine(const GraphView& view, const Node& n, const std::string& x, int64_t C);

// `second` applied after `first`: x * (s1 * s2) + (t1 * s2 + t2).
ChannelAffine compose(const ChannelAffine& first, const ChannelAffine& second);

// The Conv `conv` (constant float weights, a constant float bias or none)
// followed by the map: the same Conv writing `output`, its weights scaled per
// output channel and its bias b * scale + shift, new constants added to `p`
// (weights kept when every scale is 1; no bias when it has none and every
// shift is 0). nullopt when the weights or bias are not float constants.
std::optional<Node> conv_with_affine(const GraphView& view, const Node& conv, const ChannelAffine& a,
                                     const std::string& output, Patch& p);

// The map as a com.onyx NchwcConv (group C, 1x1 weights `scale`, bias `shift`)
// reading `x`, named and writing like `origin`; weight and bias are added to
// the graph's initializers under fresh names.
Node affine_as_depthwise(Graph& g, UniqueNames& names, const Node& origin, const std::string& x, const ChannelAffine& a);

}  // namespace onyx
