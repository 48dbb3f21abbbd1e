// 8-bit elementwise functions of one tensor become one table lookup (level
// extended). A quantized model spells HardSwish as QLinearMul(x, DQ ->
// HardSigmoid -> Q of x) and SiLU as QLinearMul(x, QLinearSigmoid(x)): every
// output code is a function of the input code at the same position, so the
// whole expression is com.onyx LookupTable(x, table), one byte read per value
// instead of two kernels and an intermediate tensor. Composed here: the
// byte functions LookupTable, QLinearSigmoid, QLinearLeakyRelu, and QLinearMul /
// QLinearAdd whose operands are x, a byte function of x, or a one-element
// constant. qdq_fusion makes the first LookupTables, from DQ -> float op -> Q.
#include "opt/passes/byte_table.h"
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

Tensor all_codes(DataType type) {
  Tensor codes(type, {256});
  for (int i = 0; i < 256; ++i) static_cast<uint8_t*>(codes.raw())[i] = static_cast<uint8_t>(i);
  return codes;
}

std::optional<Tensor> evaluate_table(PassContext& ctx, const Node& n, const std::vector<Tensor>& inputs) {
  if (!ctx.evaluate) return std::nullopt;
  auto out = ctx.evaluate(n, inputs);
  if (!out || out->empty() || (*out)[0].numel() != 256) return std::nullopt;
  const DataType t = (*out)[0].dtype();
  if (t != DataType::UInt8 && t != DataType::Int8) return std::nullopt;
  return (*out)[0].reshaped({256});
}

bool keeps_shape_of(const GraphView& view, const std::string& x, int64_t rank) {
  if (rank == 0) return true;
  const TypeInfo* t = view.type_of(x);
  return t && t->kind == TypeInfo::Kind::Tensor && t->has_shape && static_cast<int64_t>(t->shape.size()) >= rank;
}

Node lookup_table_node(const std::string& name, const std::string& x, const std::string& table,
                       const std::string& y) {
  return make_node("LookupTable", name, {x, table}, {y}, kOnyxDomain);
}

namespace {

// Which inputs of a byte function are 8-bit operands; the rest must be constants.
struct ByteOp {
  const char* op;
  const std::string& domain;
  std::vector<size_t> operands;
};

const std::vector<ByteOp>& byte_ops() {
  static const std::vector<ByteOp> ops = {
      {"LookupTable", kOnyxDomain, {0}},
      {"QLinearSigmoid", kMicrosoftDomain, {0}},
      {"QLinearLeakyRelu", kMicrosoftDomain, {0}},
      {"QLinearMul", kMicrosoftDomain, {0, 3}},
      {"QLinearAdd", kMicrosoftDomain, {0, 3}},
  };
  return ops;
}

const ByteOp* byte_op(const Node& n) {
  for (const ByteOp& b : byte_ops())
    if (n.op_type == b.op && n.domain == b.domain) return &b;
  return nullptr;
}

bool is_operand(const ByteOp& b, size_t k) {
  return std::find(b.operands.begin(), b.operands.end(), k) != b.operands.end();
}

// A byte function node as a function of its one non-constant operand: that operand (its
// root) and the inputs to evaluate it on, the root's slot left for the codes.
struct Tabulable {
  std::string root;
  std::vector<Tensor> inputs;
  std::vector<size_t> root_slots;
};

std::optional<Tabulable> as_function(const Node& n, const ByteOp& b, const GraphView& view) {
  Tabulable f;
  f.inputs.resize(n.inputs.size());
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const std::string& in = n.inputs[k];
    if (in.empty()) continue;
    if (const Tensor* c = view.constant(in)) {
      if (is_operand(b, k) && c->numel() != 1) return std::nullopt;
      f.inputs[k] = *c;
    } else if (!is_operand(b, k) || (!f.root.empty() && f.root != in)) {
      return std::nullopt;
    } else {
      f.root = in;
      f.root_slots.push_back(k);
    }
  }
  if (f.root.empty()) return std::nullopt;
  for (size_t k : b.operands)  // a one-element constant operand must not widen the result's rank
    if (k < n.inputs.size() && f.inputs[k].defined() && !keeps_shape_of(view, f.root, f.inputs[k].rank()))
      return std::nullopt;
  return f;
}

// The element type of the codes x: from shape inference, else from the zero
// point a reading QLinear op gives x (input k + 2 for operand k; a constant of
// x's type by the ops' definitions). libonnx types nothing past the first
// com.microsoft op of a QOperator model, so without this only a model's first
// SiLU became a table.
std::optional<DataType> code_type(const GraphView& view, const std::string& x, const std::vector<const Node*>& readers) {
  if (const TypeInfo* t = view.type_of(x); t && t->kind == TypeInfo::Kind::Tensor && t->elem_type != DataType::Undefined)
    return t->elem_type;
  for (const Node* r : readers) {
    const ByteOp* b = r ? byte_op(*r) : nullptr;
    if (!b || r->op_type == "LookupTable") continue;
    for (size_t k : b->operands)
      if (k + 2 < r->inputs.size() && r->inputs[k] == x)
        if (const Tensor* zp = view.constant(r->inputs[k + 2])) return zp->dtype();
  }
  return std::nullopt;
}

class ComposeRule final : public RewriteRule {
 public:
  explicit ComposeRule(const ByteOp& b) : b_(b) {}
  std::string op_type() const override { return b_.op; }
  std::string domain() const override { return b_.domain; }

  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& n = g.nodes[i];
    if (n.outputs.size() != 1 || n.outputs[0].empty()) return std::nullopt;
    // Each operand is x itself, a constant, or a byte function of x (`inner`).
    std::string x;
    std::vector<std::optional<Tabulable>> inner(n.inputs.size());
    std::vector<const Node*> inner_node(n.inputs.size(), nullptr);
    auto same_root = [&](const std::string& r) {
      if (x.empty()) x = r;
      return x == r;
    };
    for (size_t k : b_.operands) {
      if (k >= n.inputs.size() || n.inputs[k].empty()) return std::nullopt;
      const std::string& in = n.inputs[k];
      if (view.constant(in)) continue;
      const int p = view.producer(in);
      const ByteOp* pb = p >= 0 ? byte_op(g.nodes[p]) : nullptr;
      if (pb) inner[k] = as_function(g.nodes[p], *pb, view);
      if (inner[k] && !view.constant(inner[k]->root)) {
        inner_node[k] = &g.nodes[p];
        if (!same_root(inner[k]->root)) return std::nullopt;
      } else {
        inner[k].reset();
        if (!same_root(in)) return std::nullopt;
      }
    }
    auto self = as_function(n, b_, view);
    const bool composes = std::any_of(inner.begin(), inner.end(), [](auto& f) { return f.has_value(); });
    if (x.empty() || (!composes && (!self || n.op_type == "LookupTable"))) return std::nullopt;
    std::vector<const Node*> readers = inner_node;
    readers.push_back(&n);
    const std::optional<DataType> x_type = code_type(view, x, readers);
    if (!x_type || (*x_type != DataType::UInt8 && *x_type != DataType::Int8)) return std::nullopt;

    const Tensor codes = all_codes(*x_type);
    std::vector<Tensor> inputs(n.inputs.size());
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& in = n.inputs[k];
      if (in.empty()) continue;
      if (const Tensor* c = view.constant(in)) {
        if (is_operand(b_, k) && (c->numel() != 1 || !keeps_shape_of(view, x, c->rank()))) return std::nullopt;
        inputs[k] = *c;
      } else if (inner[k]) {
        std::vector<Tensor> in_inputs = inner[k]->inputs;
        for (size_t s : inner[k]->root_slots) in_inputs[s] = codes;
        auto t = evaluate_table(ctx, *inner_node[k], in_inputs);
        if (!t) return std::nullopt;
        inputs[k] = *t;
      } else if (is_operand(b_, k)) {
        inputs[k] = codes;
      } else {
        return std::nullopt;  // a non-constant parameter
      }
    }
    auto table = evaluate_table(ctx, n, inputs);
    if (!table) return std::nullopt;
    Node lookup = lookup_table_node(n.name, x, view.fresh_name(n.outputs[0] + "_table"), n.outputs[0]);
    if (ctx.can_run && !ctx.can_run(lookup)) return std::nullopt;
    Patch patch;
    patch.remove = {i};
    patch.initializers = {{lookup.inputs[1], *table}};
    patch.add = {std::move(lookup)};
    patch.fusion = n.op_type + " of one 8-bit tensor as LookupTable";
    return patch;
  }

 private:
  const ByteOp& b_;
};

}  // namespace

std::unique_ptr<GraphPass> make_lookup_table_fusion() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  for (const ByteOp& b : byte_ops()) rules.push_back(std::make_unique<ComposeRule>(b));
  return std::make_unique<RulePass>("lookup_table_fusion", std::move(rules));
}

}  // namespace onyx
