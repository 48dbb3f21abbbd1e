// MatMul(A, W) + Add(bias) -> com.onyx FusedMatMul(A, W, bias), for constant
// 2-D float weights W and a bias along W's last dim; a following Relu, Gelu
// (standard or com.onyx) or x * Sigmoid(x) is folded in as the activation,
// also after a MatMul without bias.
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

bool is_bias_for(const Tensor* bias, int64_t n) {
  if (!bias || bias->dtype() != DataType::Float || bias->numel() != n) return false;
  for (int d = 0; d + 1 < bias->rank(); ++d)
    if (bias->dim(d) != 1) return false;
  return bias->rank() >= 1;
}

// A MatMul whose B is a constant 2-D float matrix.
bool is_constant_weight_matmul(const Node& mm, const GraphView& view) {
  if (mm.op_type != "MatMul" || !mm.domain.empty() || mm.inputs.size() != 2) return false;
  const Tensor* w = view.constant(mm.inputs[1]);
  return w && w->dtype() == DataType::Float && w->rank() == 2;
}

// The activation a FusedMatMul applies in its GEMM epilogue, read after `value`: Relu, Gelu
// (standard or com.onyx) or x * Sigmoid(x); the nodes it replaces and its output.
struct EpilogueActivation {
  std::string name;
  std::vector<int> nodes;
  std::string output;
  const Attribute* approximate = nullptr;
};
std::optional<EpilogueActivation> activation_after(const Graph& g, const GraphView& view, const std::string& value) {
  if (auto swish = swish_of(g, view, value))
    return EpilogueActivation{"Swish", {swish->first, swish->second}, g.nodes[swish->second].outputs[0]};
  const int ai = view.single_consumer(value);
  if (ai < 0) return std::nullopt;
  const Node& act = g.nodes[ai];
  if (act.op_type == "Relu" && act.domain.empty()) return EpilogueActivation{"Relu", {ai}, act.outputs[0]};
  // FusedMatMul's output is float, so the standard Gelu (opset 20) is the float one too.
  if (act.op_type == "Gelu" && (act.domain == kOnyxDomain || act.domain.empty()))
    return EpilogueActivation{"Gelu", {ai}, act.outputs[0], act.attr("approximate")};
  return std::nullopt;
}

class MatMulAddRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Add"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& add = g.nodes[i];
    for (int side = 0; side < 2; ++side) {
      int mi = view.producer(add.inputs[side]);
      const Node* mm = node_of_type(g, mi, "MatMul");
      if (!mm || view.single_consumer(mm->outputs[0]) != i) continue;
      const Tensor* w = view.constant(mm->inputs[1]);
      if (!w || w->dtype() != DataType::Float || w->rank() != 2) continue;
      if (!is_bias_for(view.constant(add.inputs[1 - side]), w->dim(1))) continue;
      Node fused = make_node("FusedMatMul", mm->name, {mm->inputs[0], mm->inputs[1], add.inputs[1 - side]},
                             {add.outputs[0]}, kOnyxDomain);
      if (ctx.can_run && !ctx.can_run(fused)) return std::nullopt;
      Patch p;
      p.remove = {mi, i};
      p.add = {fused};
      p.fusion = "MatMul+Add";
      return p;
    }
    return std::nullopt;
  }
};

}  // namespace

class MatMulAddFusion final : public GraphPass {
 public:
  std::string name() const override { return "matmul_add_fusion"; }
  bool run(Graph& g, PassContext& ctx) override {
    std::vector<std::unique_ptr<RewriteRule>> rules;
    rules.push_back(std::make_unique<MatMulAddRule>());
    bool changed = RulePass("matmul_add", std::move(rules)).run(g, ctx);
    // Fold a following activation into the FusedMatMul, or into a bias-less MatMul with
    // constant weights, which becomes a FusedMatMul without bias (a Llama MLP's gate).
    for (bool again = true; again;) {
      GraphView view(g);
      PatchBatch batch(g);
      for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
        const Node& mm = g.nodes[i];
        const bool fused_mm = mm.op_type == "FusedMatMul" && mm.domain == kOnyxDomain && !mm.attr("activation");
        if (!fused_mm && !is_constant_weight_matmul(mm, view)) continue;
        auto act = activation_after(g, view, mm.outputs[0]);
        if (!act) continue;
        Node fused = fused_mm ? mm : make_node("FusedMatMul", mm.name, mm.inputs, {}, kOnyxDomain);
        fused.outputs = {act->output};
        fused.attributes["activation"] = string_attr(act->name);
        if (act->approximate) fused.attributes["approximate"] = *act->approximate;
        if (ctx.can_run && !ctx.can_run(fused)) continue;
        Patch p;
        p.remove = act->nodes;
        p.remove.insert(p.remove.begin(), i);
        p.add = {fused};
        p.fusion = (fused_mm ? "MatMul+Add+" : "MatMul+") + act->name;
        batch.add(std::move(p));
      }
      again = !batch.empty();
      batch.apply(g, ctx);
      changed |= again;
    }
    return changed;
  }
};

std::unique_ptr<GraphPass> make_matmul_add_fusion() { return std::make_unique<MatMulAddFusion>(); }

}  // namespace onyx
