// QDQ node groups -> integer ops. A QDQ-format quantized model writes each
// quantized op as float: DequantizeLinear on its inputs, the float op, and
// QuantizeLinear on its output. Run as written, that is a float op plus two
// conversions; this pass replaces such a group by the integer op computing the
// same values (up to the usual requantization rounding): QLinearConv,
// QLinearMatMul, the float op itself on the integer tensor for ops that only
// move or compare values (MaxPool, Reshape, ...), and com.microsoft QLinear*
// ops where a kernel for them exists. Each form is one entry of `forms()`.
//
// A DequantizeLinear read by other nodes too is kept for them: the fused op
// reads its integer input directly (ResNet's residual values feed both a Conv
// and an Add through one DequantizeLinear).
#include <algorithm>
#include <cmath>
#include <limits>

#include "opt/passes/byte_table.h"
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// The constant scale and zero point of a QuantizeLinear or DequantizeLinear
// with an 8-bit integer type.
struct QuantParams {
  std::string scale_name, zero_point_name;
  const Tensor* scale = nullptr;
  const Tensor* zero_point = nullptr;
  int64_t axis = 1;  // the node's axis attribute (meaningful when per-channel)

  bool per_tensor() const { return scale->numel() == 1; }
  DataType type() const { return zero_point->dtype(); }
  // Whether `other` is the same per-tensor quantization.
  bool same_as(const QuantParams& other) const {
    return per_tensor() && other.per_tensor() && type() == other.type() &&
           scale->float_at(0) == other.scale->float_at(0) && zero_point->int_at(0) == other.zero_point->int_at(0);
  }
};

std::optional<QuantParams> quant_params(const Node& n, const GraphView& view) {
  if (n.inputs.size() < 3 || n.inputs[1].empty() || n.inputs[2].empty()) return std::nullopt;
  if (read_int(n, "block_size", 0) != 0) return std::nullopt;
  QuantParams p;
  p.scale_name = n.inputs[1];
  p.zero_point_name = n.inputs[2];
  p.scale = view.constant(p.scale_name);
  p.zero_point = view.constant(p.zero_point_name);
  p.axis = read_int(n, "axis", 1);
  if (!p.scale || !p.zero_point || p.scale->dtype() != DataType::Float || p.scale->rank() > 1) return std::nullopt;
  if (p.type() != DataType::UInt8 && p.type() != DataType::Int8) return std::nullopt;
  if (p.scale->numel() != p.zero_point->numel() || p.scale->numel() == 0) return std::nullopt;
  if (const Attribute* t = n.attr("output_dtype"); t && t->i != 0 && t->i != static_cast<int64_t>(p.type()))
    return std::nullopt;
  return p;
}

// A DequantizeLinear feeding a node: its index, integer input and parameters.
struct Dequantized {
  int node = -1;
  std::string input;
  QuantParams params;
};

std::optional<Dequantized> dequantized(const Graph& g, const GraphView& view, const std::string& value) {
  if (value.empty()) return std::nullopt;
  int d = view.producer(value);
  const Node* dq = node_of_type(g, d, "DequantizeLinear");
  if (!dq) return std::nullopt;
  auto p = quant_params(*dq, view);
  if (!p) return std::nullopt;
  return Dequantized{d, dq->inputs[0], *p};
}

// The per-tensor QuantizeLinear that is the only reader of `value`.
struct Requantized {
  int node = -1;
  std::string output;
  QuantParams params;
};

std::optional<Requantized> requantized(const Graph& g, const GraphView& view, const std::string& value) {
  int q = sole_consumer_of_type(g, view, value, "QuantizeLinear");
  if (q < 0) return std::nullopt;
  auto p = quant_params(g.nodes[q], view);
  if (!p || !p->per_tensor()) return std::nullopt;
  return Requantized{q, g.nodes[q].outputs[0], *p};
}

// The nodes a match replaces. A DequantizeLinear is removed only when the
// matched op is its only reader; otherwise it stays for the others.
class Group {
 public:
  Group(const Graph& g, const GraphView& view, int op) : g_(g), view_(view), op_(op) { remove.push_back(op); }
  void take(int node) {
    if (std::find(remove.begin(), remove.end(), node) == remove.end()) remove.push_back(node);
  }
  void take_dequantize(int dq) {
    const std::string& out = g_.nodes[dq].outputs[0];
    if (view_.is_graph_output(out)) return;
    for (int c : view_.consumers(out))
      if (c != op_) return;
    take(dq);
  }
  std::vector<int> remove;

 private:
  const Graph& g_;
  const GraphView& view_;
  int op_;
};

// Everything a form's builder gets.
struct Match {
  const Graph& g;
  const GraphView& view;
  int index;
  const Node& op;
  PassContext& ctx;
};

struct Form;
using Builder = std::optional<Patch> (*)(const Match&, const Form&);

// One fusable form: the float op, how to rewrite it, and for the generic
// builders which inputs are quantized and what integer op replaces it.
struct Form {
  std::string op;
  Builder build;
  std::vector<int> quantized_inputs = {0};  // {} means all inputs
  std::string integer_op = "";               // for the com.microsoft QLinear* forms
  int64_t min_opset = 0;                     // the float op accepts 8-bit types from this opset
};

std::vector<int> quantized_positions(const Node& op, const Form& form) {
  if (!form.quantized_inputs.empty()) return form.quantized_inputs;
  std::vector<int> all(op.inputs.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int>(k);
  return all;
}

std::optional<Patch> finish(const Match& m, Node fused, std::vector<int> remove, std::string fusion,
                            std::vector<std::pair<std::string, Tensor>> initializers = {}) {
  if (m.ctx.can_run && !m.ctx.can_run(fused)) return std::nullopt;
  Patch p;
  p.remove = std::move(remove);
  p.add = {std::move(fused)};
  p.fusion = std::move(fusion);
  p.initializers = std::move(initializers);
  return p;
}

// DQ -> op -> Q with one quantization throughout, for ops that only move,
// select or compare values: the op runs on the integer tensor unchanged.
std::optional<Patch> drop_qdq_pair(const Match& m, const Form& form) {
  if (m.ctx.opset() < form.min_opset) return std::nullopt;
  // Every output requantized alike (Split's parts; MaxPool's Indices never are).
  std::vector<Requantized> qs;
  for (const std::string& out : m.op.outputs) {
    auto q = out.empty() ? std::nullopt : requantized(m.g, m.view, out);
    if (!q || (!qs.empty() && !q->params.same_as(qs[0].params))) return std::nullopt;
    qs.push_back(*q);
  }
  if (qs.empty()) return std::nullopt;
  Group group(m.g, m.view, m.index);
  Node fused = m.op;
  for (int k : quantized_positions(m.op, form)) {
    if (k >= static_cast<int>(m.op.inputs.size())) return std::nullopt;
    auto dq = dequantized(m.g, m.view, m.op.inputs[k]);
    if (!dq || !dq->params.same_as(qs[0].params)) return std::nullopt;
    fused.inputs[k] = dq->input;
    group.take_dequantize(dq->node);
  }
  for (size_t k = 0; k < qs.size(); ++k) {
    fused.outputs[k] = qs[k].output;
    group.take(qs[k].node);
  }
  return finish(m, fused, group.remove, "DQ+" + m.op.op_type + "+Q");
}

// A Concat of 8-bit values: the pair dropped when every input is quantized as the output,
// else com.microsoft QLinearConcat(y_scale, y_zero_point, x, x_scale, x_zero_point, ...).
std::optional<Patch> concat(const Match& m, const Form& form) {
  if (auto p = drop_qdq_pair(m, form)) return p;
  if (m.op.outputs.size() != 1) return std::nullopt;
  auto q = requantized(m.g, m.view, m.op.outputs[0]);
  if (!q || !q->params.per_tensor()) return std::nullopt;
  Group group(m.g, m.view, m.index);
  std::vector<std::string> inputs = {q->params.scale_name, q->params.zero_point_name};
  for (const std::string& in : m.op.inputs) {
    auto dq = dequantized(m.g, m.view, in);
    if (!dq || !dq->params.per_tensor() || dq->params.type() != q->params.type()) return std::nullopt;
    inputs.insert(inputs.end(), {dq->input, dq->params.scale_name, dq->params.zero_point_name});
    group.take_dequantize(dq->node);
  }
  Node fused = make_node("QLinearConcat", m.op.name, inputs, {q->output}, kMicrosoftDomain);
  fused.attributes = m.op.attributes;
  group.take(q->node);
  return finish(m, fused, group.remove, "DQ+Concat+Q as QLinearConcat");
}

// DQ(x...) -> op -> Q => com.microsoft QLinear<op>(x, x_scale, x_zero_point,
// ..., y_scale, y_zero_point) with the op's attributes, per-tensor only.
std::optional<Patch> contrib_qlinear(const Match& m, const Form& form) {
  if (m.op.outputs.size() != 1) return std::nullopt;
  auto q = requantized(m.g, m.view, m.op.outputs[0]);
  if (!q) return std::nullopt;
  Group group(m.g, m.view, m.index);
  std::vector<std::string> inputs;
  for (int k : quantized_positions(m.op, form)) {
    if (k >= static_cast<int>(m.op.inputs.size())) return std::nullopt;
    auto dq = dequantized(m.g, m.view, m.op.inputs[k]);
    if (!dq || !dq->params.per_tensor() || dq->params.type() != q->params.type()) return std::nullopt;
    inputs.insert(inputs.end(), {dq->input, dq->params.scale_name, dq->params.zero_point_name});
    group.take_dequantize(dq->node);
  }
  inputs.insert(inputs.end(), {q->params.scale_name, q->params.zero_point_name});
  Node fused = make_node(form.integer_op, m.op.name, inputs, {q->output}, kMicrosoftDomain);
  fused.attributes = m.op.attributes;
  group.take(q->node);
  return finish(m, fused, group.remove, "DQ+" + m.op.op_type + "+Q");
}

bool is_elementwise_float_op(const Node& n);

// The channels a constant input of a tabulated op varies over along x's axis 1: 0 for one
// element (the same for every channel), C for BatchNormalization's [C] inputs or a constant
// [C, 1, ..., 1] aligned with axis 1, -1 for anything else.
int64_t constant_channels(const Node& op, size_t slot, const Tensor& c, const GraphView& view, const std::string& x) {
  const bool batch_norm = op.op_type == "BatchNormalization";
  if (batch_norm) return slot >= 1 && c.rank() == 1 ? c.numel() : -1;
  if (c.numel() == 1) return keeps_shape_of(view, x, c.rank()) ? 0 : -1;
  const TypeInfo* t = view.type_of(x);
  if (!t || !t->has_shape || t->shape.size() < 3 || c.rank() > static_cast<int>(t->shape.size())) return -1;
  const int axis = 1 - (static_cast<int>(t->shape.size()) - c.rank());  // axis 1 of x among c's dims
  if (axis < 0) return -1;
  for (int d = 0; d < c.rank(); ++d)
    if (d != axis && c.dim(d) != 1) return -1;
  return c.dim(axis);
}

// A constant input, or the DequantizeLinear of constants (a quantized BatchNormalization's
// parameters before constant folding runs), evaluated.
std::optional<Tensor> constant_or_dequantized_constant(const Match& m, const std::string& value) {
  if (const Tensor* c = m.view.constant(value)) return *c;
  const Node* dq = node_of_type(m.g, m.view.producer(value), "DequantizeLinear");
  if (!dq || !m.ctx.evaluate) return std::nullopt;
  std::vector<Tensor> in;
  for (const std::string& name : dq->inputs) {
    const Tensor* c = name.empty() ? nullptr : m.view.constant(name);
    if (!name.empty() && !c) return std::nullopt;
    in.push_back(c ? *c : Tensor());
  }
  auto out = m.ctx.evaluate(*dq, in);
  if (!out || out->empty()) return std::nullopt;
  return (*out)[0];
}

// The 256 codes of `type` for each of `channels` channels, shaped [1, C, 256, 1, ...] to x's
// `rank` (so per-channel constants broadcast along axis 1); [256] when channels is 0.
Tensor codes_per_channel(DataType type, int64_t channels, int64_t rank) {
  const Tensor codes = all_codes(type);
  if (channels == 0) return codes;
  Shape shape = {1, channels, 256};
  shape.resize(static_cast<size_t>(std::max<int64_t>(rank, 3)), 1);
  Tensor t(type, shape);
  for (int64_t c = 0; c < channels; ++c) std::copy_n(static_cast<const uint8_t*>(codes.raw()), 256,
                                                     static_cast<uint8_t*>(t.raw()) + c * 256);
  return t;
}

// DQ(x) -> a chain of elementwise float ops -> Q, per tensor, each op's other inputs constants
// of one element or one value per channel (BatchNormalization, a [C, 1, 1] scale): each output
// code is a function of one input code (and its channel), so the group is com.onyx
// LookupTable(x, table) with a [256] or per-channel [C, 256] table, computed by running the
// group's own nodes on x's codes (byte_table.h). DenseNet's pre-activation BatchNormalization,
// MobileNetV3's HardSigmoid.
std::optional<Patch> tabulate(const Match& m, const Form&) {
  constexpr int kMaxChain = 4;
  std::vector<int> chain = {m.index};
  std::optional<Requantized> q;
  for (int cur = m.index; !q;) {
    const Node& n = m.g.nodes[cur];
    if (n.outputs.size() != 1 || n.outputs[0].empty()) return std::nullopt;
    q = requantized(m.g, m.view, n.outputs[0]);
    if (q) break;
    cur = m.view.single_consumer(n.outputs[0]);
    if (cur < 0 || static_cast<int>(chain.size()) == kMaxChain || !is_elementwise_float_op(m.g.nodes[cur]))
      return std::nullopt;
    chain.push_back(cur);
  }
  // The first op reads x through its DequantizeLinear; every later one the op before it.
  std::optional<Dequantized> x;
  std::vector<std::vector<Tensor>> inputs(chain.size());
  std::vector<int> slots(chain.size(), -1);
  int64_t channels = 0;
  for (size_t s = 0; s < chain.size(); ++s) {
    const Node& n = m.g.nodes[chain[s]];
    inputs[s].resize(n.inputs.size());
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& in = n.inputs[k];
      if (in.empty()) continue;
      if (s > 0 && in == m.g.nodes[chain[s - 1]].outputs[0] && slots[s] < 0) {
        slots[s] = static_cast<int>(k);
      } else if (auto c = constant_or_dequantized_constant(m, in)) {
        inputs[s][k] = *c;
      } else if (auto dq = s == 0 && !x ? dequantized(m.g, m.view, in) : std::nullopt;
                 dq && dq->params.per_tensor() && !m.view.constant(dq->input)) {
        x = dq;
        slots[s] = static_cast<int>(k);
      } else {
        return std::nullopt;
      }
    }
    if (slots[s] < 0 || !x) return std::nullopt;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (!inputs[s][k].defined()) continue;
      const int64_t c = constant_channels(n, k, inputs[s][k], m.view, x->input);
      if (c < 0 || (c > 0 && channels > 0 && c != channels)) return std::nullopt;
      channels = std::max(channels, c);
    }
  }
  // Per-channel codes need x's rank where a constant [C, 1, ..] broadcasts against them
  // (constant_channels only accepts those when it is known); BatchNormalization's take any.
  const TypeInfo* xt = m.view.type_of(x->input);
  const int64_t rank = xt && xt->has_shape ? static_cast<int64_t>(xt->shape.size()) : 3;
  if (!m.ctx.evaluate) return std::nullopt;
  auto values = m.ctx.evaluate(m.g.nodes[x->node], {codes_per_channel(x->params.type(), channels, rank),
                                                    *x->params.scale, *x->params.zero_point});
  for (size_t s = 0; s < chain.size() && values && !values->empty(); ++s) {
    inputs[s][slots[s]] = (*values)[0];
    values = m.ctx.evaluate(m.g.nodes[chain[s]], inputs[s]);
  }
  if (!values || values->empty()) return std::nullopt;
  auto out = m.ctx.evaluate(m.g.nodes[q->node], {(*values)[0], *q->params.scale, *q->params.zero_point});
  const int64_t tables = std::max<int64_t>(channels, 1);
  if (!out || out->empty() || (*out)[0].numel() != tables * 256 || dtype_size((*out)[0].dtype()) != 1)
    return std::nullopt;
  const Tensor table = (*out)[0].reshaped(channels > 0 ? Shape{channels, 256} : Shape{256});
  Group group(m.g, m.view, m.index);
  group.take_dequantize(x->node);
  for (int n : chain) group.take(n);
  group.take(q->node);
  const std::string table_name = m.view.fresh_name(q->output + "_table");
  Node lookup = lookup_table_node(m.op.name, x->input, table_name, q->output);
  if (channels > 0) lookup.attributes["axis"] = int_attr(1);
  std::string fusion = "DQ+";
  for (int n : chain) fusion += m.g.nodes[n].op_type + "+";
  return finish(m, lookup, group.remove, fusion + "Q as LookupTable", {{table_name, table}});
}

// A binary op as the com.microsoft QLinear op, or with a one-element constant as a table.
std::optional<Patch> qlinear_or_table(const Match& m, const Form& form) {
  if (auto p = contrib_qlinear(m, form)) return p;
  return tabulate(m, form);
}

// A constant weight behind a DequantizeLinear, quantized per tensor or per
// channel along `channel_axis` (of `channels` values).
std::optional<Dequantized> constant_weight(const Match& m, const std::string& value, int channel_axis) {
  auto w = dequantized(m.g, m.view, value);
  if (!w) return std::nullopt;
  const Tensor* t = m.view.constant(w->input);
  if (!t || t->dtype() != w->params.type()) return std::nullopt;
  if (w->params.per_tensor()) return w;
  int64_t axis = w->params.axis < 0 ? w->params.axis + t->rank() : w->params.axis;
  if (axis != channel_axis || t->dim(channel_axis) != w->params.scale->numel()) return std::nullopt;
  return w;
}

// A bias of `channels` float values: a float constant, or a constant int32
// behind a DequantizeLinear (whose node is returned in `dq`).
std::optional<std::vector<double>> bias_values(const Match& m, const std::string& value, int64_t channels, int* dq) {
  *dq = -1;
  if (const Tensor* b = m.view.constant(value)) {
    if (b->dtype() != DataType::Float || b->numel() != channels || b->rank() != 1) return std::nullopt;
    std::vector<double> v(channels);
    for (int64_t c = 0; c < channels; ++c) v[c] = b->float_at(c);
    return v;
  }
  int d = m.view.producer(value);
  const Node* n = node_of_type(m.g, d, "DequantizeLinear");
  if (!n || n->inputs.size() < 2 || read_int(*n, "block_size", 0) != 0) return std::nullopt;
  const Tensor* q = m.view.constant(n->inputs[0]);
  const Tensor* s = m.view.constant(n->inputs[1]);
  const Tensor* z = n->inputs.size() > 2 && !n->inputs[2].empty() ? m.view.constant(n->inputs[2]) : nullptr;
  if (!q || q->dtype() != DataType::Int32 || q->rank() != 1 || q->numel() != channels) return std::nullopt;
  if (!s || s->dtype() != DataType::Float || (s->numel() != 1 && s->numel() != channels)) return std::nullopt;
  if (n->inputs.size() > 2 && !n->inputs[2].empty() && (!z || z->numel() != s->numel())) return std::nullopt;
  std::vector<double> v(channels);
  for (int64_t c = 0; c < channels; ++c) {
    int64_t k = s->numel() == 1 ? 0 : c;
    v[c] = static_cast<double>(q->int_at(c) - (z ? z->int_at(k) : 0)) * static_cast<float>(s->float_at(k));
  }
  *dq = d;
  return v;
}

// The bias as int32 at scale x_scale * w_scale[c], zero point 0, as
// QLinearConv and QGemm add it to their accumulators; nothing when a value
// would move by more than 1/128 of an output step (the result would then
// differ from the float graph by more than rounding) or overflow int32.
std::optional<Tensor> integer_bias(const std::vector<double>& bias, const QuantParams& x, const QuantParams& w,
                                   const QuantParams& y) {
  const double step = y.scale->float_at(0);
  std::vector<int32_t> out(bias.size());
  for (size_t c = 0; c < bias.size(); ++c) {
    // In float, as the quantizers compute it, so an exact int32 bias maps back to itself.
    double s = static_cast<float>(x.scale->float_at(0)) *
               static_cast<float>(w.scale->float_at(w.per_tensor() ? 0 : static_cast<int64_t>(c)));
    if (!(s > 0)) return std::nullopt;
    double q = std::nearbyint(bias[c] / s);
    if (std::abs(q) > std::numeric_limits<int32_t>::max()) return std::nullopt;
    if (std::abs(q * s - bias[c]) > step / 128) return std::nullopt;
    out[c] = static_cast<int32_t>(q);
  }
  return Tensor::from_vector<int32_t>(out, {static_cast<int64_t>(bias.size())});
}

// Whether a Relu before a QuantizeLinear changes nothing: its zero point is
// the type's minimum, so every negative value clamps to it anyway.
bool relu_is_clamp(const QuantParams& y) {
  int64_t lowest = y.type() == DataType::UInt8 ? 0 : -128;
  return y.zero_point->int_at(0) == lowest;
}

// The int32 bias input for a fused op: "" when there is none, nullopt when
// it cannot be made exact. `extra` collects the new initializer.
std::optional<std::string> bias_input(const Match& m, Group& group, const std::string& bias, int64_t channels,
                                      const QuantParams& x, const QuantParams& w, const QuantParams& y,
                                      std::vector<std::pair<std::string, Tensor>>& extra) {
  if (bias.empty()) return std::string();
  int bias_dq = -1;
  auto values = bias_values(m, bias, channels, &bias_dq);
  if (!values) return std::nullopt;
  auto tensor = integer_bias(*values, x, w, y);
  if (!tensor) return std::nullopt;
  if (bias_dq >= 0) group.take_dequantize(bias_dq);
  std::string name = m.view.fresh_name(bias + "_int32");
  extra.emplace_back(name, std::move(*tensor));
  return name;
}

// DQ(x) + DQ(w const) [+ bias] -> Conv [-> Relu] -> Q => QLinearConv.
std::optional<Patch> fuse_conv(const Match& m, const Form&) {
  if (m.op.inputs.size() < 2) return std::nullopt;
  auto x = dequantized(m.g, m.view, m.op.inputs[0]);
  auto w = constant_weight(m, m.op.inputs[1], 0);
  if (!x || !w || !x->params.per_tensor()) return std::nullopt;
  Group group(m.g, m.view, m.index);
  std::string out = m.op.outputs[0], fusion = "DQ+Conv";
  int relu = sole_consumer_of_type(m.g, m.view, out, "Relu");
  if (relu >= 0) out = m.g.nodes[relu].outputs[0];
  auto y = requantized(m.g, m.view, out);
  if (!y || (relu >= 0 && !relu_is_clamp(y->params))) return std::nullopt;
  if (relu >= 0) group.take(relu), fusion += "+Relu";
  std::vector<std::pair<std::string, Tensor>> extra;
  int64_t channels = m.view.constant(w->input)->dim(0);
  auto bias = bias_input(m, group, m.op.inputs.size() > 2 ? m.op.inputs[2] : "", channels, x->params, w->params,
                         y->params, extra);
  if (!bias) return std::nullopt;
  std::vector<std::string> inputs = {x->input,          x->params.scale_name, x->params.zero_point_name,
                                     w->input,          w->params.scale_name, w->params.zero_point_name,
                                     y->params.scale_name, y->params.zero_point_name};
  if (!bias->empty()) inputs.push_back(*bias);
  Node fused = make_node("QLinearConv", m.op.name, inputs, {y->output});
  fused.attributes = m.op.attributes;
  group.take_dequantize(x->node);
  group.take_dequantize(w->node);
  group.take(y->node);
  return finish(m, fused, group.remove, fusion + "+Q", std::move(extra));
}

// DQ(a) + DQ(b) -> MatMul -> Q => QLinearMatMul; without the Q and with a
// constant b => com.microsoft MatMulIntegerToFloat.
std::optional<Patch> fuse_matmul(const Match& m, const Form&) {
  auto a = dequantized(m.g, m.view, m.op.inputs[0]);
  auto b = dequantized(m.g, m.view, m.op.inputs[1]);
  if (!a || !b || !a->params.per_tensor()) return std::nullopt;
  if (!b->params.per_tensor()) {  // per column of a constant 2-D b
    const Tensor* t = m.view.constant(b->input);
    if (!t || t->rank() != 2 || (b->params.axis != 1 && b->params.axis != -1) ||
        t->dim(1) != b->params.scale->numel())
      return std::nullopt;
  }
  Group group(m.g, m.view, m.index);
  group.take_dequantize(a->node);
  group.take_dequantize(b->node);
  if (auto y = requantized(m.g, m.view, m.op.outputs[0])) {
    Node fused = make_node("QLinearMatMul", m.op.name,
                           {a->input, a->params.scale_name, a->params.zero_point_name, b->input, b->params.scale_name,
                            b->params.zero_point_name, y->params.scale_name, y->params.zero_point_name},
                           {y->output});
    group.take(y->node);
    return finish(m, fused, group.remove, "DQ+MatMul+Q");
  }
  if (!m.view.constant(b->input)) return std::nullopt;
  Node fused = make_node("MatMulIntegerToFloat", m.op.name,
                         {a->input, b->input, a->params.scale_name, b->params.scale_name, a->params.zero_point_name,
                          b->params.zero_point_name},
                         {m.op.outputs[0]}, kMicrosoftDomain);
  return finish(m, fused, group.remove, "DQ+MatMul");
}

// DQ(a) + DQ(b const) [+ bias] -> Gemm -> Q => com.microsoft QGemm.
std::optional<Patch> fuse_gemm(const Match& m, const Form&) {
  if (m.op.inputs.size() < 2) return std::nullopt;
  const Attribute* alpha = m.op.attr("alpha");
  if (alpha && alpha->f != 1.0f) return std::nullopt;
  bool trans_b = read_int(m.op, "transB", 0) != 0;
  auto a = dequantized(m.g, m.view, m.op.inputs[0]);
  auto b = constant_weight(m, m.op.inputs[1], trans_b ? 0 : 1);
  auto y = requantized(m.g, m.view, m.op.outputs[0]);
  if (!a || !b || !y || !a->params.per_tensor()) return std::nullopt;
  const Tensor* bt = m.view.constant(b->input);
  if (bt->rank() != 2) return std::nullopt;
  Group group(m.g, m.view, m.index);
  std::vector<std::pair<std::string, Tensor>> extra;
  std::string bias_name;
  if (m.op.inputs.size() > 2 && !m.op.inputs[2].empty()) {
    int bias_dq = -1;
    auto values = bias_values(m, m.op.inputs[2], bt->dim(trans_b ? 0 : 1), &bias_dq);
    if (!values) return std::nullopt;
    const Attribute* beta = m.op.attr("beta");
    for (double& v : *values) v *= beta ? beta->f : 1.0f;
    auto tensor = integer_bias(*values, a->params, b->params, y->params);
    if (!tensor) return std::nullopt;
    if (bias_dq >= 0) group.take_dequantize(bias_dq);
    bias_name = m.view.fresh_name(m.op.inputs[2] + "_int32");
    extra.emplace_back(bias_name, std::move(*tensor));
  }
  Node fused = make_node("QGemm", m.op.name,
                         {a->input, a->params.scale_name, a->params.zero_point_name, b->input, b->params.scale_name,
                          b->params.zero_point_name, bias_name, y->params.scale_name, y->params.zero_point_name},
                         {y->output}, kMicrosoftDomain);
  fused.attributes["transA"] = int_attr(read_int(m.op, "transA", 0));
  fused.attributes["transB"] = int_attr(trans_b ? 1 : 0);
  group.take_dequantize(a->node);
  group.take_dequantize(b->node);
  group.take(y->node);
  return finish(m, fused, group.remove, "DQ+Gemm+Q", std::move(extra));
}

// Float ops computing each output element from the input element at its position (and
// constants of one element or one per channel): as DQ -> op... -> Q, a table lookup.
constexpr const char* kElementwiseFloatOps[] = {
    "Abs",  "Acos",  "Acosh", "Asin",  "Asinh",           "Atan",     "Atanh", "Ceil",     "Celu",
    "Clip", "Cos",   "Cosh",  "Div",   "Elu",             "Erf",      "Exp",   "Floor",    "Gelu",
    "HardSigmoid",   "HardSwish",      "Log",             "Max",      "Min",   "Mish",     "Neg",
    "Pow",  "PRelu", "Reciprocal",     "Relu",            "Round",    "Selu",  "Shrink",   "Sign",
    "Sin",  "Sinh",  "Softplus",       "Softsign",        "Sqrt",     "Sub",   "Tan",      "Tanh",
    "ThresholdedRelu", "BatchNormalization"};

bool is_elementwise_float_op(const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (n.op_type == "BatchNormalization" && (n.outputs.size() != 1 || read_int(n, "training_mode", 0) != 0))
    return false;
  return std::find(std::begin(kElementwiseFloatOps), std::end(kElementwiseFloatOps), n.op_type) !=
         std::end(kElementwiseFloatOps);
}

// Every fusable form. The com.microsoft ones fire only where a kernel for
// them is registered (finish asks ctx.can_run).
const std::vector<Form>& forms() {
  static const std::vector<Form> all = {
      {"Conv", fuse_conv},
      {"MatMul", fuse_matmul},
      {"Gemm", fuse_gemm},
      {"MaxPool", drop_qdq_pair, {0}, "", 12},
      {"Reshape", drop_qdq_pair},
      {"Transpose", drop_qdq_pair},
      {"Flatten", drop_qdq_pair, {0}, "", 9},
      {"Squeeze", drop_qdq_pair},
      {"Unsqueeze", drop_qdq_pair},
      {"Slice", drop_qdq_pair},
      {"Gather", drop_qdq_pair},
      {"Concat", concat, {}},
      {"Split", drop_qdq_pair},
      {"Add", qlinear_or_table, {0, 1}, "QLinearAdd"},
      {"Mul", qlinear_or_table, {0, 1}, "QLinearMul"},
      {"Sigmoid", contrib_qlinear, {0}, "QLinearSigmoid"},
      {"LeakyRelu", contrib_qlinear, {0}, "QLinearLeakyRelu"},
      {"GlobalAveragePool", contrib_qlinear, {0}, "QLinearGlobalAveragePool"},
      {"AveragePool", contrib_qlinear, {0}, "QLinearAveragePool"},
  };
  static const std::vector<Form> with_tables = [] {
    std::vector<Form> v = all;
    for (const char* op : kElementwiseFloatOps) v.push_back({op, tabulate});
    return v;
  }();
  return with_tables;
}

class QdqRule final : public RewriteRule {
 public:
  explicit QdqRule(const Form& form) : form_(form) {}
  std::string op_type() const override { return form_.op; }
  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext& ctx) const override {
    const Node& op = g.nodes[i];
    if (op.outputs.empty() || op.outputs[0].empty()) return std::nullopt;
    return form_.build(Match{g, view, i, op, ctx}, form_);
  }

 private:
  const Form& form_;
};

}  // namespace

std::unique_ptr<GraphPass> make_qdq_fusion() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  for (const Form& f : forms()) rules.push_back(std::make_unique<QdqRule>(f));
  return std::make_unique<RulePass>("qdq_fusion", std::move(rules));
}

}  // namespace onyx
