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
  const char* required_attributes;  // "to", "body num_scan_inputs", ...
};

constexpr Arity kArities[] = {
#include "onnx/op_arity_table.inc"
};

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

// One schema version, its formal lists parsed once for every model.
struct Version {
  int since;
  std::vector<Formal> inputs, outputs;
  int least_inputs, least_outputs;
  std::vector<Formal> attributes;
};

struct Table {
  std::map<std::pair<std::string, std::string>, std::vector<Version>> ops;  // versions by since_version
  std::map<std::string, int> newest;  // per domain: the highest since_version listed
};

const Table& table() {
  static const Table t = [] {
    Table t;
    for (const Arity& a : kArities) {
      t.ops[{a.domain, a.op}].push_back(
          {a.since, parse_formals(a.inputs), parse_formals(a.outputs), a.least_inputs, a.least_outputs,
           parse_formals(a.required_attributes)});
      t.newest[a.domain] = std::max(t.newest[a.domain], a.since);
    }
    return t;
  }();
  return t;
}

const Version* find_version(const std::string& domain, const std::string& op, int64_t opset) {
  const Table& t = table();
  auto it = t.ops.find({domain, op});
  if (it == t.ops.end() || opset <= 0 || opset > t.newest.at(domain)) return nullptr;
  const Version* best = nullptr;
  for (const Version& v : it->second)
    if (v.since <= opset) best = &v;
  return best;
}

[[noreturn]] void node_fail(const Model& model, const Node& n, const std::string& why) {
  fail(ErrorCode::InvalidGraph, "model '" + model.path + "', node '" + n.name + "' (" + n.op_type + "): " + why);
}

void check_values(const Model& model, const Node& n, const char* what, const std::vector<std::string>& values,
                  const std::vector<Formal>& formals, int least) {
  for (size_t i = 0; i < formals.size(); ++i)
    if (formals[i].required && (i >= values.size() || values[i].empty()))
      node_fail(model, n, std::string(what) + " " + std::to_string(i) + " (" + formals[i].name +
                              ") is required but missing");
  if (static_cast<int>(values.size()) < least)
    node_fail(model, n, "needs at least " + std::to_string(least) + " " + what + "s, got " +
                            std::to_string(values.size()));
}

void check_arity(const Model& model, const Node& n) {
  const std::string domain = canonical_domain(n.domain);
  if (const Version* v = find_version(domain, n.op_type, model.opset(domain))) {
    check_values(model, n, "input", n.inputs, v->inputs, v->least_inputs);
    check_values(model, n, "output", n.outputs, v->outputs, v->least_outputs);
    for (const Formal& a : v->attributes)
      if (!n.attr(a.name)) node_fail(model, n, "required attribute '" + a.name + "' is missing");
  }
}

void check_windows(const Model& model, const Node& n) {
  for (const char* key : {"strides", "dilations", "kernel_shape"}) {
    const Attribute* a = n.attr(key);
    if (!a || std::all_of(a->ints.begin(), a->ints.end(), [](int64_t v) { return v >= 1; })) continue;
    std::string values;
    for (int64_t v : a->ints) values += (values.empty() ? "" : ", ") + std::to_string(v);
    node_fail(model, n, "attribute '" + std::string(key) + "' must hold positive values, got [" + values + "]");
  }
}

// Calls check(model, node) on every node of the model, subgraphs included.
void check_every_node(const Model& model, void (*check)(const Model&, const Node&)) {
  for_each_graph(model.graph, [&](const Graph& g) {
    for (const Node& n : g.nodes) check(model, n);
  });
}

}  // namespace

void check_node_arity(const Model& model) { check_every_node(model, check_arity); }

void check_window_attributes(const Model& model) { check_every_node(model, check_windows); }

}  // namespace onyx
