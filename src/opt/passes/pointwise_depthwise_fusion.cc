// A 1x1 NchwcConv whose only reader is a depthwise NchwcConv (an inverted
// residual block's expansion and depthwise layers) becomes one com.onyx
// NchwcPointwiseDepthwise, which computes the expanded tensor band by band
// in cache instead of writing it out whole (cpu/nchwc_pointwise_depthwise.h).
// Runs after nchwc_layout; both convolutions need constant weights and
// biases, block 16, and no residual input.
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

const Node* nchwc_conv(const Graph& g, int index) {
  if (index < 0) return nullptr;
  const Node& n = g.nodes[index];
  if (n.domain != kOnyxDomain || n.op_type != "NchwcConv" || n.outputs.size() != 1) return nullptr;
  if (read_int(n, "block", 16) != 16) return nullptr;
  if (n.inputs.size() > 3 && !n.inputs[3].empty()) return nullptr;  // residual
  return &n;
}

// Constant float weights of rank 4 and a constant (or no) bias.
const Tensor* constant_weights(const Node& n, const GraphView& view) {
  const Tensor* w = n.inputs.size() > 1 ? view.constant(n.inputs[1]) : nullptr;
  if (!w || w->dtype() != DataType::Float || w->rank() != 4) return nullptr;
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && !view.constant(n.inputs[2])) return nullptr;
  return w;
}

std::string input_or_empty(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : ""; }

class PointwiseDepthwiseRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "NchwcConv"; }
  std::string domain() const override { return kOnyxDomain; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node* dw = nchwc_conv(g, i);
    if (!dw) return std::nullopt;
    const Tensor* w_dw = constant_weights(*dw, view);
    if (!w_dw || w_dw->dim(1) != 1 || read_int(*dw, "group", 1) != w_dw->dim(0)) return std::nullopt;
    const int p = view.producer(dw->inputs[0]);
    const Node* pw = nchwc_conv(g, p);
    if (!pw || view.single_consumer(pw->outputs[0]) != i) return std::nullopt;
    const Tensor* w_pw = constant_weights(*pw, view);
    if (!w_pw || w_pw->dim(0) != w_dw->dim(0) || w_pw->dim(2) != 1 || w_pw->dim(3) != 1) return std::nullopt;
    const Attribute* auto_pad = pw->attr("auto_pad");
    if (read_int(*pw, "group", 1) != 1 || !ints_all(*pw, "strides", 1) || !ints_all(*pw, "pads", 0) ||
        !ints_all(*pw, "dilations", 1) || (auto_pad && auto_pad->s != "NOTSET" && auto_pad->s != "VALID"))
      return std::nullopt;
    Node fused = make_node("NchwcPointwiseDepthwise", dw->name,
                           {pw->inputs[0], pw->inputs[1], input_or_empty(*pw, 2), dw->inputs[1], input_or_empty(*dw, 2)},
                           dw->outputs, kOnyxDomain);
    fused.attributes = dw->attributes;
    if (const Attribute* a = pw->attr("activation")) fused.attributes["pointwise_activation"] = *a;
    if (const Attribute* a = pw->attr("activation_params")) fused.attributes["pointwise_activation_params"] = *a;
    Patch patch;
    patch.remove = {p, i};
    patch.add = {std::move(fused)};
    patch.fusion = "NchwcConv 1x1 + depthwise as NchwcPointwiseDepthwise";
    return patch;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_pointwise_depthwise_fusion() {
  return single_rule_pass<PointwiseDepthwiseRule>("pointwise_depthwise_fusion");
}

}  // namespace onyx
