// LayerNormalization from its decomposed form:
//   m = ReduceMean(x); d = x - m; v = ReduceMean(d*d or d^2); n = d / Sqrt(v + eps)
//   (or d * Reciprocal(Sqrt(v + eps))); y = n * gamma + beta
// The mean and variance must reduce over the trailing axes.
#include "opt/passes/norm_pattern.h"
#include "opt/passes/passes.h"

namespace onyx {

namespace {

class LayerNormRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "ReduceMean"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& mean = g.nodes[i];
    auto axis = trailing_mean_axis(mean, view);
    if (!axis) return std::nullopt;
    auto axes = reduce_axes(mean, view);
    const std::string& x = mean.inputs[0];
    // d = x - mean (read by the variance branch and the normalization)
    int si = -1;
    for (int c : view.consumers(mean.outputs[0]))
      if (const Node* s = node_of_type(g, c, "Sub"); s && s->inputs[0] == x && s->inputs[1] == mean.outputs[0]) si = c;
    if (si < 0 || view.consumers(mean.outputs[0]).size() != 1) return std::nullopt;
    const std::string& d = g.nodes[si].outputs[0];
    int sq = -1, div = -1;
    for (int c : view.consumers(d)) {
      const Node& n = g.nodes[c];
      if (n.op_type == "Pow" && n.inputs[0] == d && is_constant_near(view, n.inputs[1], 2.0)) sq = c;
      else if (n.op_type == "Mul" && n.inputs[0] == d && n.inputs[1] == d) sq = c;
      else if ((n.op_type == "Div" && n.inputs[0] == d) || n.op_type == "Mul") div = c;
    }
    if (sq < 0 || div < 0 || view.consumers(d).size() != 2) return std::nullopt;
    int vi = sole_consumer_of_type(g, view, g.nodes[sq].outputs[0], "ReduceMean");
    if (vi < 0 || reduce_axes(g.nodes[vi], view) != axes || !keeps_dims(g.nodes[vi])) return std::nullopt;
    auto root = root_of_mean_plus_eps(g, view, vi);
    if (!root) return std::nullopt;
    const int qi = root->sqrt;
    std::vector<int> nodes = {i, si, sq, vi, root->add, qi, div};
    const Node& dn = g.nodes[div];
    if (dn.op_type == "Div") {
      if (dn.inputs[1] != g.nodes[qi].outputs[0]) return std::nullopt;
    } else {  // d * Reciprocal(sqrt)
      int ri = sole_consumer_of_type(g, view, g.nodes[qi].outputs[0], "Reciprocal");
      if (ri < 0 || other_input(dn, d) != g.nodes[ri].outputs[0]) return std::nullopt;
      nodes.push_back(ri);
    }
    std::string y = dn.outputs[0], gamma, beta;
    // Cohere's per-head norm multiplies x [B, S, H, D] normalized over D by a [H, D] weight:
    // not the fused op's scale.
    auto per_row = [&](const std::string& name) {
      const Tensor* t = view.constant(name);
      return t && scale_covers_rows(*t, view.static_shape(x), -*axis);
    };
    int mi = sole_consumer_of_type(g, view, y, "Mul");
    if (mi >= 0 && per_row(other_input(g.nodes[mi], y))) {
      gamma = other_input(g.nodes[mi], y);
      y = g.nodes[mi].outputs[0];
      nodes.push_back(mi);
      int bi = sole_consumer_of_type(g, view, y, "Add");
      if (bi >= 0 && per_row(other_input(g.nodes[bi], y))) {
        beta = other_input(g.nodes[bi], y);
        y = g.nodes[bi].outputs[0];
        nodes.push_back(bi);
      }
    }
    Patch p;
    if (gamma.empty()) return std::nullopt;  // the fused op needs the scale's shape
    // ai.onnx has LayerNormalization from opset 17; older models get Onyx's (the same op), so
    // that a saved optimized model stays valid ONNX.
    Node ln = make_node("LayerNormalization", mean.name + "_layernorm", {x, gamma}, {y},
                        ctx.opset() >= 17 ? "" : kOnyxDomain);
    if (!beta.empty()) ln.inputs.push_back(beta);
    ln.attributes["axis"] = int_attr(*axis);
    ln.attributes["epsilon"] = float_attr(static_cast<float>(root->eps));
    p.remove = nodes;
    p.add = {ln};
    p.fusion = "LayerNormalization";
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_layer_norm_fusion() {
  return single_rule_pass<LayerNormRule>("layer_norm_fusion");
}

}  // namespace onyx
