// Add(Conv(x, W1, b1), Conv(x, W2, b2)) -> Conv(x, W1 + W2, b1 + b2): the sum of
// convolutions of one input with the same stride, dilation and groups is one
// convolution whose kernel covers both, the smaller one's taps placed where
// its padding puts them (a 1x1 at the centre of a 3x3, ACNet's 1x3 and 3x1).
// Train-time multi-branch blocks (MobileOne, RepVGG, DBB exported without
// reparameterization) sum 3-6 such branches per layer; repeated, the rule
// folds them all into one conv.
#include <algorithm>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// One branch: its conv, weights, bias and pads.
struct Branch {
  const Node* conv;
  const Tensor* w;
  const Tensor* b;  // null: no bias
  std::vector<int64_t> pads;
};

// The merged conv's kernel size and pads per spatial dim, and each branch's
// offset in it; nullopt when the branches do not cover the same outputs.
struct Layout {
  std::vector<int64_t> kernel, pads, offset[2];
};

std::optional<Layout> merged_layout(const Branch (&br)[2], const std::vector<int64_t>& dil) {
  const size_t nd = dil.size();
  Layout l;
  l.pads.assign(2 * nd, 0);
  for (size_t d = 0; d < nd; ++d) {
    int64_t k[2], pb[2], pe[2];
    for (int i = 0; i < 2; ++i) {
      k[i] = br[i].w->dim(static_cast<int>(d) + 2);
      pb[i] = br[i].pads[d];
      pe[i] = br[i].pads[nd + d];
    }
    // Same output length for any input length, and taps on one grid.
    if (pb[0] + pe[0] - dil[d] * (k[0] - 1) != pb[1] + pe[1] - dil[d] * (k[1] - 1)) return std::nullopt;
    if ((pb[0] - pb[1]) % dil[d] != 0) return std::nullopt;
    const int64_t begin = std::max(pb[0], pb[1]);
    const int64_t last = std::max(dil[d] * (k[0] - 1) - pb[0], dil[d] * (k[1] - 1) - pb[1]);  // from o * s
    const int64_t K = (last + begin) / dil[d] + 1;
    l.kernel.push_back(K);
    l.pads[d] = begin;
    l.pads[nd + d] = pe[0] + dil[d] * (K - k[0]) - (begin - pb[0]);
    if (l.pads[nd + d] < 0) return std::nullopt;
    for (int i = 0; i < 2; ++i) l.offset[i].push_back((begin - pb[i]) / dil[d]);
  }
  return l;
}

// W1 and W2 added into a kernel of the layout's size, each at its offset.
Tensor merged_weights(const Branch (&br)[2], const Layout& l) {
  const int64_t M = br[0].w->dim(0), Cg = br[0].w->dim(1);
  Shape shape{M, Cg};
  shape.insert(shape.end(), l.kernel.begin(), l.kernel.end());
  Tensor w = Tensor::zeros(DataType::Float, shape);
  const size_t nd = l.kernel.size();
  const int64_t merged_taps = w.numel() / (M * Cg);
  for (int i = 0; i < 2; ++i) {
    const Tensor& src = *br[i].w;
    const int64_t taps = src.numel() / (M * Cg);
    std::vector<int64_t> target(static_cast<size_t>(taps));  // each tap's index in the merged kernel
    for (int64_t t = 0; t < taps; ++t) {
      int64_t rest = t, at = 0;
      for (size_t d = nd; d-- > 0;) {
        const int64_t k = src.dim(static_cast<int>(d) + 2);
        int64_t stride = 1;
        for (size_t e = d + 1; e < nd; ++e) stride *= l.kernel[e];
        at += (rest % k + l.offset[i][d]) * stride;
        rest /= k;
      }
      target[t] = at;
    }
    const float* from = src.data<float>();
    float* to = w.data<float>();
    for (int64_t mc = 0; mc < M * Cg; ++mc)
      for (int64_t t = 0; t < taps; ++t) to[mc * merged_taps + target[t]] += from[mc * taps + t];
  }
  return w;
}

class ParallelConvRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Add"; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& add = g.nodes[i];
    if (add.inputs.size() != 2 || add.inputs[0] == add.inputs[1]) return std::nullopt;
    Branch br[2];
    int at[2];
    for (int k = 0; k < 2; ++k) {
      at[k] = view.producer(add.inputs[k]);
      const Node* conv = node_of_type(g, at[k], "Conv");
      if (!conv || conv->inputs.size() < 2 || view.single_consumer(conv->outputs[0]) != i) return std::nullopt;
      if (const Attribute* ap = conv->attr("auto_pad"); ap && ap->s != "NOTSET") return std::nullopt;
      const Tensor* w = view.constant(conv->inputs[1]);
      const bool has_bias = conv->inputs.size() > 2 && !conv->inputs[2].empty();
      const Tensor* b = has_bias ? view.constant(conv->inputs[2]) : nullptr;
      if (!w || w->dtype() != DataType::Float || w->rank() < 3 || (has_bias && (!b || b->dtype() != DataType::Float)))
        return std::nullopt;
      br[k] = {conv, w, b, read_ints(*conv, "pads", std::vector<int64_t>(2 * (w->rank() - 2), 0))};
    }
    const Node &c0 = *br[0].conv, &c1 = *br[1].conv;
    const size_t nd = static_cast<size_t>(br[0].w->rank() - 2);
    if (c0.inputs[0] != c1.inputs[0] || br[1].w->rank() != br[0].w->rank() || br[0].w->dim(0) != br[1].w->dim(0) ||
        br[0].w->dim(1) != br[1].w->dim(1) || read_int(c0, "group", 1) != read_int(c1, "group", 1))
      return std::nullopt;
    const std::vector<int64_t> ones(nd, 1), dil = read_ints(c0, "dilations", ones);
    if (read_ints(c0, "strides", ones) != read_ints(c1, "strides", ones) || dil != read_ints(c1, "dilations", ones) ||
        dil.size() != nd || br[0].pads.size() != 2 * nd || br[1].pads.size() != 2 * nd)
      return std::nullopt;
    auto layout = merged_layout(br, dil);
    if (!layout) return std::nullopt;
    Patch p;
    Node merged = c0;
    merged.outputs = {add.outputs[0]};
    merged.attributes.erase("kernel_shape");
    merged.attributes["pads"] = ints_attr(layout->pads);
    const std::string wn = view.fresh_name(c0.inputs[1] + "_branches");
    p.initializers.push_back({wn, merged_weights(br, *layout)});
    merged.inputs.resize(2);
    merged.inputs[1] = wn;
    if (br[0].b || br[1].b) {
      const int64_t M = br[0].w->dim(0);
      Tensor bias = Tensor::zeros(DataType::Float, {M});
      for (const Branch& b : br)
        for (int64_t m = 0; b.b && m < M; ++m) bias.data<float>()[m] += b.b->data<float>()[m];
      const std::string bn = view.fresh_name(add.outputs[0] + "_branch_bias");
      p.initializers.push_back({bn, bias});
      merged.inputs.push_back(bn);
    }
    p.remove = {at[0], at[1], i};
    p.add = {merged};
    p.fusion = "Conv+Conv summed";
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_parallel_conv_merge() {
  return single_rule_pass<ParallelConvRule>("parallel_conv_merge");
}

}  // namespace onyx
