// Graph optimization passes. A pass looks at a graph and rewrites it,
// returning whether anything changed; the pass manager repeats a level's
// passes until none changes anything, verifying the graph after each one.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "onyx/session.h"

namespace onyx {

// Domain of the fused ops Onyx introduces (documented in docs/fused_ops.md).
inline const std::string kOnyxDomain = "com.onyx";
// ONNX Runtime's contrib ops, which qdq_fusion emits where kernels exist.
inline const std::string kMicrosoftDomain = "com.microsoft";

struct PassContext {
  const Model* model = nullptr;
  // Runs one node on constant inputs (used by constant folding); provided by
  // the runtime so this layer needs no kernels. Returns nothing when the node
  // cannot be evaluated.
  std::function<std::optional<std::vector<Tensor>>(const Node&, const std::vector<Tensor>&)> evaluate;
  // Whether a kernel exists for a node (fusions only emit ops that can run).
  std::function<bool(const Node&)> can_run;
  std::map<std::string, int> fusion_counts;  // "Conv+BatchNormalization" -> times it fired
  int64_t opset() const { return model ? model->opset("") : 0; }
};

class GraphPass {
 public:
  virtual ~GraphPass() = default;
  virtual std::string name() const = 0;
  virtual bool run(Graph& graph, PassContext& ctx) = 0;
};

struct PassTiming {
  std::string name;
  double ms = 0;
  int changed = 0;  // how many runs changed the graph
};

// Runs the passes of `level` (minus `disabled`) to a fixed point.
// `outer`: for a subgraph, the names it reads from enclosing scopes (defined for it).
std::vector<PassTiming> optimize_graph(Graph& graph, OptimizationLevel level, PassContext& ctx,
                                       const std::set<std::string>& disabled,
                                       const std::unordered_set<std::string>& outer = {});

// The same passes on every subgraph (If branches, Loop and Scan bodies, nested ones too),
// after the graph's own. The constants of enclosing scopes a subgraph reads are given to it
// as its own initializers (sharing their data), so folding, fusions and the kernels' weight
// packing treat them as constants; enclosing initializers no graph reads any more are dropped.
// Their passes' times and changes are added to `timings` (optimize_graph's, for the graph).
void optimize_subgraphs(Graph& graph, OptimizationLevel level, PassContext& ctx, const std::set<std::string>& disabled,
                        std::vector<PassTiming>& timings);

// The pass names of each level, in order (the one place the order lives).
std::vector<std::unique_ptr<GraphPass>> passes_for_level(OptimizationLevel level);

// Checks the graph is well formed (every input defined, each value defined
// once); throws InvalidGraph naming the pass that broke it.
void verify_graph(const Graph& graph, const std::string& after_pass, const std::unordered_set<std::string>& outer = {});

}  // namespace onyx
