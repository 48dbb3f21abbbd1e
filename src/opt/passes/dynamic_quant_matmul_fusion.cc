// What dynamic quantization writes per MatMul (ORT's quantize_dynamic and
// onyx.quantization alike):
//   (q, s, z) = DynamicQuantizeLinear(x)
//   y = Cast<float>(MatMulInteger(q, W, z[, w_zp])) * Mul(s, w_scale) [+ bias]
// -> com.microsoft MatMulIntegerToFloat(q, W, s, w_scale, z, w_zp[, bias]):
// the int32 product is scaled (and biased) as it leaves the GEMM instead of
// passing through three more full-size tensors. DynamicQuantizeLinear stays:
// the Q/K/V projections share one quantization of their input.
// Measured before (BERT-base, one thread): Cast, Mul and Add took ~15% of
// the run.
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// The scale of `x`'s quantization and the constant other factor, when
// `scale` is Mul(s, w_scale) with s the DynamicQuantizeLinear scale of `q`.
std::optional<std::string> weight_scale(const Graph& g, const GraphView& view, const std::string& scale,
                                        const Node& quantize) {
  const Node* m = node_of_type(g, view.producer(scale), "Mul");
  if (!m || m->inputs.size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side)
    if (m->inputs[side] == quantize.outputs[1] && view.constant(m->inputs[1 - side])) return m->inputs[1 - side];
  return std::nullopt;
}

class DynamicQuantMatMulRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "MatMulInteger"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& mi = g.nodes[i];
    if (mi.inputs.size() < 3 || mi.outputs.size() != 1) return std::nullopt;
    const Node* dq = node_of_type(g, view.producer(mi.inputs[0]), "DynamicQuantizeLinear");
    if (!dq || dq->outputs.size() < 3 || mi.inputs[2] != dq->outputs[2] || !view.constant(mi.inputs[1]))
      return std::nullopt;
    int ci = sole_consumer_of_type(g, view, mi.outputs[0], "Cast");
    if (ci < 0 || read_int(g.nodes[ci], "to", 0) != 1) return std::nullopt;  // to float
    int si = sole_consumer_of_type(g, view, g.nodes[ci].outputs[0], "Mul");
    if (si < 0) return std::nullopt;
    const std::string& scale = other_input(g.nodes[si], g.nodes[ci].outputs[0]);
    auto w_scale = weight_scale(g, view, scale, *dq);
    if (!w_scale) return std::nullopt;
    std::string w_zp = mi.inputs.size() > 3 ? mi.inputs[3] : "";
    Patch p;
    p.remove = {i, ci, si};
    std::string out = g.nodes[si].outputs[0], bias;
    int ai = sole_consumer_of_type(g, view, out, "Add");
    const Tensor* w = view.constant(mi.inputs[1]);
    if (ai >= 0 && w->rank() == 2) {
      const std::string& b = other_input(g.nodes[ai], out);
      const Tensor* bt = view.constant(b);
      if (bt && bt->dtype() == DataType::Float && bt->rank() == 1 && bt->dim(0) == w->dim(1)) {
        bias = b;
        out = g.nodes[ai].outputs[0];
        p.remove.push_back(ai);
      }
    }
    std::vector<std::string> inputs = {mi.inputs[0], mi.inputs[1], dq->outputs[1], *w_scale, dq->outputs[2], w_zp};
    if (!bias.empty()) inputs.push_back(bias);
    Node fused = make_node("MatMulIntegerToFloat", mi.name, inputs, {out}, kMicrosoftDomain);
    if (ctx.can_run && !ctx.can_run(fused)) return std::nullopt;
    p.add = {std::move(fused)};
    p.fusion = bias.empty() ? "MatMulInteger+Cast+Mul" : "MatMulInteger+Cast+Mul+Add";
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_dynamic_quant_matmul_fusion() {
  return single_rule_pass<DynamicQuantMatMulRule>("dynamic_quant_matmul_fusion");
}

}  // namespace onyx
