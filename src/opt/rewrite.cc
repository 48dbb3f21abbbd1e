#include "opt/rewrite.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace onyx {

void apply_patch(Graph& g, Patch patch, PassContext& ctx) {
  for (auto& [name, t] : patch.initializers) {
    if (!g.initializers.count(name)) g.initializer_order.push_back(name);
    g.initializers[name] = std::move(t);
  }
  int insert_at = static_cast<int>(g.nodes.size());
  if (!patch.remove.empty()) insert_at = *std::max_element(patch.remove.begin(), patch.remove.end());
  std::vector<int> removed = patch.remove;
  std::sort(removed.begin(), removed.end());
  int shift = static_cast<int>(std::lower_bound(removed.begin(), removed.end(), insert_at) - removed.begin());
  erase_nodes(g, patch.remove);
  insert_at -= shift;
  g.nodes.insert(g.nodes.begin() + insert_at, patch.add.begin(), patch.add.end());
  for (auto& [from, to] : patch.rename) rename_uses(g, from, to);
  if (!patch.fusion.empty()) ++ctx.fusion_counts[patch.fusion];
}

// A patch may only drop values that nothing outside it still reads.
static bool patch_is_safe(const Graph& g, const GraphView& view, const Patch& patch) {
  std::set<int> removed(patch.remove.begin(), patch.remove.end());
  std::set<std::string> kept;
  for (auto& n : patch.add)
    for (auto& o : n.outputs) kept.insert(o);
  for (auto& [from, to] : patch.rename) kept.insert(from);
  for (auto& [name, t] : patch.initializers) kept.insert(name);
  for (int r : removed)
    for (auto& o : g.nodes[r].outputs) {
      if (o.empty() || kept.count(o)) continue;
      if (view.is_graph_output(o)) return false;
      for (int c : view.consumers(o))
        if (!removed.count(c)) return false;
    }
  return true;
}

bool RulePass::run(Graph& g, PassContext& ctx) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    GraphView view(g);
    for (int i = 0; i < static_cast<int>(g.nodes.size()) && !again; ++i)
      for (auto& rule : rules_) {
        if (g.nodes[i].op_type != rule->op_type() || !g.nodes[i].domain.empty()) continue;
        std::optional<Patch> patch = rule->match(g, view, i, ctx);
        if (!patch || !patch_is_safe(g, view, *patch)) continue;
        apply_patch(g, std::move(*patch), ctx);
        changed = again = true;  // the view is stale: rebuild and rescan
        break;
      }
  }
  return changed;
}

const Node* node_of_type(const Graph& g, int index, const std::string& op) {
  if (index < 0 || index >= static_cast<int>(g.nodes.size())) return nullptr;
  const Node& n = g.nodes[index];
  return n.op_type == op && n.domain.empty() ? &n : nullptr;
}

std::optional<double> constant_scalar(const GraphView& view, const std::string& value) {
  const Tensor* t = view.constant(value);
  if (!t || t->numel() != 1 || !(dtype_is_float(t->dtype()) || dtype_is_int(t->dtype()))) return std::nullopt;
  return t->float_at(0);
}

Node make_node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
               std::vector<std::string> outputs, const std::string& domain) {
  Node n;
  n.op_type = op;
  n.name = name;
  n.domain = domain;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

Attribute int_attr(int64_t v) { Attribute a; a.type = AttrType::Int; a.i = v; return a; }
Attribute float_attr(float v) { Attribute a; a.type = AttrType::Float; a.f = v; return a; }
Attribute string_attr(const std::string& v) { Attribute a; a.type = AttrType::String; a.s = v; return a; }
Attribute ints_attr(std::vector<int64_t> v) { Attribute a; a.type = AttrType::Ints; a.ints = std::move(v); return a; }

}  // namespace onyx

namespace onyx {

std::string other_input(const Node& n, const std::string& value) {
  if (n.inputs.size() != 2) return "";
  if (n.inputs[0] == value) return n.inputs[1];
  if (n.inputs[1] == value) return n.inputs[0];
  return "";
}

bool is_constant_near(const GraphView& view, const std::string& value, double expected, double tol) {
  auto v = constant_scalar(view, value);
  return v && std::abs(*v - expected) <= tol * std::max(1.0, std::abs(expected));
}

int sole_consumer_of_type(const Graph& g, const GraphView& view, const std::string& value, const std::string& op) {
  int c = view.single_consumer(value);
  return node_of_type(g, c, op) ? c : -1;
}

}  // namespace onyx
