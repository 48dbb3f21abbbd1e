// ReduceMean over the two spatial axes of a 4-D float tensor (PyTorch's
// x.mean([2, 3]) before a classifier: MnasNet, MobileNet variants) becomes
// GlobalAveragePool, which the blocked layout keeps at the end of its chain
// of convolutions; a generic reduction first converts the whole feature map
// back to NCHW. With keepdims = 0 a Flatten drops the two 1-sized axes.
#include <algorithm>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

bool is_spatial_pair(std::vector<int64_t> axes) {
  for (auto& a : axes) a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3};
}

class SpatialMeanRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "ReduceMean"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    if (!n.domain.empty()) return std::nullopt;
    const TypeInfo* t = view.type_of(n.inputs[0]);
    if (!t || t->kind != TypeInfo::Kind::Tensor || !t->has_shape || t->shape.size() != 4) return std::nullopt;
    if (t->elem_type != DataType::Float && t->elem_type != DataType::Double && t->elem_type != DataType::Float16)
      return std::nullopt;
    auto axes = reduce_axes(n, view);
    if (!axes || !is_spatial_pair(*axes)) return std::nullopt;
    Patch p;
    p.remove = {i};
    p.fusion = "ReduceMean as GlobalAveragePool";
    if (keeps_dims(n)) {
      p.add = {make_node("GlobalAveragePool", n.name, {n.inputs[0]}, {n.outputs[0]})};
      return p;
    }
    const std::string pooled = view.fresh_name(n.outputs[0] + "_pooled");
    Node flatten = make_node("Flatten", n.name + "_flatten", {pooled}, {n.outputs[0]});
    flatten.attributes["axis"] = int_attr(1);
    p.add = {make_node("GlobalAveragePool", n.name, {n.inputs[0]}, {pooled}), flatten};
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_spatial_mean_to_pool() {
  return single_rule_pass<SpatialMeanRule>("spatial_mean_to_pool");
}

}  // namespace onyx
