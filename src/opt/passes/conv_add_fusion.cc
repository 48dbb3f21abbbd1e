// Conv + Add(per-channel constant) -> Conv with that constant in its bias;
// Conv + Mul(per-channel or scalar constant) -> Conv with scaled weights and
// bias (the scale half of a batch norm, as tf2onnx leaves it after Keras'
// depthwise convolutions).
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// The constant `k` varies along the output channels of a convolution with `channels`
// outputs and `spatial` dims only ([C, 1, .., 1] or [1, C, 1, .., 1]), or is a scalar
// when `scalar_ok`: it then maps each channel on its own and does not grow the output.
bool per_channel(const Tensor& k, int64_t channels, int spatial, bool scalar_ok) {
  const Shape& s = k.shape();
  if (scalar_ok && k.numel() == 1) return static_cast<int>(s.size()) <= spatial + 2;
  if (k.numel() != channels || static_cast<int>(s.size()) < spatial + 1 || static_cast<int>(s.size()) > spatial + 2)
    return false;
  return s[s.size() - spatial - 1] == channels;
}

class ConvChannelRule final : public RewriteRule {
 public:
  explicit ConvChannelRule(std::string op) : op_(std::move(op)) {}
  std::string op_type() const override { return op_; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    for (int side = 0; side < 2; ++side) {
      int ci = view.producer(n.inputs[side]);
      const Node* conv = node_of_type(g, ci, "Conv");
      if (!conv || view.single_consumer(conv->outputs[0]) != i) continue;
      const Tensor* w = view.constant(conv->inputs[1]);
      const Tensor* k = view.constant(n.inputs[1 - side]);
      if (!w || !k || w->dtype() != DataType::Float || k->dtype() != DataType::Float || w->rank() < 3) continue;
      const int64_t channels = w->dim(0);
      if (!per_channel(*k, channels, w->rank() - 2, op_ == "Mul")) continue;
      const bool has_bias = conv->inputs.size() > 2 && !conv->inputs[2].empty();
      const Tensor* b = has_bias ? view.constant(conv->inputs[2]) : nullptr;
      if (has_bias && (!b || b->dtype() != DataType::Float)) continue;
      auto kc = [&](int64_t c) { return k->data<float>()[k->numel() == 1 ? 0 : c]; };
      Patch p;
      Node fused = *conv;
      fused.outputs = {n.outputs[0]};
      if (op_ == "Add" || has_bias) {
        Tensor nb(DataType::Float, {channels});
        for (int64_t c = 0; c < channels; ++c) {
          const float bc = b ? b->data<float>()[c] : 0.0f;
          nb.data<float>()[c] = op_ == "Add" ? bc + kc(c) : bc * kc(c);
        }
        std::string bn = view.fresh_name(n.outputs[0] + "_conv_bias");
        p.initializers.push_back({bn, nb});
        fused.inputs = {conv->inputs[0], conv->inputs[1], bn};
      }
      if (op_ == "Mul") {
        Tensor nw(DataType::Float, w->shape());
        const int64_t per = w->numel() / channels;
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t j = 0; j < per; ++j) nw.data<float>()[c * per + j] = w->data<float>()[c * per + j] * kc(c);
        std::string wn = view.fresh_name(n.outputs[0] + "_conv_weight");
        p.initializers.push_back({wn, nw});
        fused.inputs[1] = wn;
      }
      p.remove = {ci, i};
      p.add = {fused};
      p.fusion = "Conv+" + op_;
      return p;
    }
    return std::nullopt;
  }

 private:
  std::string op_;
};

}  // namespace

std::unique_ptr<GraphPass> make_conv_add_fusion() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<ConvChannelRule>("Add"));
  rules.push_back(std::make_unique<ConvChannelRule>("Mul"));
  return std::make_unique<RulePass>("conv_add_fusion", std::move(rules));
}

}  // namespace onyx
