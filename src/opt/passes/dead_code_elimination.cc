// Dead-code elimination: drops nodes whose outputs nobody reads and
// initializers no node reads.
#include <unordered_set>

#include "opt/passes/passes.h"

namespace onyx {

namespace {

class DeadCodeElimination final : public GraphPass {
 public:
  std::string name() const override { return "dead_code_elimination"; }
  bool run(Graph& g, PassContext&) override {
    bool changed = false;
    for (bool again = true; again;) {
      again = false;
      GraphView view(g);
      std::vector<int> dead;
      for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
        bool used = false;
        for (auto& o : g.nodes[i].outputs)
          if (!o.empty() && (view.is_graph_output(o) || !view.consumers(o).empty())) used = true;
        if (!used) dead.push_back(i);
      }
      if (!dead.empty()) {
        erase_nodes(g, dead);
        changed = again = true;
      }
    }
    GraphView view(g);
    std::unordered_set<std::string> inputs;
    for (auto& i : g.inputs) inputs.insert(i.name);
    std::vector<std::string> keep;
    for (auto& name : g.initializer_order) {
      if (!g.initializers.count(name)) continue;
      if (inputs.count(name) || view.is_graph_output(name) || !view.consumers(name).empty()) {
        keep.push_back(name);
      } else {
        g.initializers.erase(name);
        changed = true;
      }
    }
    g.initializer_order = keep;
    return changed;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_dead_code_elimination() { return std::make_unique<DeadCodeElimination>(); }

}  // namespace onyx
