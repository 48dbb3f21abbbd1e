#include <chrono>
#include <unordered_set>

#include "opt/pass.h"

namespace onyx {

void verify_graph(const Graph& g, const std::string& after_pass) {
  std::unordered_set<std::string> defined;
  auto bad = [&](const std::string& why) {
    fail(ErrorCode::InvalidGraph, "graph '" + g.name + "' is invalid after optimizer pass '" + after_pass + "': " + why);
  };
  for (auto& i : g.inputs) defined.insert(i.name);
  for (auto& [name, t] : g.initializers) defined.insert(name);
  for (auto& n : g.nodes)
    for (auto& o : n.outputs)
      if (!o.empty() && !defined.insert(o).second) bad("value '" + o + "' is defined twice");
  // Subgraphs may read outer-scope names we cannot see here; only check the top level.
  for (auto& n : g.nodes)
    for (auto& in : n.inputs)
      if (!in.empty() && !defined.count(in)) bad("node " + n.describe() + " reads undefined value '" + in + "'");
  for (auto& o : g.outputs)
    if (!defined.count(o.name)) bad("graph output '" + o.name + "' is not produced");
}

std::vector<PassTiming> optimize_graph(Graph& graph, OptimizationLevel level, PassContext& ctx,
                                       const std::set<std::string>& disabled) {
  std::vector<std::unique_ptr<GraphPass>> passes = passes_for_level(level);
  std::vector<PassTiming> timings(passes.size());
  for (size_t i = 0; i < passes.size(); ++i) timings[i].name = passes[i]->name();
  constexpr int kMaxRounds = 8;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool changed = false;
    for (size_t i = 0; i < passes.size(); ++i) {
      if (disabled.count(passes[i]->name())) continue;
      auto t0 = std::chrono::steady_clock::now();
      bool c = passes[i]->run(graph, ctx);
      timings[i].ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (c) {
        ++timings[i].changed;
        verify_graph(graph, passes[i]->name());
        changed = true;
      }
    }
    if (!changed) break;
  }
  return timings;
}

}  // namespace onyx
