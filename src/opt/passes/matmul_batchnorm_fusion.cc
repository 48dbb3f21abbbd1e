// MatMul(A, W) [-> Reshape / Flatten to [rows, C]] -> BatchNormalization:
// LeViT's and other Linear + BatchNorm1d blocks normalise a linear layer's
// output over its last axis, in inference a per-column scale and shift. The
// scale is folded into the constant weights (in place: W has no other
// reader) and the BatchNormalization becomes the Add of the shift. The
// MatMul and the reshape stay where they are, so readers of the MatMul's
// output elsewhere (LeViT's reshape_as takes its Shape) keep their order.
#include "opt/passes/channel_affine.h"
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// Whether `reshape` (Reshape or Flatten) turns a [..., C] tensor into [rows, C].
bool keeps_last_axis_as_2d(const Node& reshape, const GraphView& view, int64_t C) {
  if (reshape.op_type == "Reshape") {
    const Tensor* shape = reshape.inputs.size() == 2 ? view.constant(reshape.inputs[1]) : nullptr;
    return shape && shape->numel() == 2 && shape->int_at(1) == C && read_int(reshape, "allowzero", 0) == 0;
  }
  const TypeInfo* t = view.type_of(reshape.outputs[0]);  // Flatten: its inferred 2-D output
  return t && t->has_shape && t->shape.size() == 2 && t->shape[1].value == C;
}

class MatMulBatchNormRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "BatchNormalization"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& bn = g.nodes[i];
    if (bn.outputs.size() != 1) return std::nullopt;
    int mi = view.producer(bn.inputs[0]);
    const Node* reshape = nullptr;
    if (const Node* r = mi >= 0 ? &g.nodes[mi] : nullptr;
        r && r->domain.empty() && (r->op_type == "Reshape" || r->op_type == "Flatten")) {
      reshape = r;
      mi = view.producer(r->inputs[0]);
    }
    const Node* matmul = node_of_type(g, mi, "MatMul");
    if (!matmul) return std::nullopt;
    const Tensor* w = view.constant(matmul->inputs[1]);
    if (!w || w->dtype() != DataType::Float || w->rank() != 2 || view.consumers(matmul->inputs[1]).size() != 1 ||
        view.is_graph_output(matmul->inputs[1]))
      return std::nullopt;
    const int64_t K = w->dim(0), C = w->dim(1);
    // The BatchNormalization's channels (axis 1 of its 2-D input) must be the MatMul's columns.
    if (reshape && !keeps_last_axis_as_2d(*reshape, view, C)) return std::nullopt;
    if (!reshape) {
      const TypeInfo* t = view.type_of(matmul->outputs[0]);
      if (!t || !t->has_shape || t->shape.size() != 2) return std::nullopt;
    }
    auto affine = batchnorm_affine(view, bn, C);
    if (!affine) return std::nullopt;
    Tensor scaled(DataType::Float, {K, C}), shift(DataType::Float, {C});
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c)
        scaled.data<float>()[k * C + c] = w->data<float>()[k * C + c] * affine->scale[c];
    std::copy(affine->shift.begin(), affine->shift.end(), shift.data<float>());
    const std::string shift_name = view.fresh_name(bn.outputs[0] + "_shift");
    Patch p;
    p.remove = {i};
    p.add = {make_node("Add", bn.name + "_shift", {bn.inputs[0], shift_name}, {bn.outputs[0]})};
    p.initializers = {{matmul->inputs[1], scaled}, {shift_name, shift}};
    p.fusion = "MatMul+BatchNormalization";
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_matmul_batchnorm_fusion() {
  return single_rule_pass<MatMulBatchNormRule>("matmul_batchnorm_fusion");
}

}  // namespace onyx
