// Pad by constant zeros on the spatial dimensions only, read by a Conv or an
// AveragePool, becomes that node's own padding. PyTorch exports
// avg_pool2d(padding=p) (count_include_pad) as Pad + AveragePool and
// TensorFlow converters emit Pad + Conv for "SAME" padding; as separate nodes
// the Pad copies the whole activation and keeps the blocked layout from
// reaching the pool (Inception-v3's pools ran 20x slower than onnxruntime's).
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// The pads of a Pad node as [begin..., end...] when it pads with constant
// zeros and its pads are known at load time; nullopt otherwise.
std::optional<std::vector<int64_t>> zero_pads(const Node& pad, const GraphView& view, int64_t opset) {
  const Attribute* mode = pad.attr("mode");
  if (mode && mode->s != "constant") return std::nullopt;
  if (opset < 11) {
    const Attribute* value = pad.attr("value");
    if (value && value->f != 0.0f) return std::nullopt;
  } else {
    if (pad.inputs.size() > 3 && !pad.inputs[3].empty()) return std::nullopt;  // axes: rare, not handled
    if (pad.inputs.size() > 2 && !pad.inputs[2].empty()) {
      auto value = constant_scalar(view, pad.inputs[2]);
      if (!value || *value != 0.0) return std::nullopt;
    }
  }
  return pad_amounts(pad, view, opset);
}

bool all_zero(const std::vector<int64_t>& v, size_t begin, size_t end) {
  for (size_t k = begin; k < end; ++k)
    if (v[k] != 0) return false;
  return true;
}

class PadIntoConsumerRule final : public RewriteRule {
 public:
  explicit PadIntoConsumerRule(std::string op) : op_(std::move(op)) {}
  std::string op_type() const override { return op_; }

  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& n = g.nodes[i];
    if (n.inputs.empty()) return std::nullopt;
    const Node* pad = node_of_type(g, view.producer(n.inputs[0]), "Pad");
    if (!pad || pad->inputs.empty() || view.is_graph_output(n.inputs[0])) return std::nullopt;
    const Attribute* auto_pad = n.attr("auto_pad");
    if (auto_pad && auto_pad->s != "NOTSET") return std::nullopt;
    auto pads = zero_pads(*pad, view, ctx.opset());
    if (!pads || pads->size() < 6 || pads->size() % 2 != 0) return std::nullopt;
    const size_t rank = pads->size() / 2, spatial = rank - 2;
    for (int64_t v : *pads)
      if (v < 0) return std::nullopt;  // cropping
    if (!all_zero(*pads, 0, 2) || !all_zero(*pads, rank, rank + 2)) return std::nullopt;  // batch / channels
    std::vector<int64_t> own(2 * spatial, 0);
    if (const Attribute* a = n.attr("pads")) {
      if (a->ints.size() != own.size()) return std::nullopt;
      own = a->ints;
    }
    Node fused = n;
    if (op_ == "AveragePool") {
      if (ctx.opset() < 7) return std::nullopt;  // no count_include_pad before opset 7
      // The Pad's zeros count in the average: only with count_include_pad
      // (or no padding of the pool's own) and floor-mode windows.
      bool include = n.attr("count_include_pad") && n.attr("count_include_pad")->i != 0;
      if (!include && !all_zero(own, 0, own.size())) return std::nullopt;
      if (n.attr("ceil_mode") && n.attr("ceil_mode")->i != 0) return std::nullopt;
      fused.attributes["count_include_pad"] = int_attr(1);
    }
    for (size_t d = 0; d < spatial; ++d) {
      own[d] += (*pads)[2 + d];
      own[spatial + d] += (*pads)[rank + 2 + d];
    }
    fused.attributes["pads"] = ints_attr(own);
    fused.inputs[0] = pad->inputs[0];
    Patch p;
    p.remove = {i};
    if (view.consumers(n.inputs[0]).size() == 1) p.remove.push_back(view.producer(n.inputs[0]));
    p.add = {fused};
    p.fusion = "Pad+" + op_;
    return p;
  }

 private:
  std::string op_;
};

}  // namespace

std::unique_ptr<GraphPass> make_pad_fusion() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<PadIntoConsumerRule>("Conv"));
  rules.push_back(std::make_unique<PadIntoConsumerRule>("AveragePool"));
  return std::make_unique<RulePass>("pad_fusion", std::move(rules));
}

}  // namespace onyx
