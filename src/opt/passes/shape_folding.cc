// Shape folding: Shape and Size of a value whose dims are all known become
// constants, so the Shape-derived subgraphs behind them fold away too.
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
    Tensor value;
    if (op_ == "Size") {
      value = Tensor::scalar<int64_t>(shape_numel(*shape));
    } else {
      int64_t rank = static_cast<int64_t>(shape->size());
      const Attribute* s = n.attr("start");
      const Attribute* e = n.attr("end");
      int64_t start = s ? s->i : 0, end = e ? e->i : rank;
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, start, rank);
      std::vector<int64_t> dims(shape->begin() + start, shape->begin() + end);
      value = Tensor::from_vector<int64_t>(dims, {static_cast<int64_t>(dims.size())});
    }
    Patch p;
    p.remove = {i};
    p.initializers = {{n.outputs[0], value}};
    p.fusion = op_ + " folding";
    return p;
  }

 private:
  std::string op_;
};

}  // namespace

std::unique_ptr<GraphPass> make_shape_folding() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<ShapeRule>("Shape"));
  rules.push_back(std::make_unique<ShapeRule>("Size"));
  return std::make_unique<RulePass>("shape_folding", std::move(rules));
}

}  // namespace onyx
