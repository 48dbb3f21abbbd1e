// Shape folding: Shape and Size of a value whose dims are all known become
// constants, so the Shape-derived subgraphs behind them fold away too; with a
// symbolic dim (a dynamic batch), a Gather or Slice of the shape that picks
// only known dims (height, width, channels) becomes a constant.
#include <algorithm>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

class ShapeRule final : public RewriteRule {
 public:
  explicit ShapeRule(std::string op) : op_(std::move(op)) {}
  std::string op_type() const override { return op_; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    auto shape = view.static_shape(n.inputs[0]);
    if (!shape) return std::nullopt;
    Tensor value = shape_node_value(n, *shape);
    Patch p;
    p.remove = {i};
    p.initializers = {{n.outputs[0], value}};
    p.fusion = op_ + " folding";
    return p;
  }

 private:
  std::string op_;
};

// The dims of `x` a Shape node reads ([start, end) of its attributes), or
// nullopt when `value` is not a Shape's output or x's rank is unknown; unknown
// dims are -1.
std::optional<std::vector<int64_t>> shape_dims(const Graph& g, const GraphView& view, const std::string& value) {
  const Node* shape = node_of_type(g, view.producer(value), "Shape");
  if (!shape) return std::nullopt;
  const TypeInfo* t = view.type_of(shape->inputs[0]);
  if (!t || t->kind != TypeInfo::Kind::Tensor || !t->has_shape) return std::nullopt;
  const auto [start, end] = shape_node_range(*shape, static_cast<int64_t>(t->shape.size()));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(t->shape[d].value);
  return dims;
}

Patch constant_patch(int i, const std::string& output, Tensor value, const char* what) {
  Patch p;
  p.remove = {i};
  p.initializers = {{output, std::move(value)}};
  p.fusion = what;
  return p;
}

// Gather(Shape(x), constant indices) when every picked dim is known.
class GatherOfShapeRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Gather"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    if (n.inputs.size() != 2 || read_int(n, "axis", 0) != 0) return std::nullopt;
    auto dims = shape_dims(g, view, n.inputs[0]);
    const Tensor* idx = view.constant(n.inputs[1]);
    if (!dims || !idx || !dtype_is_int(idx->dtype()) || idx->rank() > 1) return std::nullopt;
    const int64_t size = static_cast<int64_t>(dims->size());
    std::vector<int64_t> picked;
    for (int64_t k = 0; k < idx->numel(); ++k) {
      int64_t at = idx->int_at(k);
      if (at < -size || at >= size) return std::nullopt;  // the kernel reports it
      const int64_t d = (*dims)[at < 0 ? at + size : at];
      if (d < 0) return std::nullopt;
      picked.push_back(d);
    }
    return constant_patch(i, n.outputs[0], Tensor::from_vector<int64_t>(picked, idx->shape()),
                          "Gather of a known dim folding");
  }
};

// Slice(Shape(x), constant starts / ends, step 1) when every sliced dim is known.
class SliceOfShapeRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Slice"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& n = g.nodes[i];
    if (ctx.opset() < 10 || n.inputs.size() < 3 || n.inputs.size() > 5) return std::nullopt;
    auto dims = shape_dims(g, view, n.inputs[0]);
    auto sp = dims ? slice_params(n, view, ctx.opset()) : std::nullopt;
    if (!sp || sp->starts.size() != 1 || sp->axes[0] != 0 || sp->steps[0] != 1) return std::nullopt;
    const int64_t size = static_cast<int64_t>(dims->size());
    auto clamp_index = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
    const int64_t b = clamp_index(sp->starts[0]), e = std::max(b, clamp_index(sp->ends[0]));
    std::vector<int64_t> picked(dims->begin() + b, dims->begin() + e);
    if (std::any_of(picked.begin(), picked.end(), [](int64_t d) { return d < 0; })) return std::nullopt;
    return constant_patch(i, n.outputs[0], Tensor::from_vector<int64_t>(picked, {e - b}),
                          "Slice of known dims folding");
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_shape_folding() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<ShapeRule>("Shape"));
  rules.push_back(std::make_unique<ShapeRule>("Size"));
  rules.push_back(std::make_unique<GatherOfShapeRule>());
  rules.push_back(std::make_unique<SliceOfShapeRule>());
  return std::make_unique<RulePass>("shape_folding", std::move(rules));
}

}  // namespace onyx
