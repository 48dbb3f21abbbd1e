#include "ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace onyx {

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::Float: return "float";
    case AttrType::Int: return "int";
    case AttrType::String: return "string";
    case AttrType::Tensor: return "tensor";
    case AttrType::Graph: return "graph";
    case AttrType::Floats: return "floats";
    case AttrType::Ints: return "ints";
    case AttrType::Strings: return "strings";
    case AttrType::Tensors: return "tensors";
    case AttrType::Graphs: return "graphs";
    case AttrType::TypeProto: return "type_proto";
    case AttrType::TypeProtos: return "type_protos";
    case AttrType::Undefined: return "undefined";
  }
  return "undefined";
}

std::string Node::describe() const {
  std::string d = domain.empty() ? op_type : domain + "." + op_type;
  return "'" + name + "' (" + d + ")";
}

bool Node::has_subgraphs() const {
  for (auto& [k, a] : attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

bool Node::is_random() const {
  static const std::set<std::string> random = {"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                               "RandomUniformLike", "Bernoulli",     "Multinomial"};
  return domain.empty() && random.count(op_type);
}

void collect_subgraph_free_names(const Node& n, std::vector<std::string>& out) {
  std::set<std::string> seen(out.begin(), out.end());
  for (auto& [key, a] : n.attributes) {
    std::vector<std::shared_ptr<Graph>> graphs = a.graphs;
    if (a.g) graphs.push_back(a.g);
    for (auto& g : graphs)
      for (auto& name : free_names(*g))
        if (seen.insert(name).second) out.push_back(name);
  }
}

std::vector<std::string> free_names(const Graph& g) {
  std::unordered_set<std::string> defined;
  for (auto& vi : g.inputs) defined.insert(vi.name);
  for (auto& [name, t] : g.initializers) defined.insert(name);
  for (auto& n : g.nodes)
    for (auto& o : n.outputs) defined.insert(o);
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (auto& n : g.nodes) {
    for (auto& in : n.inputs) use(in);
    std::vector<std::string> nested;
    collect_subgraph_free_names(n, nested);
    for (auto& name : nested) use(name);
  }
  for (auto& vi : g.outputs) use(vi.name);
  return out;
}

void for_each_graph(const Graph& g, const std::function<void(const Graph&)>& fn) {
  fn(g);
  for (auto& n : g.nodes)
    for (auto& [key, a] : n.attributes) {
      if (a.g) for_each_graph(*a.g, fn);
      for (auto& sub : a.graphs) for_each_graph(*sub, fn);
    }
}

std::vector<size_t> dependency_order(const std::vector<std::vector<size_t>>& deps) {
  std::vector<size_t> pending(deps.size());
  std::vector<std::vector<size_t>> consumers(deps.size());
  std::set<size_t> ready;
  for (size_t i = 0; i < deps.size(); ++i) {
    std::set<size_t> distinct(deps[i].begin(), deps[i].end());
    pending[i] = distinct.size();
    for (size_t d : distinct) consumers[d].push_back(i);
    if (pending[i] == 0) ready.insert(i);
  }
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.insert(c);
  }
  return order;
}

namespace {

// deps[i]: the nodes whose outputs node i reads, what its subgraphs read included.
std::vector<std::vector<size_t>> node_dependencies(const Graph& g) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer.emplace(o, i);
  std::vector<std::vector<size_t>> deps(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::vector<std::string> reads = g.nodes[i].inputs;
    collect_subgraph_free_names(g.nodes[i], reads);
    for (auto& name : reads)
      if (auto it = producer.find(name); it != producer.end()) deps[i].push_back(it->second);
  }
  return deps;
}

}  // namespace

std::vector<size_t> topological_order(const Graph& g) {
  std::vector<size_t> order = dependency_order(node_dependencies(g));
  std::vector<bool> placed(g.nodes.size(), false);
  for (size_t i : order) placed[i] = true;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!placed[i]) order.push_back(i);
  return order;
}

const Node* node_on_cycle(const Graph& g) {
  std::vector<std::vector<size_t>> deps = node_dependencies(g);
  // Whatever Kahn's order cannot reach waits on a cycle.
  std::vector<bool> ordered(g.nodes.size(), false);
  for (size_t i : dependency_order(deps)) ordered[i] = true;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (ordered[i]) continue;
    // Stepping back along unordered dependencies as many times as there are nodes ends on the cycle.
    size_t at = i;
    for (size_t step = 0; step < g.nodes.size(); ++step)
      for (size_t d : deps[at])
        if (!ordered[d]) {
          at = d;
          break;
        }
    return &g.nodes[at];
  }
  return nullptr;
}

std::string canonical_domain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

int64_t Model::opset(const std::string& d) const {
  auto it = opset_imports.find(canonical_domain(d));
  return it == opset_imports.end() ? 0 : it->second;
}

std::pair<int64_t, int64_t> shape_node_range(const Node& shape, int64_t rank) {
  const Attribute* s = shape.attr("start");
  const Attribute* e = shape.attr("end");
  int64_t start = s ? s->i : 0, end = e ? e->i : rank;
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, start, rank);
  return {start, end};
}

Tensor shape_node_value(const Node& node, const Shape& input) {
  if (node.op_type == "Size") return Tensor::scalar<int64_t>(shape_numel(input));
  const auto [start, end] = shape_node_range(node, static_cast<int64_t>(input.size()));
  std::vector<int64_t> dims(input.begin() + start, input.begin() + end);
  return Tensor::from_vector<int64_t>(dims, {end - start});
}

}  // namespace onyx
