// Common-subexpression elimination: two nodes with the same op, inputs and
// attributes compute the same values; the second reads the first's outputs.
#include <sstream>
#include <unordered_map>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// A key describing the computation, or "" when the node must not be merged.
std::string node_key(const Node& n) {
  static const std::set<std::string> random = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                               "RandomUniformLike", "Bernoulli", "Multinomial"};
  if (random.count(n.op_type)) return "";
  std::ostringstream os;
  os << n.domain << "|" << n.op_type << "|";
  for (auto& in : n.inputs) os << in << ",";
  os << "|" << n.outputs.size() << "|";
  for (auto& [k, a] : n.attributes) {
    if (a.g || !a.graphs.empty() || a.type == AttrType::Tensors || a.type == AttrType::TypeProto) return "";
    os << k << ":" << static_cast<int>(a.type) << ":";
    switch (a.type) {
      case AttrType::Float: os << a.f; break;
      case AttrType::Int: os << a.i; break;
      case AttrType::String: os << a.s.size() << a.s; break;
      case AttrType::Floats: for (float f : a.floats) os << f << ","; break;
      case AttrType::Ints: for (int64_t i : a.ints) os << i << ","; break;
      case AttrType::Strings: for (auto& s : a.strings) os << s.size() << s; break;
      case AttrType::Tensor:
        if (a.t.dtype() == DataType::String || a.t.numel() > 16) return "";
        os << static_cast<int>(a.t.dtype()) << shape_to_string(a.t.shape());
        for (int64_t i = 0; i < a.t.numel(); ++i) os << a.t.float_at(i) << ",";
        break;
      default: return "";
    }
    os << ";";
  }
  return os.str();
}

class CommonSubexpressionElimination final : public GraphPass {
 public:
  std::string name() const override { return "common_subexpression_elimination"; }
  bool run(Graph& g, PassContext& ctx) override {
    for (bool changed = false;;) {
      GraphView view(g);
      PatchBatch batch(g);
      std::unordered_map<std::string, int> seen;
      for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
        std::string key = node_key(g.nodes[i]);
        if (key.empty()) continue;
        auto [it, inserted] = seen.emplace(key, i);
        if (inserted) continue;
        if (auto p = merge(g.nodes[it->second], g.nodes[i], i, view)) batch.add(std::move(*p));
      }
      if (batch.empty()) return changed;
      batch.apply(g, ctx);
      changed = true;
    }
  }

 private:
  // `dup` (at index i) reads `first`'s outputs instead of computing them again.
  static std::optional<Patch> merge(const Node& first, const Node& dup, int i, const GraphView& view) {
    Patch p;
    p.remove = {i};
    for (size_t k = 0; k < dup.outputs.size(); ++k) {
      if (dup.outputs[k].empty()) continue;
      if (first.outputs[k].empty() || view.is_graph_output(dup.outputs[k])) return std::nullopt;
      p.rename.push_back({dup.outputs[k], first.outputs[k]});
    }
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_common_subexpression_elimination() {
  return std::make_unique<CommonSubexpressionElimination>();
}

}  // namespace onyx
