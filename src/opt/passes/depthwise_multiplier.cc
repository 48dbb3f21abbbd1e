// A depthwise convolution with a channel multiplier k (W [G*k, 1, kh, kw],
// group G: FastViT's and MobileOne's downsampling, Keras' depth_multiplier)
// has no blocked kernel and ran as a slow grouped convolution (FastViT-T8's
// 7x7 stride-2 one: 1.8 ms for 7 MFLOP). It is the plain depthwise
// convolution (group G*k, same weights) of the input with each channel
// repeated k times, so it becomes Gather(X, channel c -> c / k) and that
// convolution, which the blocked layout runs with its depthwise kernels.
#include <algorithm>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

bool same_values(const Tensor* a, const Tensor& b) {
  return a && a->dtype() == b.dtype() && a->shape() == b.shape() &&
         std::equal(b.data<int64_t>(), b.data<int64_t>() + b.numel(), a->data<int64_t>());
}

class DepthwiseMultiplierRule final : public RewriteRule {
 public:
  DepthwiseMultiplierRule(std::string op, std::string domain) : op_(std::move(op)), domain_(std::move(domain)) {}
  std::string op_type() const override { return op_; }
  std::string domain() const override { return domain_; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& conv = g.nodes[i];
    // Without the blocked layout (no oneDNN) the rewrite gains nothing.
    if (!kernel_exists(ctx, "NchwcConv", kOnyxDomain)) return std::nullopt;
    if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return std::nullopt;
    const Tensor* w = view.constant(conv.inputs[1]);
    const int64_t group = read_int(conv, "group", 1);
    if (!w || w->dtype() != DataType::Float || w->rank() != 4 || w->dim(1) != 1 || group < 2) return std::nullopt;
    const int64_t M = w->dim(0);
    if (M % group != 0 || M == group) return std::nullopt;
    const int64_t k = M / group;
    Tensor channels(DataType::Int64, {M});
    for (int64_t c = 0; c < M; ++c) channels.data<int64_t>()[c] = c / k;
    // One index constant per (G, k), so that convs reading one input share one Gather after CSE.
    std::string index = "onyx_repeat_" + std::to_string(group) + "_channels_" + std::to_string(k) + "_times";
    const bool reuse = same_values(view.constant(index), channels);
    if (!reuse) index = view.fresh_name(index);
    const std::string repeated = view.fresh_name(conv.outputs[0] + "_repeated_input");
    Node gather = make_node("Gather", conv.name + "_repeat_channels", {conv.inputs[0], index}, {repeated});
    gather.attributes["axis"] = int_attr(1);
    Node depthwise = conv;
    depthwise.inputs[0] = repeated;
    depthwise.attributes["group"] = int_attr(M);
    Patch p;
    p.remove = {i};
    p.add = {gather, depthwise};
    if (!reuse) p.initializers = {{index, channels}};
    p.fusion = "depthwise multiplier as repeated channels";
    return p;
  }

 private:
  std::string op_, domain_;
};

}  // namespace

std::unique_ptr<GraphPass> make_depthwise_multiplier() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<DepthwiseMultiplierRule>("Conv", ""));
  rules.push_back(std::make_unique<DepthwiseMultiplierRule>("FusedConv", kOnyxDomain));
  return std::make_unique<RulePass>("depthwise_multiplier", std::move(rules));
}

}  // namespace onyx
