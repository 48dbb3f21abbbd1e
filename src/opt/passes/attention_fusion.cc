// Multi-head self-attention -> com.onyx Attention(x, Wqkv, bqkv[, mask]):
//   q/k/v = x @ W + b, reshaped to [B,S,H,D] and transposed to heads-first;
//   p = Softmax(q @ k^T * scale [+ mask]); out = (p @ v) back to [B,S,H*D].
// Matched from the Softmax outwards by meaning: scaling by Div or Mul, the
// key transposed by one [0,2,3,1] Transpose, bias on either side of the Add.
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

bool perm_is(const Node* t, std::vector<int64_t> perm) {
  const Attribute* a = t ? t->attr("perm") : nullptr;
  return a && a->ints == perm;
}

struct Projection {
  std::string x;
  const Tensor* w = nullptr;
  const Tensor* b = nullptr;
  int64_t heads = 0, head_dim = 0;
  std::vector<int> nodes;  // MatMul, Add, Reshape, Transpose
};

// The per-head dims of a Reshape's target [B,S,H,D]: a constant, or a Concat
// whose last two parts are constants.
std::optional<std::pair<int64_t, int64_t>> heads_of(const Graph& g, const GraphView& view, const std::string& shape) {
  if (const Tensor* t = view.constant(shape)) {
    if (t->numel() != 4) return std::nullopt;
    return std::make_pair(t->int_at(2), t->int_at(3));
  }
  const Node* c = node_of_type(g, view.producer(shape), "Concat");
  if (!c || c->inputs.size() != 4) return std::nullopt;
  auto h = constant_scalar(view, c->inputs[2]), d = constant_scalar(view, c->inputs[3]);
  if (!h || !d) return std::nullopt;
  return std::make_pair(static_cast<int64_t>(*h), static_cast<int64_t>(*d));
}

// value = Transpose(Reshape(x @ W + b, [B,S,H,D]), perm)
std::optional<Projection> match_projection(const Graph& g, const GraphView& view, const std::string& value,
                                           const std::vector<int64_t>& perm) {
  Projection p;
  int ti = view.producer(value);
  const Node* t = node_of_type(g, ti, "Transpose");
  if (!perm_is(t, perm) || view.consumers(value).size() != 1) return std::nullopt;
  int ri = view.producer(t->inputs[0]);
  const Node* r = node_of_type(g, ri, "Reshape");
  if (!r || view.single_consumer(r->outputs[0]) != ti) return std::nullopt;
  auto hd = heads_of(g, view, r->inputs[1]);
  if (!hd) return std::nullopt;
  int ai = view.producer(r->inputs[0]);
  const Node* add = node_of_type(g, ai, "Add");
  if (!add || view.single_consumer(add->outputs[0]) != ri) return std::nullopt;
  for (int s = 0; s < 2; ++s) {
    int mi = view.producer(add->inputs[s]);
    const Node* mm = node_of_type(g, mi, "MatMul");
    if (!mm || view.single_consumer(mm->outputs[0]) != ai) continue;
    p.w = view.constant(mm->inputs[1]);
    p.b = view.constant(add->inputs[1 - s]);
    if (!p.w || !p.b || p.w->rank() != 2 || p.w->dtype() != DataType::Float || p.b->dtype() != DataType::Float ||
        p.b->numel() != p.w->dim(1))
      return std::nullopt;
    p.x = mm->inputs[0];
    p.heads = hd->first;
    p.head_dim = hd->second;
    if (p.head_dim <= 0 && p.heads > 0) p.head_dim = p.w->dim(1) / p.heads;
    if (p.heads <= 0 && p.head_dim > 0) p.heads = p.w->dim(1) / p.head_dim;
    if (p.heads * p.head_dim != p.w->dim(1)) return std::nullopt;
    p.nodes = {mi, ai, ri, ti};
    return p;
  }
  return std::nullopt;
}

Tensor concat_columns(const std::vector<const Tensor*>& parts) {
  int64_t rows = parts[0]->dim(0), cols = 0;
  for (auto* p : parts) cols += p->dim(1);
  Tensor out(DataType::Float, {rows, cols});
  int64_t off = 0;
  for (auto* p : parts) {
    for (int64_t r = 0; r < rows; ++r)
      std::copy(p->data<float>() + r * p->dim(1), p->data<float>() + (r + 1) * p->dim(1),
                out.data<float>() + r * cols + off);
    off += p->dim(1);
  }
  return out;
}

Tensor concat_vectors(const std::vector<const Tensor*>& parts) {
  int64_t n = 0;
  for (auto* p : parts) n += p->numel();
  Tensor out(DataType::Float, {n});
  int64_t off = 0;
  for (auto* p : parts) {
    std::copy(p->data<float>(), p->data<float>() + p->numel(), out.data<float>() + off);
    off += p->numel();
  }
  return out;
}

class AttentionRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Softmax"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& sm = g.nodes[i];
    const Attribute* axis = sm.attr("axis");
    int64_t ax = axis ? axis->i : (ctx.opset() >= 13 ? -1 : 1);
    if (ax != -1 && ax != 3) return std::nullopt;
    std::vector<int> nodes = {i};
    // Optional additive mask.
    std::string scores = sm.inputs[0], mask;
    int mi = view.producer(scores);
    if (const Node* add = node_of_type(g, mi, "Add"); add && view.single_consumer(add->outputs[0]) == i) {
      for (int s = 0; s < 2 && mask.empty(); ++s) {
        const Node* p = g.nodes.data() + std::max(0, view.producer(add->inputs[s]));
        if (view.producer(add->inputs[s]) >= 0 && (p->op_type == "Div" || p->op_type == "Mul" || p->op_type == "MatMul")) {
          scores = add->inputs[s];
          mask = add->inputs[1 - s];
        }
      }
      if (mask.empty()) return std::nullopt;
      nodes.push_back(mi);
    }
    // Optional scaling.
    double scale = 1.0;
    int si = view.producer(scores);
    std::string qk = scores;
    if (const Node* s = g.nodes.data() + std::max(0, si); si >= 0 && s->domain.empty() &&
        (s->op_type == "Div" || s->op_type == "Mul") && view.single_consumer(scores) >= 0) {
      auto c = constant_scalar(view, s->inputs[1]);
      if (!c || *c == 0) return std::nullopt;
      scale = s->op_type == "Div" ? 1.0 / *c : *c;
      qk = s->inputs[0];
      nodes.push_back(si);
    }
    int qki = view.producer(qk);
    const Node* qkm = node_of_type(g, qki, "MatMul");
    if (!qkm || view.consumers(qk).size() != 1) return std::nullopt;
    nodes.push_back(qki);
    auto q = match_projection(g, view, qkm->inputs[0], {0, 2, 1, 3});
    auto k = match_projection(g, view, qkm->inputs[1], {0, 2, 3, 1});
    if (!q || !k) return std::nullopt;
    // Context: Softmax -> MatMul(p, v) -> Transpose(0,2,1,3) -> Reshape(3-D)
    int ci = sole_consumer_of_type(g, view, sm.outputs[0], "MatMul");
    if (ci < 0 || g.nodes[ci].inputs[0] != sm.outputs[0]) return std::nullopt;
    auto v = match_projection(g, view, g.nodes[ci].inputs[1], {0, 2, 1, 3});
    if (!v) return std::nullopt;
    int oti = sole_consumer_of_type(g, view, g.nodes[ci].outputs[0], "Transpose");
    if (oti < 0 || !perm_is(&g.nodes[oti], {0, 2, 1, 3})) return std::nullopt;
    int ori = sole_consumer_of_type(g, view, g.nodes[oti].outputs[0], "Reshape");
    if (ori < 0) return std::nullopt;
    // The fused op splits its packed projection in three equal parts.
    if (q->x != k->x || q->x != v->x || q->heads != k->heads || q->heads != v->heads ||
        q->head_dim != k->head_dim || q->head_dim != v->head_dim || q->w->dim(0) != k->w->dim(0) ||
        q->w->dim(0) != v->w->dim(0))
      return std::nullopt;
    for (auto* pr : {&*q, &*k, &*v}) nodes.insert(nodes.end(), pr->nodes.begin(), pr->nodes.end());
    nodes.insert(nodes.end(), {ci, oti, ori});
    Patch p;
    std::string w = view.fresh_name(sm.name + "_qkv_weight"), b = view.fresh_name(sm.name + "_qkv_bias");
    p.initializers = {{w, concat_columns({q->w, k->w, v->w})}, {b, concat_vectors({q->b, k->b, v->b})}};
    Node att = make_node("Attention", sm.name + "_attention", {q->x, w, b}, {g.nodes[ori].outputs[0]}, kOnyxDomain);
    if (!mask.empty()) att.inputs.push_back(mask);
    att.attributes["num_heads"] = int_attr(q->heads);
    att.attributes["scale"] = float_attr(static_cast<float>(scale));
    p.remove = nodes;
    p.add = {att};
    p.fusion = "Attention";
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_attention_fusion() {
  return single_rule_pass<AttentionRule>("attention_fusion");
}

}  // namespace onyx
