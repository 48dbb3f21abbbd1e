// Add + LayerNormalization (last axis) -> com.onyx SkipLayerNormalization:
// the residual sum and the normalization in one pass over memory.
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// LayerNormalization of ai.onnx (opset 17+), or of com.onyx, where layer_norm_fusion
// puts the ones it finds in older models.
class SkipLayerNormRule final : public RewriteRule {
 public:
  explicit SkipLayerNormRule(std::string domain) : domain_(std::move(domain)) {}
  std::string op_type() const override { return "LayerNormalization"; }
  std::string domain() const override { return domain_; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& ln = g.nodes[i];
    if (ln.outputs.size() > 1) {
      for (size_t k = 1; k < ln.outputs.size(); ++k)
        if (!ln.outputs[k].empty()) return std::nullopt;  // mean / inv-std outputs wanted
    }
    const Attribute* axis = ln.attr("axis");
    if (axis && axis->i != -1) return std::nullopt;
    const Tensor* gamma = view.constant(ln.inputs[1]);
    if (!gamma || gamma->rank() != 1 || gamma->dtype() != DataType::Float) return std::nullopt;
    int ai = view.producer(ln.inputs[0]);
    const Node* add = node_of_type(g, ai, "Add");
    if (!add || view.single_consumer(add->outputs[0]) != i) return std::nullopt;
    // The input of the sum's shape first: the CUDA kernel repeats only the skip.
    std::string x = add->inputs[0], skip = add->inputs[1];
    if (may_broadcast_up(view, x, add->outputs[0]) && !may_broadcast_up(view, skip, add->outputs[0])) std::swap(x, skip);
    Node fused = make_node("SkipLayerNormalization", ln.name, {x, skip, ln.inputs[1]}, {ln.outputs[0]}, kOnyxDomain);
    fused.inputs.push_back(ln.inputs.size() > 2 ? ln.inputs[2] : "");
    const Attribute* eps = ln.attr("epsilon");
    fused.attributes["epsilon"] = float_attr(eps ? eps->f : 1e-5f);
    if (ctx.can_run && !ctx.can_run(fused)) return std::nullopt;
    Patch p;
    p.remove = {ai, i};
    p.add = {fused};
    p.fusion = "SkipLayerNormalization";
    return p;
  }

 private:
  std::string domain_;
};

}  // namespace

std::unique_ptr<GraphPass> make_skip_layer_norm_fusion() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<SkipLayerNormRule>(""));
  rules.push_back(std::make_unique<SkipLayerNormRule>(kOnyxDomain));
  return std::make_unique<RulePass>("skip_layer_norm_fusion", std::move(rules));
}

}  // namespace onyx
