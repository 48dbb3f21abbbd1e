// GELU from its decomposed forms -> com.onyx Gelu:
//   erf:  x * 0.5 * (1 + erf(x / sqrt(2)))          (or x * (1/sqrt(2)) inside)
//   tanh: x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// The final products may come in any order: (x*a)*0.5, x*(a*0.5), (x*0.5)*a.
#include <cmath>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;

struct Tail {
  std::vector<int> nodes;
  std::string output;
};

// Matches the products of `x`, 0.5 and `one_plus` (the output of Add(1, ...)).
std::optional<Tail> match_tail(const Graph& g, const GraphView& view, const std::string& x, const std::string& one_plus) {
  int m1 = sole_consumer_of_type(g, view, one_plus, "Mul");
  if (m1 < 0) return std::nullopt;
  std::string other = other_input(g.nodes[m1], one_plus);
  if (other == x) {  // (x * a) * 0.5
    int m2 = sole_consumer_of_type(g, view, g.nodes[m1].outputs[0], "Mul");
    if (m2 < 0 || !is_constant_near(view, other_input(g.nodes[m2], g.nodes[m1].outputs[0]), 0.5)) return std::nullopt;
    return Tail{{m1, m2}, g.nodes[m2].outputs[0]};
  }
  if (is_constant_near(view, other, 0.5)) {  // x * (a * 0.5)
    int m2 = sole_consumer_of_type(g, view, g.nodes[m1].outputs[0], "Mul");
    if (m2 < 0 || other_input(g.nodes[m2], g.nodes[m1].outputs[0]) != x) return std::nullopt;
    return Tail{{m1, m2}, g.nodes[m2].outputs[0]};
  }
  int half = view.producer(other);  // (x * 0.5) * a
  const Node* h = node_of_type(g, half, "Mul");
  if (!h || view.single_consumer(h->outputs[0]) != m1) return std::nullopt;
  if (other_input(*h, x).empty() || !is_constant_near(view, other_input(*h, x), 0.5)) return std::nullopt;
  return Tail{{half, m1}, g.nodes[m1].outputs[0]};
}

// Add(1, v) consuming `v` alone; returns its index.
int add_one_after(const Graph& g, const GraphView& view, const std::string& v) {
  int a = sole_consumer_of_type(g, view, v, "Add");
  return a >= 0 && is_constant_near(view, other_input(g.nodes[a], v), 1.0) ? a : -1;
}

class GeluErfRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Erf"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& erf = g.nodes[i];
    int si = view.producer(erf.inputs[0]);
    if (si < 0 || view.single_consumer(erf.inputs[0]) != i) return std::nullopt;
    const Node& scale = g.nodes[si];
    if (!scale.domain.empty() || scale.inputs.size() != 2) return std::nullopt;
    std::string x;
    if (scale.op_type == "Div" && is_constant_near(view, scale.inputs[1], kSqrt2)) x = scale.inputs[0];
    else if (scale.op_type == "Mul" && is_constant_near(view, scale.inputs[1], 1 / kSqrt2)) x = scale.inputs[0];
    else if (scale.op_type == "Mul" && is_constant_near(view, scale.inputs[0], 1 / kSqrt2)) x = scale.inputs[1];
    else return std::nullopt;
    int add = add_one_after(g, view, erf.outputs[0]);
    if (add < 0) return std::nullopt;
    auto tail = match_tail(g, view, x, g.nodes[add].outputs[0]);
    if (!tail) return std::nullopt;
    Patch p;
    p.remove = {si, i, add};
    p.remove.insert(p.remove.end(), tail->nodes.begin(), tail->nodes.end());
    p.add = {make_node("Gelu", erf.name + "_gelu", {x}, {tail->output}, kOnyxDomain)};
    p.fusion = "Gelu";
    return p;
  }
};

class GeluTanhRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Tanh"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& th = g.nodes[i];
    // tanh(c * (x + 0.044715 * x^3))
    int ci = view.producer(th.inputs[0]);
    const Node* c = node_of_type(g, ci, "Mul");
    if (!c) return std::nullopt;
    std::string inner;
    for (int s = 0; s < 2; ++s)
      if (is_constant_near(view, c->inputs[s], kSqrt2OverPi)) inner = c->inputs[1 - s];
    int ai = view.producer(inner);
    const Node* a = node_of_type(g, ai, "Add");
    if (inner.empty() || !a) return std::nullopt;
    for (int s = 0; s < 2; ++s) {
      std::string x = a->inputs[s];
      int ki = view.producer(a->inputs[1 - s]);
      const Node* k = node_of_type(g, ki, "Mul");
      if (!k) continue;
      std::string cube;
      for (int t = 0; t < 2; ++t)
        if (is_constant_near(view, k->inputs[t], 0.044715)) cube = k->inputs[1 - t];
      int pi = view.producer(cube);
      std::vector<int> cube_nodes;
      if (const Node* pw = node_of_type(g, pi, "Pow")) {
        if (pw->inputs[0] != x || !is_constant_near(view, pw->inputs[1], 3.0)) continue;
        cube_nodes = {pi};
      } else if (const Node* m = node_of_type(g, pi, "Mul")) {  // x * (x * x)
        std::string sq = other_input(*m, x);
        const Node* m2 = node_of_type(g, view.producer(sq), "Mul");
        if (sq.empty() || !m2 || m2->inputs[0] != x || m2->inputs[1] != x) continue;
        cube_nodes = {pi, view.producer(sq)};
      } else {
        continue;
      }
      int add = add_one_after(g, view, th.outputs[0]);
      if (add < 0) return std::nullopt;
      auto tail = match_tail(g, view, x, g.nodes[add].outputs[0]);
      if (!tail) return std::nullopt;
      Patch p;
      p.remove = {ci, ai, ki, i, add};
      p.remove.insert(p.remove.end(), cube_nodes.begin(), cube_nodes.end());
      p.remove.insert(p.remove.end(), tail->nodes.begin(), tail->nodes.end());
      Node gelu = make_node("Gelu", th.name + "_gelu", {x}, {tail->output}, kOnyxDomain);
      gelu.attributes["approximate"] = string_attr("tanh");
      p.add = {gelu};
      p.fusion = "Gelu";
      return p;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_gelu_fusion() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<GeluErfRule>());
  rules.push_back(std::make_unique<GeluTanhRule>());
  return std::make_unique<RulePass>("gelu_fusion", std::move(rules));
}

}  // namespace onyx
