// Conv [+ Add(residual)] [+ activation, or x * Sigmoid(x), or x * HardSigmoid(x)] -> com.onyx FusedConv(X, W, B, Z):
// the residual sum and the activation are applied by the convolution kernel
// to its output while it is still in cache.
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// The activation's name and parameters when `act` is one FusedConv supports.
std::optional<std::pair<std::string, std::vector<float>>> activation_of(const Node& act, const GraphView& view,
                                                                        int64_t opset) {
  auto f = [&](const char* name, float def) {
    const Attribute* a = act.attr(name);
    return a ? a->f : def;
  };
  const std::string& op = act.op_type;
  if (op == "Gelu" && (act.domain.empty() || act.domain == kOnyxDomain)) {  // PoolFormer's and ConvNeXt-style MLPs
    const Attribute* approximate = act.attr("approximate");
    return {{approximate && approximate->s == "tanh" ? "GeluTanh" : "Gelu", {}}};
  }
  if (!act.domain.empty()) return std::nullopt;
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish") return {{op, {}}};
  if (op == "LeakyRelu") return {{op, {f("alpha", 0.01f)}}};
  if (op == "HardSigmoid") return {{op, {f("alpha", 0.2f), f("beta", 0.5f)}}};
  if (op == "Clip") {
    auto bounds = clip_bounds(act, view, opset);
    if (!bounds) return std::nullopt;
    return {{op, {bounds->first, bounds->second}}};
  }
  return std::nullopt;
}

// True when the Add may broadcast the conv's output up to a larger shape (GCNet's
// x + context, a [C, 1, 1] conv output): the fused kernels add a residual of the
// output's own shape. A conv output of unknown shape counts as equal; a sum of unknown
// shape after a known conv output does not.
bool may_grow(const GraphView& view, const std::string& conv_out, const std::string& sum) {
  const TypeInfo* c = view.type_of(conv_out);
  const TypeInfo* s = view.type_of(sum);
  if (!c || !c->has_shape) return false;
  return !s || !s->has_shape || may_broadcast_up(view, conv_out, sum);
}

class ConvActivationRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Conv"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& conv = g.nodes[i];
    const Tensor* w = view.constant(conv.inputs[1]);
    if (!w || w->dtype() != DataType::Float) return std::nullopt;
    Node fused = conv;
    fused.op_type = "FusedConv";
    fused.domain = kOnyxDomain;
    fused.inputs.resize(3);
    std::vector<int> removed = {i};
    std::string out = conv.outputs[0], fusion = "Conv";
    // A residual Add whose other operand is computed elsewhere and has the output's shape
    // (the blocked and CUDA kernels sum element by element).
    int ri = sole_consumer_of_type(g, view, out, "Add");
    if (ri >= 0 && !view.constant(other_input(g.nodes[ri], out)) &&
        !may_grow(view, out, g.nodes[ri].outputs[0]) &&
        !may_broadcast_up(view, other_input(g.nodes[ri], out), g.nodes[ri].outputs[0])) {
      fused.inputs.push_back(other_input(g.nodes[ri], out));
      removed.push_back(ri);
      out = g.nodes[ri].outputs[0];
      fusion += "+Add";
    }
    int ai = view.single_consumer(out);
    auto act = ai >= 0 ? activation_of(g.nodes[ai], view, ctx.opset()) : std::nullopt;
    if (auto swish = ai < 0 ? swish_of(g, view, out) : std::nullopt) {
      removed.push_back(swish->first);
      ai = swish->second;
      act = {{"Swish", {1.0f}}};
    } else if (auto hard = ai < 0 ? self_gated(g, view, out, "HardSigmoid") : std::nullopt) {
      // Paddle's and TensorFlow's HardSwish, x * HardSigmoid(x) with their own alpha (0.1666667, not 1/6).
      removed.push_back(hard->first);
      ai = hard->second;
      act = {{"HardSwish", activation_of(g.nodes[hard->first], view, ctx.opset())->second}};  // its alpha, beta
    }
    if (act) {
      fused.attributes["activation"] = string_attr(act->first);
      Attribute params;
      params.type = AttrType::Floats;
      params.floats = act->second;
      fused.attributes["activation_params"] = params;
      removed.push_back(ai);
      out = g.nodes[ai].outputs[0];
      fusion += "+" + act->first;
    }
    if (removed.size() == 1) return std::nullopt;
    fused.outputs = {out};
    if (ctx.can_run && !ctx.can_run(fused)) return std::nullopt;
    Patch p;
    p.remove = removed;
    p.add = {fused};
    p.fusion = fusion;
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_conv_activation_fusion() {
  return single_rule_pass<ConvActivationRule>("conv_activation_fusion");
}

}  // namespace onyx
