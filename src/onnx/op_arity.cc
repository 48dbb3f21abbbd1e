#include "onnx/op_arity.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "onyx/status.h"

namespace onyx {
namespace {

struct Arity {
  const char* domain;
  const char* op;
  int since;
  const char* inputs;   // formal names: "X W B?" ('?' optional, '*' variadic)
  const char* outputs;
  int least_inputs;
  int least_outputs;
};

constexpr Arity kArities[] = {
#include "onnx/op_arity_table.inc"
};

using Versions = std::vector<const Arity*>;  // by since_version

struct Table {
  std::map<std::pair<std::string, std::string>, Versions> ops;
  std::map<std::string, int> newest;  // per domain: the highest since_version listed
};

const Table& table() {
  static const Table t = [] {
    Table t;
    for (const Arity& a : kArities) {
      t.ops[{a.domain, a.op}].push_back(&a);
      t.newest[a.domain] = std::max(t.newest[a.domain], a.since);
    }
    return t;
  }();
  return t;
}

struct Formal {
  std::string name;
  bool required;  // neither optional nor variadic
};

std::vector<Formal> parse_formals(const char* list) {
  std::vector<Formal> out;
  std::istringstream in(list);
  for (std::string w; in >> w;) {
    const bool required = w.back() != '?' && w.back() != '*';
    if (!required) w.pop_back();
    out.push_back({w, required});
  }
  return out;
}

const Arity* find_arity(const std::string& domain, const std::string& op, int64_t opset) {
  const Table& t = table();
  auto newest = t.newest.find(domain);
  auto it = t.ops.find({domain, op});
  if (it == t.ops.end() || opset <= 0 || opset > newest->second) return nullptr;
  const Arity* best = nullptr;
  for (const Arity* a : it->second)
    if (a->since <= opset) best = a;
  return best;
}

void check_values(const Model& model, const Node& n, const char* what, const std::vector<std::string>& values,
                  const char* formals, int least) {
  auto bad = [&](const std::string& why) {
    fail(ErrorCode::InvalidGraph, "model '" + model.path + "', node '" + n.name + "' (" + n.op_type + "): " + why);
  };
  const std::vector<Formal> f = parse_formals(formals);
  for (size_t i = 0; i < f.size(); ++i)
    if (f[i].required && (i >= values.size() || values[i].empty()))
      bad(std::string(what) + " " + std::to_string(i) + " (" + f[i].name + ") is required but missing");
  if (static_cast<int>(values.size()) < least)
    bad("needs at least " + std::to_string(least) + " " + what + "s, got " + std::to_string(values.size()));
}

void check_graph(const Model& model, const Graph& g) {
  for (const Node& n : g.nodes) {
    const std::string domain = n.domain == "ai.onnx" ? "" : n.domain;
    if (const Arity* a = find_arity(domain, n.op_type, model.opset(domain))) {
      check_values(model, n, "input", n.inputs, a->inputs, a->least_inputs);
      check_values(model, n, "output", n.outputs, a->outputs, a->least_outputs);
    }
    for (auto& [key, attr] : n.attributes) {
      if (attr.g) check_graph(model, *attr.g);
      for (auto& sub : attr.graphs) check_graph(model, *sub);
    }
  }
}

void check_windows(const Model& model, const Graph& g) {
  for (const Node& n : g.nodes) {
    for (const char* key : {"strides", "dilations", "kernel_shape"}) {
      const Attribute* a = n.attr(key);
      if (!a || std::all_of(a->ints.begin(), a->ints.end(), [](int64_t v) { return v >= 1; })) continue;
      std::string values;
      for (int64_t v : a->ints) values += (values.empty() ? "" : ", ") + std::to_string(v);
      fail(ErrorCode::InvalidGraph, "model '" + model.path + "', node '" + n.name + "' (" + n.op_type +
                                        "): attribute '" + key + "' must hold positive values, got [" + values + "]");
    }
    for (auto& [key, attr] : n.attributes) {
      if (attr.g) check_windows(model, *attr.g);
      for (auto& sub : attr.graphs) check_windows(model, *sub);
    }
  }
}

}  // namespace

void check_node_arity(const Model& model) { check_graph(model, model.graph); }

void check_window_attributes(const Model& model) { check_windows(model, model.graph); }

}  // namespace onyx
