// Conv + Add(per-channel constant) -> Conv with that constant in its bias.
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

class ConvAddRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Add"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& add = g.nodes[i];
    for (int side = 0; side < 2; ++side) {
      int ci = view.producer(add.inputs[side]);
      const Node* conv = node_of_type(g, ci, "Conv");
      if (!conv || view.single_consumer(conv->outputs[0]) != i) continue;
      const Tensor* w = view.constant(conv->inputs[1]);
      const Tensor* addend = view.constant(add.inputs[1 - side]);
      if (!w || !addend || w->dtype() != DataType::Float || addend->dtype() != DataType::Float) continue;
      int64_t channels = w->dim(0);
      int spatial = w->rank() - 2;
      // The addend must broadcast along the channel axis only: [C,1,..,1] or [1,C,1,..,1].
      const Shape& s = addend->shape();
      if (addend->numel() != channels || static_cast<int>(s.size()) < spatial + 1 ||
          static_cast<int>(s.size()) > spatial + 2)
        continue;
      if (s[s.size() - spatial - 1] != channels) continue;
      const Tensor* b = conv->inputs.size() > 2 && !conv->inputs[2].empty() ? view.constant(conv->inputs[2]) : nullptr;
      if (conv->inputs.size() > 2 && !conv->inputs[2].empty() && (!b || b->dtype() != DataType::Float)) continue;
      Tensor nb(DataType::Float, {channels});
      for (int64_t c = 0; c < channels; ++c)
        nb.data<float>()[c] = addend->data<float>()[c] + (b ? b->data<float>()[c] : 0.0f);
      Patch p;
      std::string bn = view.fresh_name(add.outputs[0] + "_conv_bias");
      p.initializers = {{bn, nb}};
      Node fused = *conv;
      fused.inputs = {conv->inputs[0], conv->inputs[1], bn};
      fused.outputs = {add.outputs[0]};
      p.remove = {ci, i};
      p.add = {fused};
      p.fusion = "Conv+Add";
      return p;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_conv_add_fusion() {
  return single_rule_pass<ConvAddRule>("conv_add_fusion");
}

}  // namespace onyx
