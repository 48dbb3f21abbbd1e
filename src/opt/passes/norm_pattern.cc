#include "opt/passes/norm_pattern.h"

#include <algorithm>

namespace onyx {

std::optional<int64_t> trailing_mean_axis(const Node& mean, const GraphView& view) {
  auto axes = reduce_axes(mean, view);
  if (!axes || axes->empty() || !keeps_dims(mean)) return std::nullopt;
  std::vector<int64_t> sorted = *axes;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.back() != -1) return std::nullopt;
  for (size_t k = 1; k < sorted.size(); ++k)
    if (sorted[k] != sorted[k - 1] + 1) return std::nullopt;
  return sorted.front();
}

bool scale_covers_rows(const Tensor& w, const std::optional<Shape>& x_shape, int64_t normalized_axes) {
  if (w.rank() != normalized_axes) return false;
  if (x_shape && static_cast<int64_t>(x_shape->size()) >= normalized_axes)
    return std::equal(w.shape().begin(), w.shape().end(), x_shape->end() - normalized_axes);
  return std::all_of(w.shape().begin(), w.shape().end(), [](int64_t d) { return d > 1; });
}

std::optional<RootOfMeanPlusEps> root_of_mean_plus_eps(const Graph& g, const GraphView& view, int mean) {
  RootOfMeanPlusEps r;
  const std::string& v = g.nodes[mean].outputs[0];
  r.add = sole_consumer_of_type(g, view, v, "Add");
  if (r.add < 0) return std::nullopt;
  auto eps = constant_scalar(view, other_input(g.nodes[r.add], v));
  if (!eps) return std::nullopt;
  r.eps = *eps;
  r.sqrt = sole_consumer_of_type(g, view, g.nodes[r.add].outputs[0], "Sqrt");
  if (r.sqrt < 0) return std::nullopt;
  return r;
}

}  // namespace onyx
