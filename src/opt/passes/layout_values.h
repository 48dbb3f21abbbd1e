// The bookkeeping the layout passes share (nchwc_layout, int8_channels_last):
// which values have a version in the pass's layout, and the original layout
// put back, under the original name, once, before the first reader that does
// not take the new layout and for graph outputs. The pass walks the nodes in
// order and hands each one, rewritten or not, to emit().
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "opt/graph_view.h"

namespace onyx {

template <class Info>  // Info::name: the value in the new layout
class LayoutValues {
 public:
  // The node writing `original` back from `moved.name`.
  using PutBack = std::function<Node(const Info& moved, const std::string& original)>;
  explicit LayoutValues(PutBack put_back) : put_back_(std::move(put_back)) {}

  bool has(const std::string& v) const { return !v.empty() && moved_.count(v) != 0; }
  Info& operator[](const std::string& v) { return moved_[v]; }
  // `original` is in the new layout as `info.name`; `original_exists`: it
  // was converted from a value that stays, so nothing is ever put back.
  void add(const std::string& original, Info info, bool original_exists = false) {
    moved_[original] = std::move(info);
    if (original_exists) put_back_done_.insert(original);
  }

  // A node the pass inserts as it is (a conversion into the new layout).
  void append(Node n) { out_.push_back(std::move(n)); }
  // Node `index` of the graph as the pass rewrote it; unless `converted`, it
  // reads the original layout, which is put back first for every value it
  // reads, directly or from its subgraphs.
  void emit(const GraphView& view, int index, Node n, bool converted) {
    if (converted) {
      changed_ = true;
    } else {
      for (auto& in : n.inputs) put_back(in);
      if (n.has_subgraphs())
        for (auto& [v, info] : moved_)
          for (int c : view.consumers(v))
            if (c == index) put_back(v);
    }
    out_.push_back(std::move(n));
  }
  // Installs the emitted nodes, graph outputs put back; false (graph left as
  // it was) when no node was converted.
  bool finish(Graph& g) {
    if (!changed_) return false;
    for (auto& o : g.outputs) put_back(o.name);
    g.nodes = std::move(out_);
    return true;
  }

 private:
  void put_back(const std::string& v) {
    auto it = moved_.find(v);
    if (it == moved_.end() || !put_back_done_.insert(v).second) return;
    out_.push_back(put_back_(it->second, v));
  }

  PutBack put_back_;
  std::map<std::string, Info> moved_;  // original name -> its version in the new layout
  std::set<std::string> put_back_done_;
  std::vector<Node> out_;
  bool changed_ = false;
};

}  // namespace onyx
