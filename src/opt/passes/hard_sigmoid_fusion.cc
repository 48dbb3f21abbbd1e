// HardSigmoid and HardSwish written out, as Paddle (paddle2onnx) and older
// PyTorch exports spell them:
//   Clip(x + 3, 0, 6) / 6        -> HardSigmoid(x; alpha 1/6, beta 0.5)
//   x * Clip(x + 3, 0, 6) / 6    -> x * HardSigmoid(x)
// (dividing by 6 or multiplying by 1/6, x on either side). x * HardSigmoid(x)
// is the form the conv fusion takes as a HardSwish activation and the blocked
// layout keeps blocked; the four loose nodes each broke both.
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// The node scaling `value` by 1/6 (Div by 6 or Mul by 1/6) when it is the value's only reader.
int sixth_of(const Graph& g, const GraphView& view, const std::string& value) {
  int d = sole_consumer_of_type(g, view, value, "Div");
  if (d >= 0 && g.nodes[d].inputs[0] == value && is_constant_near(view, g.nodes[d].inputs[1], 6.0, 1e-6)) return d;
  int m = sole_consumer_of_type(g, view, value, "Mul");
  if (m >= 0 && is_constant_near(view, other_input(g.nodes[m], value), 1.0 / 6.0, 1e-6)) return m;
  return -1;
}

class HardSigmoidRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Clip"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& clip = g.nodes[i];
    auto bounds = clip_bounds(clip, view, ctx.opset());
    if (!bounds || bounds->first != 0.f || bounds->second != 6.f) return std::nullopt;
    const int ai = view.producer(clip.inputs[0]);
    const Node* add = node_of_type(g, ai, "Add");
    if (!add || view.single_consumer(add->outputs[0]) != i) return std::nullopt;
    std::string x;
    for (int s = 0; s < 2; ++s)
      if (is_constant_near(view, add->inputs[s], 3.0, 1e-6)) x = add->inputs[1 - s];
    if (x.empty()) return std::nullopt;
    Node hard_sigmoid = make_node("HardSigmoid", clip.name + "_hard_sigmoid", {x}, {});
    hard_sigmoid.attributes["alpha"] = float_attr(1.0f / 6.0f);
    hard_sigmoid.attributes["beta"] = float_attr(0.5f);
    Patch p;
    if (int scale = sixth_of(g, view, clip.outputs[0]); scale >= 0) {  // Clip(x + 3, 0, 6) / 6 [* x]
      hard_sigmoid.outputs = {g.nodes[scale].outputs[0]};
      p.remove = {ai, i, scale};
      p.add = {hard_sigmoid};
      p.fusion = "HardSigmoid";
      return p;
    }
    const int mi = sole_consumer_of_type(g, view, clip.outputs[0], "Mul");  // x * Clip(x + 3, 0, 6) / 6
    if (mi < 0 || other_input(g.nodes[mi], clip.outputs[0]) != x) return std::nullopt;
    const int scale = sixth_of(g, view, g.nodes[mi].outputs[0]);
    if (scale < 0) return std::nullopt;
    hard_sigmoid.outputs = {clip.outputs[0]};  // the Clip is gone: its value now holds the gate
    p.remove = {ai, i, mi, scale};
    p.add = {hard_sigmoid, make_node("Mul", g.nodes[mi].name, {x, clip.outputs[0]}, {g.nodes[scale].outputs[0]})};
    p.fusion = "HardSwish as x * HardSigmoid(x)";
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_hard_sigmoid_fusion() {
  return single_rule_pass<HardSigmoidRule>("hard_sigmoid_fusion");
}

}  // namespace onyx
