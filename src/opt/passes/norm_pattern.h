// Pieces the decomposed normalizations share (layer_norm_fusion, rms_norm_fusion):
// a mean over trailing axes, and the Sqrt(mean + eps) that follows it.
#pragma once
#include <optional>

#include "opt/rewrite.h"

namespace onyx {

// The first of the trailing, contiguous axes a keepdims ReduceMean reduces (negative, as
// only negative axes say "trailing" without the rank), or nullopt.
std::optional<int64_t> trailing_mean_axis(const Node& mean, const GraphView& view);

// The fused ops take one scale (bias) value per normalized element. A constant
// multiplied into (added to) the normalized x gives that when it has the
// normalized axes' shape: all its dims above 1 (a broadcast against x would then
// need them equal), or equal to x's trailing dims where those are known.
bool scale_covers_rows(const Tensor& w, const std::optional<Shape>& x_shape, int64_t normalized_axes);

// Add(v, eps) -> Sqrt reading the output v of node `mean`, each the sole reader of its input.
struct RootOfMeanPlusEps {
  int add = -1, sqrt = -1;
  double eps = 0;
};
std::optional<RootOfMeanPlusEps> root_of_mean_plus_eps(const Graph& g, const GraphView& view, int mean);

}  // namespace onyx
