// Conv + BatchNormalization -> Conv with the normalization folded into its
// weights and bias (all constants, float32).
#include <cmath>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

const Tensor* float_constant(const GraphView& view, const std::string& name) {
  const Tensor* t = name.empty() ? nullptr : view.constant(name);
  return t && t->dtype() == DataType::Float ? t : nullptr;
}

class ConvBatchNormRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "BatchNormalization"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& bn = g.nodes[i];
    if (bn.inputs.size() < 5 || (bn.outputs.size() > 1 && !bn.outputs[1].empty())) return std::nullopt;
    if (const Attribute* tm = bn.attr("training_mode"); tm && tm->i != 0) return std::nullopt;
    int ci = view.producer(bn.inputs[0]);
    const Node* conv = node_of_type(g, ci, "Conv");
    if (!conv || view.single_consumer(conv->outputs[0]) != i) return std::nullopt;
    const Tensor* w = float_constant(view, conv->inputs[1]);
    const Tensor* b = conv->inputs.size() > 2 ? float_constant(view, conv->inputs[2]) : nullptr;
    if (!w || (conv->inputs.size() > 2 && !conv->inputs[2].empty() && !b)) return std::nullopt;
    const Tensor *scale = float_constant(view, bn.inputs[1]), *beta = float_constant(view, bn.inputs[2]),
                 *mean = float_constant(view, bn.inputs[3]), *var = float_constant(view, bn.inputs[4]);
    int64_t channels = w->dim(0);
    for (const Tensor* t : {scale, beta, mean, var})
      if (!t || t->numel() != channels) return std::nullopt;
    const Attribute* eps_attr = bn.attr("epsilon");
    float eps = eps_attr ? eps_attr->f : 1e-5f;
    Tensor new_w = w->clone(), new_b(DataType::Float, {channels});
    int64_t per_channel = w->numel() / channels;
    for (int64_t c = 0; c < channels; ++c) {
      float s = scale->data<float>()[c] / std::sqrt(var->data<float>()[c] + eps);
      float* wc = new_w.data<float>() + c * per_channel;
      for (int64_t k = 0; k < per_channel; ++k) wc[k] *= s;
      float bias = b ? b->data<float>()[c] : 0.0f;
      new_b.data<float>()[c] = (bias - mean->data<float>()[c]) * s + beta->data<float>()[c];
    }
    Patch p;
    std::string wn = view.fresh_name(conv->inputs[1] + "_bn"), bnn = view.fresh_name(bn.outputs[0] + "_conv_bias");
    p.initializers = {{wn, new_w}, {bnn, new_b}};
    Node fused = *conv;
    fused.inputs = {conv->inputs[0], wn, bnn};
    fused.outputs = {bn.outputs[0]};
    p.remove = {ci, i};
    p.add = {fused};
    p.fusion = "Conv+BatchNormalization";
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_conv_batchnorm_fusion() {
  return single_rule_pass<ConvBatchNormRule>("conv_batchnorm_fusion");
}

}  // namespace onyx
