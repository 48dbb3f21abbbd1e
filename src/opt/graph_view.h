// Use-def information over a graph, rebuilt by passes when they need it:
// who produces a value, who reads it, and which values must keep their names
// (graph inputs and outputs, values read by subgraphs).
#pragma once
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace onyx {

class GraphView {
 public:
  explicit GraphView(const Graph& g);
  GraphView(const GraphView&) = delete;  // types_ points into this view's own storage
  GraphView& operator=(const GraphView&) = delete;
  // Index of the node producing `value`, or -1 (graph input, initializer, outer scope).
  int producer(const std::string& value) const;
  // Indices of the nodes reading `value` (explicitly or through a subgraph).
  const std::vector<int>& consumers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const { return graph_outputs_.count(value) != 0; }
  // A constant: an initializer that is not also a graph input.
  const Tensor* constant(const std::string& value) const;
  // The value's only reader when it has exactly one and is not a graph output.
  int single_consumer(const std::string& value) const;
  // The declared or inferred type (graph inputs, value_infos, initializers), or null.
  const TypeInfo* type_of(const std::string& value) const;
  // The value's shape when every dim is known.
  std::optional<Shape> static_shape(const std::string& value) const;
  // A value name the graph does not use yet (base, or base_1, base_2, ...),
  // without collecting every name as unique_name does.
  std::string fresh_name(const std::string& base) const;

 private:
  const Graph& g_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::unordered_set<std::string> graph_outputs_, graph_inputs_;
  std::unordered_map<std::string, const TypeInfo*> types_;  // into the graph, or initializer_types_
  std::deque<TypeInfo> initializer_types_;
  std::vector<int> none_;
};

// Replaces every read of `from` by `to` in the graph's nodes (and subgraphs).
void rename_uses(Graph& g, const std::string& from, const std::string& to);
// The same for every (from, to) pair of `renames`, in one pass.
void rename_uses(Graph& g, const std::unordered_map<std::string, std::string>& renames);

// Removes the nodes at the given indices.
void erase_nodes(Graph& g, std::vector<int> indices);

// A fresh value name, unique in the graph.
std::string unique_name(const Graph& g, const std::string& base);

// The same for a pass that makes many names: the graph's names are collected
// once, and each name made is taken.
class UniqueNames {
 public:
  explicit UniqueNames(const Graph& g);
  std::string make(const std::string& base);

 private:
  std::unordered_set<std::string> used_;
};

}  // namespace onyx
