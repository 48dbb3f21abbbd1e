// Conv + BatchNormalization -> Conv with the normalization folded into its
// weights and bias (all constants, float32).
#include "opt/passes/channel_affine.h"
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

class ConvBatchNormRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "BatchNormalization"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& bn = g.nodes[i];
    int ci = view.producer(bn.inputs[0]);
    const Node* conv = node_of_type(g, ci, "Conv");
    if (!conv || view.single_consumer(conv->outputs[0]) != i) return std::nullopt;
    const Tensor* w = view.constant(conv->inputs[1]);
    if (!w || w->rank() < 1) return std::nullopt;
    auto a = batchnorm_affine(view, bn, w->dim(0));
    Patch p;
    auto fused = a ? conv_with_affine(view, *conv, *a, bn.outputs[0], p) : std::nullopt;
    if (!fused) return std::nullopt;
    p.remove = {ci, i};
    p.add = {*fused};
    p.fusion = "Conv+BatchNormalization";
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_conv_batchnorm_fusion() {
  return single_rule_pass<ConvBatchNormRule>("conv_batchnorm_fusion");
}

}  // namespace onyx
