// The graph IR: nodes connected by value names, as ONNX has them. Kept close
// to the proto so loading and saving are direct, but free of protobuf types.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx {

struct Graph;

enum class AttrType { Undefined, Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs, TypeProto, TypeProtos };

const char* attr_type_name(AttrType t);

struct Attribute {
  AttrType type = AttrType::Undefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  TypeInfo type_info;
  std::string ref_attr_name;  // inside function bodies: refers to the caller's attribute
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for ai.onnx
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::map<std::string, Attribute> attributes;

  const Attribute* attr(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? nullptr : &it->second;
  }
  // "name (OpType)" for error messages.
  std::string describe() const;
  // Whether an attribute holds a graph (If, Loop, Scan bodies).
  bool has_subgraphs() const;
  // Whether the op draws random numbers (its outputs are not a function of its inputs).
  bool is_random() const;
};

struct ValueInfo {
  std::string name;
  TypeInfo type;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_infos;
  std::unordered_map<std::string, Tensor> initializers;
  std::vector<std::string> initializer_order;  // deterministic iteration / saving

  bool is_initializer(const std::string& name) const { return initializers.count(name) != 0; }
};

// A model-local function (FunctionProto).
struct Function {
  std::string name;
  std::string domain;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> attribute_names;
  std::map<std::string, Attribute> attribute_defaults;
  std::vector<Node> nodes;
  std::map<std::string, int64_t> opset_imports;
};

struct Model {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;  // domain ("" = ai.onnx) -> version
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::map<std::string, std::string> metadata;
  std::string path;  // where it was loaded from, for messages ("<memory>" for bytes)
  Graph graph;
  std::vector<Function> functions;

  int64_t opset(const std::string& domain) const;  // 0 when not imported
};

// Names a graph reads but does not define (what its nested subgraphs read from it
// included), each once, in the order first read: what it takes from enclosing scopes.
std::vector<std::string> free_names(const Graph& graph);
// The free names of a node's subgraphs, appended to `out` (once each).
void collect_subgraph_free_names(const Node& n, std::vector<std::string>& out);

// Calls fn on g, then on every graph nested in its nodes' attributes (If, Loop
// and Scan bodies, theirs in turn), outer before inner.
void for_each_graph(const Graph& g, const std::function<void(const Graph&)>& fn);

// Kahn's order of nodes 0..n-1 where deps[i] lists the nodes node i reads
// from: the lowest-numbered ready node first, so a valid order is kept as it
// is. Nodes on a cycle, and those after one, are left out.
std::vector<size_t> dependency_order(const std::vector<std::vector<size_t>>& deps);

// g's nodes (indices) ordered so that each follows those it reads from, what
// its subgraphs read included (a valid order is kept as it is); nodes on a
// cycle, and those after one, follow in their own order.
std::vector<size_t> topological_order(const Graph& g);

// A node on a cycle of g's nodes (through their inputs and what their subgraphs
// read), or null when the nodes can be ordered. Names no node of g produces come
// from outside and order nothing; nested graphs are not searched.
const Node* node_on_cycle(const Graph& g);

// Normalizes "ai.onnx" to "".
std::string canonical_domain(const std::string& domain);

// The dims [start, end) a Shape node reads from an input of rank `rank` (its
// opset-15 start / end attributes, negative ones from the end, clamped).
std::pair<int64_t, int64_t> shape_node_range(const Node& shape, int64_t rank);

// The output of a Shape or Size node whose input has the static shape `input`.
Tensor shape_node_value(const Node& node, const Shape& input);

}  // namespace onyx
