// Constant folding: a node whose inputs are all constants is run once at load
// and replaced by initializers holding its outputs.

#include "opt/passes/passes.h"

namespace onyx {

namespace {

class ConstantFolding final : public GraphPass {
 public:
  std::string name() const override { return "constant_folding"; }
  bool run(Graph& g, PassContext& ctx) override {
    if (!ctx.evaluate) return false;
    bool changed = false;
    GraphView view(g);
    std::vector<int> folded;
    for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
      const Node& n = g.nodes[i];
      if (n.is_random() || n.has_subgraphs()) continue;
      std::vector<Tensor> inputs;
      bool all_constant = true;
      for (auto& in : n.inputs) {
        if (in.empty()) {
          inputs.emplace_back();
          continue;
        }
        const Tensor* t = g.initializers.count(in) ? view.constant(in) : nullptr;
        if (!t) {
          all_constant = false;
          break;
        }
        inputs.push_back(*t);
      }
      if (!all_constant) continue;
      std::optional<std::vector<Tensor>> outputs = ctx.evaluate(n, inputs);
      if (!outputs) continue;
      for (size_t k = 0; k < n.outputs.size() && k < outputs->size(); ++k) {
        if (n.outputs[k].empty()) continue;
        g.initializers[n.outputs[k]] = (*outputs)[k];
        g.initializer_order.push_back(n.outputs[k]);
      }
      folded.push_back(i);
      changed = true;
    }
    erase_nodes(g, folded);
    return changed;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_constant_folding() { return std::make_unique<ConstantFolding>(); }

}  // namespace onyx
