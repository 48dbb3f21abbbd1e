// Removal of nodes that compute nothing: Identity, inference-mode Dropout,
// Cast to the type a value already has, Transpose by the identity
// permutation, Pad by zeros, Slice of everything, arithmetic with a neutral constant (x + 0,
// x * 1, ...); and collapse of Reshape->Reshape and Transpose->Transpose
// chains.
#include <algorithm>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// Replaces the node's output by its first input, unless the output is a
// graph output (its name must survive).
std::optional<Patch> bypass(const GraphView& view, const Node& n, int index) {
  if (n.inputs.empty() || n.inputs[0].empty() || view.is_graph_output(n.outputs[0])) return std::nullopt;
  Patch p;
  p.remove = {index};
  p.rename = {{n.outputs[0], n.inputs[0]}};
  return p;
}

class IdentityRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Identity"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    return bypass(view, g.nodes[i], i);
  }
};

class DropoutRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Dropout"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    if (n.outputs.size() > 1 && !n.outputs[1].empty() &&
        (view.is_graph_output(n.outputs[1]) || !view.consumers(n.outputs[1]).empty()))
      return std::nullopt;  // the mask is used
    // Training mode drops nothing at ratio 0 (models exported in train mode
    // to avoid a fused-attention fast path carry these).
    std::optional<double> ratio;
    if (n.inputs.size() > 1 && !n.inputs[1].empty()) ratio = constant_scalar(view, n.inputs[1]);
    if (n.inputs.size() > 2 && !n.inputs[2].empty() && !(ratio && *ratio == 0)) {
      auto training = constant_scalar(view, n.inputs[2]);
      if (!training || *training != 0) return std::nullopt;
    }
    return bypass(view, n, i);
  }
};

class TransposeRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Transpose"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    const Attribute* perm = n.attr("perm");
    if (!perm) return std::nullopt;
    bool identity = true;
    for (size_t k = 0; k < perm->ints.size(); ++k) identity &= perm->ints[k] == static_cast<int64_t>(k);
    if (identity) return bypass(view, n, i);
    // Transpose(Transpose(x, p1), p2) == Transpose(x, p1[p2[k]])
    const Node* inner = node_of_type(g, view.producer(n.inputs[0]), "Transpose");
    if (!inner || !inner->attr("perm") || inner->attr("perm")->ints.size() != perm->ints.size()) return std::nullopt;
    const auto& p1 = inner->attr("perm")->ints;
    std::vector<int64_t> composed;
    for (int64_t k : perm->ints) composed.push_back(p1[k]);
    Node t = n;
    t.inputs[0] = inner->inputs[0];
    t.attributes["perm"] = ints_attr(composed);
    Patch p;
    p.remove = {i};
    p.add = {t};
    p.fusion = "Transpose+Transpose";
    return p;
  }
};

// Whether a Squeeze surely succeeds (each axis it names is known to be 1): skipped by a
// Reshape chain, one that would fail (PyTorch's squeeze of a dim of 16, a no-op there, as
// its dynamo exporter writes it) would run instead of being the error the spec asks for.
bool squeeze_succeeds(const Node& sq, const GraphView& view) {
  auto axes = reduce_axes(sq, view);
  if (!axes) return sq.inputs.size() < 2 || sq.inputs[1].empty();  // no axes: every 1 goes
  const TypeInfo* t = view.type_of(sq.inputs[0]);
  if (!t || !t->has_shape) return axes->empty();
  const int64_t rank = static_cast<int64_t>(t->shape.size());
  for (int64_t a : *axes) {
    if (a < -rank || a >= rank || t->shape[a < 0 ? a + rank : a].value != 1) return false;
  }
  return true;
}

class ReshapeRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Reshape"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    if (n.inputs.size() < 2) return std::nullopt;
    const Tensor* shape = view.constant(n.inputs[1]);
    if (!shape) return std::nullopt;
    // A target with 0 copies a dim from the input, which changes when the input changes.
    for (int64_t k = 0; k < shape->numel(); ++k)
      if (shape->int_at(k) == 0) return std::nullopt;
    int prod = view.producer(n.inputs[0]);
    const Node* inner = node_of_type(g, prod, "Reshape");
    if (!inner) inner = node_of_type(g, prod, "Flatten");
    if (!inner && (inner = node_of_type(g, prod, "Squeeze")) && !squeeze_succeeds(*inner, view)) return std::nullopt;
    if (!inner) inner = node_of_type(g, prod, "Unsqueeze");
    if (!inner || inner->inputs.empty()) return std::nullopt;
    Node r = n;
    r.inputs[0] = inner->inputs[0];
    Patch p;
    p.remove = {i};
    p.add = {r};
    p.fusion = "Reshape chain";
    return p;
  }
};

// Cast to the element type the value already has.
class CastRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Cast"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    const Attribute* to = n.attr("to");
    const TypeInfo* t = view.type_of(n.inputs[0]);
    if (!to || to->type != AttrType::Int || !t || t->kind != TypeInfo::Kind::Tensor) return std::nullopt;
    if (static_cast<int64_t>(t->elem_type) != to->i) return std::nullopt;
    return bypass(view, n, i);
  }
};

// Reshape (or Squeeze/Unsqueeze/Flatten) whose output shape equals its input's.
class NoOpReshapeRule final : public RewriteRule {
 public:
  explicit NoOpReshapeRule(std::string op) : op_(std::move(op)) {}
  std::string op_type() const override { return op_; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    auto in = view.static_shape(n.inputs[0]);
    auto out = view.static_shape(n.outputs[0]);
    if (!in || !out || *in != *out) return std::nullopt;
    return bypass(view, n, i);
  }

 private:
  std::string op_;
};

// Pad by zero everywhere (PyTorch exports one before some pools), in any mode.
class NoOpPadRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Pad"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& n = g.nodes[i];
    auto pads = pad_amounts(n, view, ctx.opset());
    if (!pads || pads->empty()) return std::nullopt;
    for (int64_t v : *pads)
      if (v != 0) return std::nullopt;
    return bypass(view, n, i);
  }
};

// Slice that keeps every element (GhostNet's cat([x1, x2])[:, :oup] when oup
// is the whole channel count): bypassing it keeps a blocked conv chain whole.
class NoOpSliceRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Slice"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& n = g.nodes[i];
    const TypeInfo* t = view.type_of(n.inputs[0]);
    if (!t || !t->has_shape || n.outputs.size() != 1) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(t->shape.size());
    auto sp = slice_params(n, view, ctx.opset());
    if (!sp) return std::nullopt;
    for (size_t k = 0; k < sp->starts.size(); ++k) {
      const int64_t axis = sp->axes[k] < 0 ? sp->axes[k] + rank : sp->axes[k];
      if (sp->steps[k] != 1 || axis < 0 || axis >= rank) return std::nullopt;
      if (!keeps_axis(sp->starts[k], sp->ends[k], t->shape[axis].value)) return std::nullopt;
    }
    auto p = bypass(view, n, i);
    if (p) p->fusion = "Slice of everything";
    return p;
  }

 private:
  // [start, end) with step 1 covers a dim of `dim` elements (-1: unknown).
  static bool keeps_axis(int64_t start, int64_t end, int64_t dim) {
    constexpr int64_t kOpenEnd = int64_t{1} << 31;  // exporters write INT_MAX or INT64_MAX for "to the end"
    if (dim < 0) return start == 0 && end >= kOpenEnd - 1;
    const int64_t s = std::clamp<int64_t>(start < 0 ? start + dim : start, 0, dim);
    const int64_t e = std::clamp<int64_t>(end < 0 ? end + dim : end, 0, dim);
    return s == 0 && e == dim;
  }
};

// x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 with a constant whose broadcast
// leaves x's shape as it is (HGNetV2's learnable affine blocks start as
// * 1 + 0). Adding +0 turns -0 into +0, a difference no consumer sees.
class NeutralOperandRule final : public RewriteRule {
 public:
  explicit NeutralOperandRule(std::string op) : op_(std::move(op)) {}
  std::string op_type() const override { return op_; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    if (n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
    const double neutral = op_ == "Mul" || op_ == "Div" ? 1.0 : 0.0;
    const bool commutes = op_ == "Add" || op_ == "Mul";
    for (int k : {1, 0}) {
      if (k == 0 && !commutes) break;
      const std::string& x = n.inputs[1 - k];
      if (all_equal(view.constant(n.inputs[k]), neutral) && keeps_shape(view, x, *view.constant(n.inputs[k]))) {
        Node kept = n;
        kept.inputs = {x};
        auto p = bypass(view, kept, i);
        if (p) p->fusion = op_ + " by a neutral constant";
        return p;
      }
    }
    return std::nullopt;
  }

 private:
  static bool all_equal(const Tensor* t, double v) {
    if (!t || !(dtype_is_float(t->dtype()) || dtype_is_int(t->dtype())) || t->numel() > 4096) return false;
    for (int64_t e = 0; e < t->numel(); ++e)
      if (t->float_at(e) != v) return false;
    return true;
  }
  // Whether broadcasting x against c gives x's shape and element type.
  static bool keeps_shape(const GraphView& view, const std::string& x, const Tensor& c) {
    const TypeInfo* t = view.type_of(x);
    if (!t || t->kind != TypeInfo::Kind::Tensor || t->elem_type != c.dtype()) return false;
    if (c.rank() == 0) return true;
    if (!t->has_shape || t->shape.size() < static_cast<size_t>(c.rank())) return false;
    for (int d = 1; d <= c.rank(); ++d) {
      const int64_t cd = c.dim(-d), xd = t->shape[t->shape.size() - d].value;
      if (cd != 1 && cd != xd) return false;
    }
    return true;
  }
  std::string op_;
};

}  // namespace

std::unique_ptr<GraphPass> make_redundant_node_elimination() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<DropoutRule>());
  rules.push_back(std::make_unique<TransposeRule>());
  rules.push_back(std::make_unique<ReshapeRule>());
  rules.push_back(std::make_unique<CastRule>());
  rules.push_back(std::make_unique<NoOpPadRule>());
  rules.push_back(std::make_unique<NoOpSliceRule>());
  for (const char* op : {"Reshape", "Squeeze", "Unsqueeze", "Flatten"}) rules.push_back(std::make_unique<NoOpReshapeRule>(op));
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) rules.push_back(std::make_unique<NeutralOperandRule>(op));
  return std::make_unique<RulePass>("redundant_node_elimination", std::move(rules));
}

// Identity is common enough to get its own pass (and a name to disable it by).
std::unique_ptr<GraphPass> make_identity_elimination() {
  return single_rule_pass<IdentityRule>("identity_elimination");
}

}  // namespace onyx
