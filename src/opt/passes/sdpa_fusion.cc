// Scaled dot-product attention as PyTorch's exporters write it out ->
// com.onyx ScaledDotProductAttention(Q, K^T, V[, mask]):
//   P = Softmax(MatMul(Q [* a], K^T [* b]) [* c | / c] [+ mask], last axis)
//   [P = Where(IsNaN(P), 0, P)]      (their guard for rows masked out entirely)
//   Y = MatMul(P, V)
// on 4-D heads-first Q [B, H, Sq, D], K^T [B, Hk, D, T], V [B, Hk, T, Dv]; the constant
// scalar factors a, b, c (the exporters split 1/sqrt(D) over Q and K) become one scale. A
// K^T made by a Transpose of K is read as K (key_transposed 0), and K / V repeated for
// grouped-query heads (repeat_kv) are read before the repeat.
// Every model both exporters make from transformers 5 (its SDPA attention) has this form;
// the whole-block pattern of attention_fusion (projections included) runs first.
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// Whether `value` may be an operand of the fused op: a float tensor of rank 2 or more, or of a
// rank not known (the exporters' Reshapes to computed shapes leave ranks unknown; the kernel
// checks them at run time).
bool may_be_operand(const GraphView& view, const std::string& value) {
  const TypeInfo* t = view.type_of(value);
  return t && t->kind == TypeInfo::Kind::Tensor && t->elem_type == DataType::Float &&
         (!t->has_shape || t->shape.size() >= 2);
}

// `value` = x * constant scalar (either side) when it is that Mul's only reader: x, the
// factor and the Mul's index; else `value` itself with factor 1.
struct Scaled {
  std::string x;
  double factor = 1.0;
  int node = -1;
};
Scaled unscale(const Graph& g, const GraphView& view, const std::string& value, int reader) {
  const int mi = view.producer(value);
  const Node* mul = node_of_type(g, mi, "Mul");
  if (mul && view.single_consumer(value) == reader && mul->inputs.size() == 2) {
    for (int side = 0; side < 2; ++side)
      if (auto c = constant_scalar(view, mul->inputs[side])) return {mul->inputs[1 - side], *c, mi};
  }
  return {value, 1.0, -1};
}

// Where(IsNaN(p), 0, p) after the Softmax output p, p's only readers: {IsNaN, Where}.
std::optional<std::pair<int, int>> nan_guard_of(const Graph& g, const GraphView& view, const std::string& p) {
  const std::vector<int>& readers = view.consumers(p);
  if (readers.size() != 2 || view.is_graph_output(p)) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const Node* isnan = node_of_type(g, readers[k], "IsNaN");
    const Node* where = node_of_type(g, readers[1 - k], "Where");
    if (!isnan || !where || where->inputs.size() != 3) continue;
    if (view.single_consumer(isnan->outputs[0]) != readers[1 - k] || where->inputs[0] != isnan->outputs[0] ||
        where->inputs[2] != p)
      continue;
    auto zero = constant_scalar(view, where->inputs[1]);
    if (!zero || *zero != 0.0) continue;
    return std::make_pair(readers[k], readers[1 - k]);
  }
  return std::nullopt;
}

// K when `kt` is Transpose(K) swapping the last two axes of a 3-D or 4-D K, read only by
// `reader` (the kernel then reads K as it is: a decoder step's Transpose of the whole KV
// cache, or of the encoder's keys, went away).
std::optional<std::string> untransposed_key(const Graph& g, const GraphView& view, const std::string& kt,
                                            int reader) {
  const int ti = view.producer(kt);
  const Node* tr = node_of_type(g, ti, "Transpose");
  if (!tr || view.single_consumer(kt) != reader) return std::nullopt;
  const Attribute* perm = tr->attr("perm");
  if (!perm) return std::nullopt;
  const std::vector<int64_t>& p = perm->ints;
  const bool swaps_last_two = (p == std::vector<int64_t>{0, 1, 3, 2}) || (p == std::vector<int64_t>{0, 2, 1});
  if (!swaps_last_two || !may_be_operand(view, tr->inputs[0])) return std::nullopt;
  return tr->inputs[0];
}

// Hugging Face's repeat_kv for grouped-query attention: `value` = Reshape(Expand(Unsqueeze(x,
// axes [2]), S), R), each read only by the next, x a 4-D [B, Hk, T, D] key or value cache:
// every KV head repeated for the query heads it serves, copied each step. The fused op reads
// x and gets S and R, with which the kernel checks at run time that this is that repeat.
struct RepeatedKv {
  std::string x, expand_shape, reshape_shape;
  std::vector<int> nodes;
};
std::optional<RepeatedKv> repeated_kv(const Graph& g, const GraphView& view, const std::string& value, int reader) {
  const int ri = view.producer(value);
  const Node* reshape = node_of_type(g, ri, "Reshape");
  if (!reshape || view.single_consumer(value) != reader || read_int(*reshape, "allowzero", 0) != 0) return std::nullopt;
  const int ei = view.producer(reshape->inputs[0]);
  const Node* expand = node_of_type(g, ei, "Expand");
  if (!expand || view.single_consumer(reshape->inputs[0]) != ri) return std::nullopt;
  const int ui = view.producer(expand->inputs[0]);
  const Node* unsqueeze = node_of_type(g, ui, "Unsqueeze");
  if (!unsqueeze || view.single_consumer(expand->inputs[0]) != ei) return std::nullopt;
  const std::optional<std::vector<int64_t>> axes = reduce_axes(*unsqueeze, view);
  const TypeInfo* t = view.type_of(unsqueeze->inputs[0]);
  if (!axes || *axes != std::vector<int64_t>{2} || !t || t->kind != TypeInfo::Kind::Tensor ||
      t->elem_type != DataType::Float || !t->has_shape || t->shape.size() != 4)
    return std::nullopt;
  return RepeatedKv{unsqueeze->inputs[0], expand->inputs[1], reshape->inputs[1], {ri, ei, ui}};
}

// Whether `value` is Q K^T, possibly scaled once: MatMul, or Mul / Div of one.
bool scores_chain(const Graph& g, const GraphView& view, const std::string& value) {
  const int pi = view.producer(value);
  if (node_of_type(g, pi, "MatMul")) return true;
  const Node* s = node_of_type(g, pi, "Mul") ? &g.nodes[pi] : node_of_type(g, pi, "Div");
  return s && node_of_type(g, view.producer(s->inputs[0]), "MatMul");
}

class SdpaRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Softmax"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& sm = g.nodes[i];
    const Attribute* axis = sm.attr("axis");
    const int64_t ax = axis ? axis->i : (ctx.opset() >= 13 ? -1 : 1);
    if (ax != -1 && ax != 3) return std::nullopt;
    std::vector<int> nodes = {i};
    // The probabilities' reader: MatMul(P, V), possibly behind the NaN guard.
    std::string probs = sm.outputs[0];
    bool zero_masked_rows = false;
    if (auto guard = nan_guard_of(g, view, probs)) {
      nodes.insert(nodes.end(), {guard->first, guard->second});
      probs = g.nodes[guard->second].outputs[0];
      zero_masked_rows = true;
    }
    const int pvi = sole_consumer_of_type(g, view, probs, "MatMul");
    if (pvi < 0 || g.nodes[pvi].inputs[0] != probs || !may_be_operand(view, g.nodes[pvi].inputs[1]))
      return std::nullopt;
    nodes.push_back(pvi);
    // Optional additive mask: the side that is not the scores' chain.
    std::string scores = sm.inputs[0], mask;
    const int ai = view.producer(scores);
    if (const Node* add = node_of_type(g, ai, "Add"); add && view.single_consumer(scores) == i) {
      for (int side = 0; side < 2 && mask.empty(); ++side) {
        if (!scores_chain(g, view, add->inputs[side])) continue;
        scores = add->inputs[side];
        mask = add->inputs[1 - side];
      }
      const TypeInfo* mt = mask.empty() ? nullptr : view.type_of(mask);
      if (!mt || mt->elem_type != DataType::Float || (mt->has_shape && mt->shape.size() > 4)) return std::nullopt;
      nodes.push_back(ai);
    }
    // Optional scaling of the scores, then Q K^T, each side possibly scaled.
    double scale = 1.0;
    const int si = view.producer(scores);
    const Node* sn = si >= 0 ? &g.nodes[si] : nullptr;
    if (sn && sn->domain.empty() && (sn->op_type == "Mul" || sn->op_type == "Div") &&
        view.single_consumer(scores) >= 0) {
      auto c = constant_scalar(view, sn->inputs[1]);
      if (!c || *c == 0) return std::nullopt;
      scale = sn->op_type == "Div" ? 1.0 / *c : *c;
      scores = sn->inputs[0];
      nodes.push_back(si);
    }
    const int qki = view.producer(scores);
    const Node* qk = node_of_type(g, qki, "MatMul");
    if (!qk || view.consumers(scores).size() != 1) return std::nullopt;
    nodes.push_back(qki);
    const Scaled q = unscale(g, view, qk->inputs[0], qki), kt = unscale(g, view, qk->inputs[1], qki);
    if (!may_be_operand(view, q.x) || !may_be_operand(view, kt.x)) return std::nullopt;
    for (int n : {q.node, kt.node})
      if (n >= 0) nodes.push_back(n);
    std::string key = kt.x;
    const std::optional<std::string> k = untransposed_key(g, view, kt.x, kt.node >= 0 ? kt.node : qki);
    if (k) {
      key = *k;
      nodes.push_back(view.producer(kt.x));
    }
    std::string value = g.nodes[pvi].inputs[1];
    // K and V before a grouped-query repeat (K only where its Transpose was fused too).
    const std::optional<RepeatedKv> k_rep = k ? repeated_kv(g, view, key, view.producer(kt.x)) : std::nullopt;
    const std::optional<RepeatedKv> v_rep = repeated_kv(g, view, value, pvi);
    for (const auto* rep : {&k_rep, &v_rep})
      if (*rep) nodes.insert(nodes.end(), (*rep)->nodes.begin(), (*rep)->nodes.end());
    if (k_rep) key = k_rep->x;
    if (v_rep) value = v_rep->x;
    Node att = make_node("ScaledDotProductAttention", sm.name + "_sdpa", {q.x, key, value},
                         {g.nodes[pvi].outputs[0]}, kOnyxDomain);
    if (k) att.attributes["key_transposed"] = int_attr(0);
    if (!mask.empty() || k_rep || v_rep) att.inputs.push_back(mask);
    if (k_rep || v_rep) {
      att.inputs.insert(att.inputs.end(), {k_rep ? k_rep->expand_shape : "", k_rep ? k_rep->reshape_shape : "",
                                           v_rep ? v_rep->expand_shape : "", v_rep ? v_rep->reshape_shape : ""});
    }
    att.attributes["scale"] = float_attr(static_cast<float>(scale * q.factor * kt.factor));
    att.attributes["zero_masked_rows"] = int_attr(zero_masked_rows ? 1 : 0);
    if (ctx.can_run && !ctx.can_run(att)) return std::nullopt;
    Patch p;
    p.remove = nodes;
    p.add = {att};
    p.fusion = std::string("ScaledDotProductAttention") + (k ? "+Transpose" : "") + (k_rep || v_rep ? "+RepeatKV" : "");
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_sdpa_fusion() { return single_rule_pass<SdpaRule>("sdpa_fusion"); }

}  // namespace onyx
