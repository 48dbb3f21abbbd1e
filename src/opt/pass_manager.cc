#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "opt/pass.h"

namespace onyx {

void verify_graph(const Graph& g, const std::string& after_pass, const std::unordered_set<std::string>& outer) {
  std::unordered_set<std::string> defined = outer;
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
                                       const std::set<std::string>& disabled,
                                       const std::unordered_set<std::string>& outer) {
  std::vector<std::unique_ptr<GraphPass>> passes = passes_for_level(level);
  std::vector<PassTiming> timings(passes.size());
  for (size_t i = 0; i < passes.size(); ++i) timings[i].name = passes[i]->name();
  // Rounds until a fixed point: once every enabled pass has run in a row without a change, the
  // rest of the round would only see graphs they already left alone (the round then stops
  // there instead of running to its end).
  constexpr int kMaxRounds = 8;
  const size_t enabled = static_cast<size_t>(
      std::count_if(passes.begin(), passes.end(), [&](const auto& p) { return !disabled.count(p->name()); }));
  size_t unchanged_in_a_row = 0;
  for (int round = 0; round < kMaxRounds && unchanged_in_a_row < enabled; ++round) {
    for (size_t i = 0; i < passes.size() && unchanged_in_a_row < enabled; ++i) {
      if (disabled.count(passes[i]->name())) continue;
      auto t0 = std::chrono::steady_clock::now();
      bool c = passes[i]->run(graph, ctx);
      timings[i].ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (c) {
        ++timings[i].changed;
        verify_graph(graph, passes[i]->name(), outer);
        unchanged_in_a_row = 0;
      } else {
        ++unchanged_in_a_row;
      }
    }
  }
  return timings;
}

namespace {

using Constants = std::unordered_map<std::string, Tensor>;
using Types = std::unordered_map<std::string, TypeInfo>;

// The declared and inferred types of the values `g` defines.
void add_types(const Graph& g, Types& types) {
  for (auto* list : {&g.inputs, &g.outputs, &g.value_infos})
    for (auto& vi : *list)
      if (vi.type.kind != TypeInfo::Kind::Unknown) types[vi.name] = vi.type;
}

void add_timings(std::vector<PassTiming>& total, const std::vector<PassTiming>& more) {
  for (size_t i = 0; i < more.size() && i < total.size(); ++i) {
    total[i].ms += more[i].ms;
    total[i].changed += more[i].changed;
  }
}

// Drops initializers that neither the graph nor its subgraphs read any more (copied into
// the subgraphs that did), so their data is not held twice.
void drop_unread_initializers(Graph& g) {
  std::vector<std::string> subgraph_reads;
  std::unordered_set<std::string> keep;
  for (auto& n : g.nodes) {
    keep.insert(n.inputs.begin(), n.inputs.end());
    collect_subgraph_free_names(n, subgraph_reads);
  }
  keep.insert(subgraph_reads.begin(), subgraph_reads.end());
  for (auto* list : {&g.inputs, &g.outputs})
    for (auto& vi : *list) keep.insert(vi.name);
  std::vector<std::string> order;
  for (auto& name : g.initializer_order) {
    if (keep.count(name)) {
      order.push_back(name);
      continue;
    }
    g.initializers.erase(name);
  }
  g.initializer_order = order;
}

// `visible`: the constants of the enclosing scopes, by name; `types`: their values' types.
void optimize_nested(Graph& g, const Constants& visible, const Types& types, OptimizationLevel level,
                     PassContext& ctx, const std::set<std::string>& disabled, std::vector<PassTiming>& timings) {
  bool any = false;
  for (auto& n : g.nodes) {
    if (!n.has_subgraphs()) continue;
    any = true;
    for (auto& [key, a] : n.attributes) {
      auto optimize_one = [&](std::shared_ptr<Graph>& sub) {
        sub = std::make_shared<Graph>(*sub);  // subgraphs may be shared with other copies of the model
        std::unordered_set<std::string> outer;  // what it reads from enclosing scopes
        for (auto& name : free_names(*sub)) {
          auto c = visible.find(name);
          if (c == visible.end()) {
            outer.insert(name);
            continue;
          }
          sub->initializers[name] = c->second;
          sub->initializer_order.push_back(name);
        }
        // The types of what it reads from outside, for the passes only (not saved with it).
        for (auto& name : outer)
          if (auto t = types.find(name); t != types.end()) sub->value_infos.push_back({name, t->second});
        add_timings(timings, optimize_graph(*sub, level, ctx, disabled, outer));
        auto is_outer = [&](const ValueInfo& vi) { return outer.count(vi.name) != 0; };
        sub->value_infos.erase(std::remove_if(sub->value_infos.begin(), sub->value_infos.end(), is_outer),
                               sub->value_infos.end());
        Types inner_types = types;
        add_types(*sub, inner_types);
        Constants inner = visible;  // less what the subgraph defines, plus its own constants
        for (auto& sn : sub->nodes)
          for (auto& o : sn.outputs) inner.erase(o);
        for (auto& [name, t] : sub->initializers) inner[name] = t;
        for (auto& i : sub->inputs) inner.erase(i.name);  // inputs shadow; an initializer that is one can be fed
        optimize_nested(*sub, inner, inner_types, level, ctx, disabled, timings);
      };
      if (a.g) optimize_one(a.g);
      for (auto& sub : a.graphs) optimize_one(sub);
    }
  }
  if (any) drop_unread_initializers(g);
}

}  // namespace

void optimize_subgraphs(Graph& graph, OptimizationLevel level, PassContext& ctx, const std::set<std::string>& disabled,
                        std::vector<PassTiming>& timings) {
  Constants top;
  for (auto& [name, t] : graph.initializers) top[name] = t;
  for (auto& i : graph.inputs) top.erase(i.name);  // overridable initializers are not constants
  Types types;
  add_types(graph, types);
  optimize_nested(graph, top, types, level, ctx, disabled, timings);
}

}  // namespace onyx
