// Local rewrites: a rule keyed by op type matches at one node (with early
// returns) and returns a Patch; it never mutates while matching. A RulePass
// sweeps the graph with one GraphView, takes every patch that touches nothing
// an earlier patch of the sweep touched, applies them together, and sweeps
// again until no rule matches: O(N) per sweep instead of per patch.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "opt/graph_view.h"
#include "opt/pass.h"

namespace onyx {

struct Patch {
  std::vector<int> remove;                                  // node indices
  std::vector<Node> add;                                    // inserted where the last removed node was
  std::vector<std::pair<std::string, std::string>> rename;  // reads of first become reads of second
  std::vector<std::pair<std::string, Tensor>> initializers; // new constants
  std::string fusion;                                       // counted in PassContext::fusion_counts when set
};

class RewriteRule {
 public:
  virtual ~RewriteRule() = default;
  virtual std::string op_type() const = 0;  // the cheap filter: only nodes of this type are offered
  virtual std::string domain() const { return ""; }  // ... and of this domain (ai.onnx by default)
  virtual std::optional<Patch> match(const Graph& g, const GraphView& view, int node, PassContext& ctx) const = 0;
};

class RulePass : public GraphPass {
 public:
  RulePass(std::string name, std::vector<std::unique_ptr<RewriteRule>> rules)
      : name_(std::move(name)), rules_(std::move(rules)) {}
  std::string name() const override { return name_; }
  bool run(Graph& g, PassContext& ctx) override;

 private:
  std::string name_;
  std::vector<std::unique_ptr<RewriteRule>> rules_;
};

void apply_patch(Graph& g, Patch patch, PassContext& ctx);

// The pass of a single rule with a default constructor, named `name`.
template <class Rule>
std::unique_ptr<GraphPass> single_rule_pass(std::string name) {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<Rule>());
  return std::make_unique<RulePass>(std::move(name), std::move(rules));
}

// Patches matched against one view of the graph, applied in one pass. A patch
// is refused when it shares a node with a patch already taken, or a value that
// either of them changes (drops, defines or redirects; reading one value is
// fine): it may have matched a neighbourhood that patch changes, so it waits
// for the next sweep and a fresh view.
class PatchBatch {
 public:
  explicit PatchBatch(const Graph& g) : g_(g) {}
  bool add(Patch p);  // false when refused
  bool takes_node(int index) const { return nodes_.count(index) != 0; }
  bool empty() const { return patches_.empty(); }
  void apply(Graph& g, PassContext& ctx);

 private:
  const Graph& g_;
  std::vector<Patch> patches_;
  std::unordered_set<std::string> writes_, reads_;
  std::unordered_set<int> nodes_;
};

// Matching helpers.
// The node at `index` if it has type `op` (domain ai.onnx), else null.
const Node* node_of_type(const Graph& g, int index, const std::string& op);
// The scalar value of a constant input, if it is a one-element constant.
std::optional<double> constant_scalar(const GraphView& view, const std::string& value);
// The axes a Reduce* node reduces (attribute, or constant input at opset 18+);
// nullopt when not given or not constant.
std::optional<std::vector<int64_t>> reduce_axes(const Node& n, const GraphView& view);
bool keeps_dims(const Node& n);  // a Reduce* node's keepdims (default 1)
// Whether the runtime has a kernel for op type `op` of `domain` (true when the
// context cannot tell); a pass that introduces such ops asks first.
bool kernel_exists(const PassContext& ctx, const std::string& op, const std::string& domain);
// An int attribute, or `def` when absent.
int64_t read_int(const Node& n, const char* name, int64_t def);
// An ints attribute, or `def` when absent or empty.
std::vector<int64_t> read_ints(const Node& n, const char* name, std::vector<int64_t> def);
// True when every value of an ints attribute is v (or it is absent).
bool ints_all(const Node& n, const char* name, int64_t v);
Node make_node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
               std::vector<std::string> outputs, const std::string& domain = "");
Attribute int_attr(int64_t v);
Attribute float_attr(float v);
Attribute string_attr(const std::string& v);
Attribute ints_attr(std::vector<int64_t> v);

}  // namespace onyx

namespace onyx {

// For a two-input node reading `value`, the other input ("" if it reads it on neither side).
std::string other_input(const Node& n, const std::string& value);
// True when `operand` of an elementwise node may broadcast up to the node's `result`: their
// ranks differ, a dim is known to differ, or the operand's is a known 1 and the result's
// not (a UNet's timestep embedding [N, C, 1, 1] added to a conv's output). Unknown
// shapes count as equal.
bool may_broadcast_up(const GraphView& view, const std::string& operand, const std::string& result);
// True when `value` is a one-element constant within `tol` of `expected`.
bool is_constant_near(const GraphView& view, const std::string& value, double expected, double tol = 1e-3);
// The node reading `value` when it is its only reader and has type `op`; -1 otherwise.
int sole_consumer_of_type(const Graph& g, const GraphView& view, const std::string& value, const std::string& op);
// Swish written out, x * Sigmoid(x) (SiLU in PyTorch exports): the nodes {Sigmoid, Mul} when
// they are x's only readers, else nothing.
std::optional<std::pair<int, int>> swish_of(const Graph& g, const GraphView& view, const std::string& x);
// x * Gate(x) as the only two readers of x: (the gate node of type `gate_op`,
// the Mul); e.g. HardSigmoid for the x * HardSigmoid(x) that spells HardSwish.
std::optional<std::pair<int, int>> self_gated(const Graph& g, const GraphView& view, const std::string& x,
                                              const std::string& gate_op);
// A Pad node's amounts [begin..., end...] when known at load time: its
// constant `pads` input, or before opset 11 its `pads` (`paddings` in opset 1)
// attribute; nullopt otherwise.
std::optional<std::vector<int64_t>> pad_amounts(const Node& pad, const GraphView& view, int64_t opset);
// A Slice node's parameters when known at load time: starts and ends, axes
// (default 0, 1, ...) and steps (default 1), as many of each; attributes
// before opset 10, constant integer inputs after; nullopt otherwise.
struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};
std::optional<SliceParams> slice_params(const Node& slice, const GraphView& view, int64_t opset);
// A Clip node's (min, max): attributes before opset 11, constant scalar inputs
// after (absent: the float range); nullopt when an input is not constant.
std::optional<std::pair<float, float>> clip_bounds(const Node& clip, const GraphView& view, int64_t opset);

}  // namespace onyx
