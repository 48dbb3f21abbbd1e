// RMS normalization (Llama, Mistral, Qwen, Gemma, T5) from its decomposed form:
//   v = ReduceMean(Pow(x, 2)); r = 1 / Sqrt(v + eps)  (Div(1, s) or Reciprocal(s))
//   y = (x * r) * scale                                (or x / Sqrt(v + eps) * scale)
// -> com.onyx SimplifiedLayerNormalization (onnxruntime's optimizer writes the op of that
// name in the default domain): one pass over each row instead of six nodes and five tensors. The mean
// must reduce trailing axes; the scale must be a float constant.
#include <algorithm>

#include "opt/passes/norm_pattern.h"
#include "opt/passes/passes.h"

namespace onyx {

namespace {

class RmsNormRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Pow"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& pow = g.nodes[i];
    if (!is_constant_near(view, pow.inputs[1], 2.0, 0.0)) return std::nullopt;
    const std::string& x = pow.inputs[0];
    int mi = sole_consumer_of_type(g, view, pow.outputs[0], "ReduceMean");
    if (mi < 0) return std::nullopt;
    auto axis = trailing_mean_axis(g.nodes[mi], view);
    auto root = axis ? root_of_mean_plus_eps(g, view, mi) : std::nullopt;
    if (!root) return std::nullopt;
    std::vector<int> nodes = {i, mi, root->add, root->sqrt};
    const std::string& s = g.nodes[root->sqrt].outputs[0];
    int norm = normalizing_node(g, view, x, s, nodes);
    if (norm < 0) return std::nullopt;
    const std::string& normalized = g.nodes[norm].outputs[0];
    int wi = sole_consumer_of_type(g, view, normalized, "Mul");
    if (wi < 0) return std::nullopt;
    const std::string scale = other_input(g.nodes[wi], normalized);
    const Tensor* w = view.constant(scale);
    if (!w || w->dtype() != DataType::Float || !scale_covers_rows(*w, view.static_shape(x), -*axis))
      return std::nullopt;
    nodes.push_back(wi);
    Node fused = make_node("SimplifiedLayerNormalization", g.nodes[mi].name + "_rmsnorm", {x, scale},
                           {g.nodes[wi].outputs[0]}, kOnyxDomain);
    fused.attributes["axis"] = int_attr(*axis);
    fused.attributes["epsilon"] = float_attr(static_cast<float>(root->eps));
    if (ctx.can_run && !ctx.can_run(fused)) return std::nullopt;
    Patch p;
    p.remove = nodes;
    p.add = {fused};
    p.fusion = "SimplifiedLayerNormalization";
    return p;
  }

 private:
  // The node giving x / s: Mul(x, Div(1, s)), Mul(x, Reciprocal(s)) or Div(x, s). Adds the nodes
  // it takes to `nodes`; -1 when the pattern is not there.
  static int normalizing_node(const Graph& g, const GraphView& view, const std::string& x, const std::string& s,
                              std::vector<int>& nodes) {
    const auto& readers = view.consumers(s);
    if (readers.size() != 1) return -1;
    const Node& r = g.nodes[readers[0]];
    if (r.op_type == "Div" && r.domain.empty() && r.inputs[0] == x && r.inputs[1] == s) {
      nodes.push_back(readers[0]);
      return readers[0];
    }
    bool reciprocal = r.domain.empty() && ((r.op_type == "Reciprocal") ||
                                           (r.op_type == "Div" && r.inputs[1] == s &&
                                            is_constant_near(view, r.inputs[0], 1.0, 0.0)));
    if (!reciprocal) return -1;
    int mul = sole_consumer_of_type(g, view, r.outputs[0], "Mul");
    if (mul < 0 || other_input(g.nodes[mul], r.outputs[0]) != x) return -1;
    nodes.push_back(readers[0]);
    nodes.push_back(mul);
    return mul;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_rms_norm_fusion() { return single_rule_pass<RmsNormRule>("rms_norm_fusion"); }

}  // namespace onyx
