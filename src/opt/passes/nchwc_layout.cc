// Blocked activation layout (level `all`): float 2-D Conv / FusedConv become
// com.onyx NchwcConv, which writes [N, ceil(C/b), H, W, b] (b = 16 with
// AVX-512, else 8). Pools, Concat along channels, elementwise activations and
// Add/Mul/Sub whose inputs are all blocked stay in that layout (as Nchwc
// pools or the same ONNX op on the blocked tensors); a ReorderOutput converts
// back to NCHW for any other reader and for graph outputs. So chains of
// convolutions and pools pay for layout conversion only at their edges.
// Blocked values get new names; the NCHW value keeps its original name.
#include <cmath>
#include <map>
#include <set>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

int preferred_block() {
#if defined(__x86_64__) || defined(__i386__)
  static int b = __builtin_cpu_supports("avx512f") ? 16 : 8;
  return b;
#else
  return 8;
#endif
}

bool ints_all(const Node& n, const char* name, int64_t v) {
  const Attribute* a = n.attr(name);
  if (!a) return true;
  for (auto x : a->ints)
    if (x != v) return false;
  return true;
}

int64_t int_attr(const Node& n, const char* name, int64_t def) {
  const Attribute* a = n.attr(name);
  return a ? a->i : def;
}

Attribute make_int(int64_t v) {
  Attribute a;
  a.type = AttrType::Int;
  a.i = v;
  return a;
}

bool has_subgraph(const Node& n) {
  for (auto& [k, a] : n.attributes)
    if (a.type == AttrType::Graph || a.type == AttrType::Graphs) return true;
  return false;
}

struct DepthwiseBatchNorm {
  Node conv;      // com.onyx NchwcConv (group C, 1x1), inputs X, W, B; output named as the BN's (or Relu's)
  int relu = -1;  // index of the Relu folded in, or -1
};

// Inference BatchNormalization with constant float parameters as y = x * a + b
// per channel, a = scale / sqrt(var + eps), b = beta - mean * a: the weights
// and bias of a depthwise 1x1 convolution (added to the graph's initializers).
std::optional<DepthwiseBatchNorm> batchnorm_as_depthwise(Graph& g, const GraphView& view, int index, int64_t C,
                                                         UniqueNames& names) {
  const Node bn = g.nodes[index];
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
  Tensor w(DataType::Float, {C, 1, 1, 1}), b(DataType::Float, {C});
  for (int64_t c = 0; c < C; ++c) {
    float a = p[0]->data<float>()[c] / std::sqrt(p[3]->data<float>()[c] + eps);
    w.data<float>()[c] = a;
    b.data<float>()[c] = p[1]->data<float>()[c] - p[2]->data<float>()[c] * a;
  }
  DepthwiseBatchNorm r;
  r.conv.name = bn.name;
  r.conv.op_type = "NchwcConv";
  r.conv.domain = kOnyxDomain;
  std::string wn = names.make(bn.outputs[0] + "_dw_weight"), bnm = names.make(bn.outputs[0] + "_dw_bias");
  for (auto& [name, t] : {std::pair{wn, w}, std::pair{bnm, b}}) {
    g.initializers[name] = t;
    g.initializer_order.push_back(name);
  }
  r.conv.inputs = {bn.inputs[0], wn, bnm};
  r.conv.outputs = {bn.outputs[0]};
  r.conv.attributes["group"] = make_int(C);
  int ri = view.single_consumer(bn.outputs[0]);
  if (ri > index && g.nodes[ri].op_type == "Relu" && g.nodes[ri].domain.empty()) {
    r.relu = ri;
    r.conv.outputs = {g.nodes[ri].outputs[0]};
    Attribute act;
    act.type = AttrType::String;
    act.s = "Relu";
    r.conv.attributes["activation"] = act;
  }
  return r;
}

class NchwcLayout final : public GraphPass {
 public:
  std::string name() const override { return "nchwc_layout"; }
  bool run(Graph& g, PassContext& ctx) override {
    const int block = preferred_block();
    {
      Node probe;
      probe.op_type = "NchwcConv";
      probe.domain = kOnyxDomain;
      if (ctx.can_run && !ctx.can_run(probe)) return false;
    }
    GraphView view(g);
    UniqueNames names(g);
    struct Blocked {
      std::string name;
      int64_t channels;
    };
    std::map<std::string, Blocked> blocked;  // NCHW value name -> its blocked version
    std::map<std::string, bool> materialized;
    std::vector<Node> out;
    bool changed = false;
    auto materialize = [&](const std::string& v) {
      auto it = blocked.find(v);
      if (it == blocked.end() || materialized[v]) return;
      Node r;
      r.name = names.make(v + "_reorder");
      r.op_type = "ReorderOutput";
      r.domain = kOnyxDomain;
      r.inputs = {it->second.name};
      r.outputs = {v};
      r.attributes["channels"] = make_int(it->second.channels);
      out.push_back(std::move(r));
      materialized[v] = true;
    };
    auto is_blocked = [&](const std::string& v) { return !v.empty() && blocked.count(v) != 0; };
    auto make_blocked = [&](Node& n, int64_t channels) {
      std::string orig = n.outputs[0];
      std::string bn = names.make(orig + "_nchwc");
      n.outputs[0] = bn;
      blocked[orig] = {bn, channels};
    };

    std::set<int> skip;  // nodes folded into an earlier one
    for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
      if (skip.count(i)) continue;
      Node n = g.nodes[i];
      bool onnx = n.domain.empty() || n.domain == "ai.onnx";
      bool converted = false;
      if ((onnx && n.op_type == "Conv") || (n.domain == kOnyxDomain && n.op_type == "FusedConv")) {
        const Tensor* w = n.inputs.size() > 1 ? view.constant(n.inputs[1]) : nullptr;
        int64_t group = int_attr(n, "group", 1);
        bool ok = w && w->dtype() == DataType::Float && w->rank() == 4 && n.outputs.size() == 1;
        if (ok && group != 1) ok = w->dim(1) == 1 && w->dim(0) == group;  // depthwise only
        if (ok && n.inputs.size() > 2 && !n.inputs[2].empty()) {
          const Tensor* b = view.constant(n.inputs[2]);
          ok = b && b->dtype() == DataType::Float;
        }
        bool has_z = n.inputs.size() > 3 && !n.inputs[3].empty();
        if (ok && has_z) ok = is_blocked(n.inputs[3]) && blocked[n.inputs[3]].channels == w->dim(0);
        if (ok && is_blocked(n.inputs[0]) && blocked[n.inputs[0]].channels != w->dim(1) * group) ok = false;
        if (ok) {
          int64_t M = w->dim(0);
          n.op_type = "NchwcConv";
          n.domain = kOnyxDomain;
          if (is_blocked(n.inputs[0])) n.inputs[0] = blocked[n.inputs[0]].name;
          if (has_z) n.inputs[3] = blocked[n.inputs[3]].name;
          n.attributes["block"] = make_int(block);
          make_blocked(n, M);
          converted = true;
        }
      } else if (onnx && (n.op_type == "MaxPool" || n.op_type == "AveragePool" || n.op_type == "GlobalAveragePool") &&
                 is_blocked(n.inputs[0])) {
        bool ok = (n.outputs.size() == 1 || n.outputs[1].empty()) && ints_all(n, "dilations", 1) &&
                  int_attr(n, "storage_order", 0) == 0;
        if (n.op_type == "AveragePool" && int_attr(n, "ceil_mode", 0) != 0 && int_attr(n, "count_include_pad", 0) != 0)
          ok = false;
        if (n.op_type != "GlobalAveragePool") {
          const Attribute* k = n.attr("kernel_shape");
          if (!k || k->ints.size() != 2) ok = false;
        }
        if (ok) {
          int64_t C = blocked[n.inputs[0]].channels;
          n.op_type = "Nchwc" + n.op_type;
          n.domain = kOnyxDomain;
          n.inputs[0] = blocked[n.inputs[0]].name;
          n.outputs.resize(1);
          n.attributes["block"] = make_int(block);
          make_blocked(n, C);
          converted = true;
        }
      } else if (onnx && n.op_type == "Concat" && !n.inputs.empty() && n.outputs.size() == 1) {
        int64_t axis = int_attr(n, "axis", 0);
        bool ok = axis == 1 || axis == -3;
        int64_t total = 0;
        for (size_t k = 0; ok && k < n.inputs.size(); ++k) {
          if (!is_blocked(n.inputs[k])) ok = false;
          else if (k + 1 < n.inputs.size() && blocked[n.inputs[k]].channels % block != 0) ok = false;
          else total += blocked[n.inputs[k]].channels;
        }
        if (ok) {
          for (auto& in : n.inputs) in = blocked[in].name;
          n.attributes["axis"] = make_int(1);
          make_blocked(n, total);
          converted = true;
        }
      } else if (onnx && n.op_type == "BatchNormalization" && is_blocked(n.inputs[0])) {
        // A normalization that no conv absorbed (DenseNet's pre-activation BN after
        // Concat) runs as a depthwise 1x1 NchwcConv, with a following Relu fused.
        auto dw = batchnorm_as_depthwise(g, view, i, blocked[n.inputs[0]].channels, names);
        if (dw) {
          n = std::move(dw->conv);
          n.inputs[0] = blocked[n.inputs[0]].name;
          n.attributes["block"] = make_int(block);
          if (dw->relu >= 0) skip.insert(dw->relu);
          ++ctx.fusion_counts[dw->relu >= 0 ? "BatchNormalization+Relu as depthwise NchwcConv"
                                            : "BatchNormalization as depthwise NchwcConv"];
          make_blocked(n, blocked[g.nodes[i].inputs[0]].channels);
          converted = true;
        }
      } else if (onnx && n.outputs.size() == 1 && !n.inputs.empty() && is_blocked(n.inputs[0])) {
        static const std::set<std::string> unary = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                                                    "HardSwish", "Clip", "Elu", "Selu", "Softplus"};
        static const std::set<std::string> binary = {"Add", "Mul", "Sub"};
        int64_t C = blocked[n.inputs[0]].channels;
        bool ok = false;
        if (unary.count(n.op_type)) {
          ok = true;
          for (size_t k = 1; k < n.inputs.size(); ++k) {  // Clip's min / max: constant scalars
            if (n.inputs[k].empty()) continue;
            const Tensor* t = view.constant(n.inputs[k]);
            if (!t || t->numel() != 1) ok = false;
          }
        } else if (binary.count(n.op_type) && n.inputs.size() == 2) {
          ok = is_blocked(n.inputs[1]) && blocked[n.inputs[1]].channels == C;
        }
        if (ok) {
          n.inputs[0] = blocked[n.inputs[0]].name;
          if (binary.count(n.op_type)) n.inputs[1] = blocked[n.inputs[1]].name;
          make_blocked(n, C);
          converted = true;
        }
      }
      if (converted) {
        changed = true;
      } else {
        for (auto& in : n.inputs) materialize(in);
        if (has_subgraph(n))
          for (auto& [v, b] : blocked)
            for (int c : view.consumers(v))
              if (c == i) materialize(v);
      }
      out.push_back(std::move(n));
    }
    if (!changed) return false;
    for (auto& o : g.outputs) materialize(o.name);
    g.nodes = std::move(out);
    return true;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_nchwc_layout() { return std::make_unique<NchwcLayout>(); }

}  // namespace onyx
