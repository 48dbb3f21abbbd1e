// MatMul(A, W) + Add(bias) -> com.onyx FusedMatMul(A, W, bias), for constant
// 2-D float weights W and a bias along W's last dim; a following Relu or
// Gelu (standard or com.onyx) is folded in as the activation.
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
    // Fold a following activation into the FusedMatMul.
    for (bool again = true; again;) {
      GraphView view(g);
      PatchBatch batch(g);
      for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
        const Node& mm = g.nodes[i];
        if (mm.op_type != "FusedMatMul" || mm.domain != kOnyxDomain || mm.attr("activation")) continue;
        int ai = view.single_consumer(mm.outputs[0]);
        if (ai < 0) continue;
        const Node& act = g.nodes[ai];
        bool relu = act.op_type == "Relu" && act.domain.empty();
        // FusedMatMul's output is float, so the standard Gelu (opset 20) is the float one too.
        bool gelu = act.op_type == "Gelu" && (act.domain == kOnyxDomain || act.domain.empty());
        if (!relu && !gelu) continue;
        Node fused = mm;
        fused.outputs = {act.outputs[0]};
        fused.attributes["activation"] = string_attr(gelu ? "Gelu" : "Relu");
        if (gelu && act.attr("approximate")) fused.attributes["approximate"] = *act.attr("approximate");
        Patch p;
        p.remove = {i, ai};
        p.add = {fused};
        p.fusion = gelu ? "MatMul+Add+Gelu" : "MatMul+Add+Relu";
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
