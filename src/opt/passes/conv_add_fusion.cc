// Conv + Add(per-channel or scalar constant) -> Conv with that constant in its
// bias; Conv + Mul(per-channel or scalar constant) -> Conv with scaled weights
// and bias (the scale half of a batch norm, as tf2onnx leaves it after Keras'
// depthwise convolutions; PP-LCNetV3's learnable affine blocks, a scalar Mul
// and Add after each conv).
#include "opt/passes/channel_affine.h"
#include "opt/passes/passes.h"

namespace onyx {

namespace {

// The constant `k` varies along the output channels of a convolution with `channels`
// outputs and `spatial` dims only ([C, 1, .., 1] or [1, C, 1, .., 1]), or is a scalar
// of rank at most the output's: it then maps each channel on its own and does not grow the output.
bool per_channel(const Tensor& k, int64_t channels, int spatial) {
  const Shape& s = k.shape();
  if (k.numel() == 1) return static_cast<int>(s.size()) <= spatial + 2;
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
      if (!per_channel(*k, channels, w->rank() - 2)) continue;
      ChannelAffine a{std::vector<float>(channels, 1.0f), std::vector<float>(channels, 0.0f)};
      for (int64_t c = 0; c < channels; ++c)
        (op_ == "Mul" ? a.scale : a.shift)[c] = k->data<float>()[k->numel() == 1 ? 0 : c];
      Patch p;
      auto fused = conv_with_affine(view, *conv, a, n.outputs[0], p);
      if (!fused) continue;
      p.remove = {ci, i};
      p.add = {*fused};
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
