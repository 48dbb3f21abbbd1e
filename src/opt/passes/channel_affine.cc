#include "opt/passes/channel_affine.h"

#include <algorithm>
#include <cmath>

#include "opt/rewrite.h"

namespace onyx {

std::optional<ChannelAffine> batchnorm_affine(const GraphView& view, const Node& bn, int64_t C) {
  if (bn.inputs.size() < 5) return std::nullopt;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (!bn.outputs[k].empty()) return std::nullopt;
  if (const Attribute* tm = bn.attr("training_mode"); tm && tm->i != 0) return std::nullopt;
  const Tensor* p[4];
  for (int k = 0; k < 4; ++k) {
    p[k] = view.constant(bn.inputs[k + 1]);
    if (!p[k] || p[k]->dtype() != DataType::Float || p[k]->numel() != C) return std::nullopt;
  }
  const Attribute* eps_attr = bn.attr("epsilon");
  const float eps = eps_attr ? eps_attr->f : 1e-5f;
  ChannelAffine r;
  for (int64_t c = 0; c < C; ++c) {
    float a = p[0]->data<float>()[c] / std::sqrt(p[3]->data<float>()[c] + eps);
    r.scale.push_back(a);
    r.shift.push_back(p[1]->data<float>()[c] - p[2]->data<float>()[c] * a);
  }
  return r;
}

// ConvNeXt's layer scale, per-channel biases.
std::optional<ChannelAffine> arithmetic_affine(const GraphView& view, const Node& n, const std::string& x, int64_t C) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  const bool x_first = n.inputs[0] == x;
  const Tensor* k = view.constant(n.inputs[x_first ? 1 : 0]);
  if (!k || k->dtype() != DataType::Float || k->rank() > 4) return std::nullopt;
  if (k->numel() != 1) {
    Shape dims(4 - k->rank(), 1);
    dims.insert(dims.end(), k->shape().begin(), k->shape().end());
    if (dims != Shape{1, C, 1, 1}) return std::nullopt;
  }
  ChannelAffine r{std::vector<float>(C, 1.0f), std::vector<float>(C, 0.0f)};
  for (int64_t c = 0; c < C; ++c) {
    float v = k->data<float>()[k->numel() == 1 ? 0 : c];
    if (n.op_type == "Mul")
      r.scale[c] = v;
    else if (n.op_type == "Add")
      r.shift[c] = v;
    else if (x_first)
      r.shift[c] = -v;  // x - v
    else
      r.scale[c] = -1.0f, r.shift[c] = v;  // v - x
  }
  return r;
}

ChannelAffine compose(const ChannelAffine& first, const ChannelAffine& second) {
  ChannelAffine r = second;
  for (size_t c = 0; c < r.scale.size(); ++c) {
    r.scale[c] = first.scale[c] * second.scale[c];
    r.shift[c] = first.shift[c] * second.scale[c] + second.shift[c];
  }
  return r;
}

std::optional<Node> conv_with_affine(const GraphView& view, const Node& conv, const ChannelAffine& a,
                                     const std::string& output, Patch& p) {
  const Tensor* w = view.constant(conv.inputs[1]);
  const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
  const Tensor* b = has_bias ? view.constant(conv.inputs[2]) : nullptr;
  const int64_t C = static_cast<int64_t>(a.scale.size());
  if (!w || w->dtype() != DataType::Float || w->rank() < 1 || w->dim(0) != C) return std::nullopt;
  if (has_bias && (!b || b->dtype() != DataType::Float || b->numel() != C)) return std::nullopt;
  Node fused = conv;
  fused.outputs = {output};
  const bool scales = std::any_of(a.scale.begin(), a.scale.end(), [](float v) { return v != 1.0f; });
  const bool shifts = std::any_of(a.shift.begin(), a.shift.end(), [](float v) { return v != 0.0f; });
  if (scales) {
    Tensor nw = w->clone();
    const int64_t per = w->numel() / C;
    for (int64_t c = 0; c < C; ++c)
      for (float *wc = nw.data<float>() + c * per, *end = wc + per; wc < end; ++wc) *wc *= a.scale[c];
    std::string wn = view.fresh_name(conv.inputs[1] + "_scaled");
    p.initializers.push_back({wn, nw});
    fused.inputs[1] = wn;
  }
  if (has_bias || shifts) {
    Tensor nb(DataType::Float, {C});
    for (int64_t c = 0; c < C; ++c) nb.data<float>()[c] = (b ? b->data<float>()[c] : 0.0f) * a.scale[c] + a.shift[c];
    std::string bn = view.fresh_name(output + "_conv_bias");
    p.initializers.push_back({bn, nb});
    fused.inputs.resize(3);
    fused.inputs[2] = bn;
  }
  return fused;
}

Node affine_as_depthwise(Graph& g, UniqueNames& names, const Node& origin, const std::string& x,
                         const ChannelAffine& a) {
  const int64_t C = static_cast<int64_t>(a.scale.size());
  Tensor w(DataType::Float, {C, 1, 1, 1}), b(DataType::Float, {C});
  std::copy(a.scale.begin(), a.scale.end(), w.data<float>());
  std::copy(a.shift.begin(), a.shift.end(), b.data<float>());
  std::string wn = names.make(origin.outputs[0] + "_dw_weight"), bn = names.make(origin.outputs[0] + "_dw_bias");
  for (auto& [name, t] : {std::pair{wn, w}, std::pair{bn, b}}) {
    g.initializers[name] = t;
    g.initializer_order.push_back(name);
  }
  Node conv;
  conv.name = origin.name;
  conv.op_type = "NchwcConv";
  conv.domain = kOnyxDomain;
  conv.inputs = {x, wn, bn};
  conv.outputs = {origin.outputs[0]};
  conv.attributes["group"] = int_attr(C);
  return conv;
}

}  // namespace onyx
