// Blocked activation layout (level `all`): float 2-D Conv / FusedConv become
// com.onyx NchwcConv, which writes [N, ceil(C/b), H, W, b] (b = 16 with
// AVX-512, else 8). Pools, Concat along channels, elementwise activations and
// Add/Mul/Sub whose inputs are all blocked stay in that layout (as Nchwc
// pools or the same ONNX op on the blocked tensors); a ReorderOutput converts
// back to NCHW for any other reader and for graph outputs. Per-channel ops
// (inference BatchNormalization, Mul/Add/Sub by a per-channel constant) become
// depthwise 1x1 NchwcConvs, and permutes to NHWC and back (Transpose 0,2,3,1 /
// 0,3,1,2) channels-last reorders. So chains of convolutions and pools pay for
// layout conversion only at their edges.
// Blocked values get new names; the NCHW value keeps its original name.
#include <map>
#include <set>

#include "opt/passes/channel_affine.h"
#include "opt/passes/layout_values.h"
#include "base/cpu_features.h"
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

int preferred_block() {
  return cpu_features().avx512f ? 16 : 8;  // the CPU kernels' block (dnnl_preferred_block)
}

bool perm_is(const Node& n, const std::vector<int64_t>& perm) {
  const Attribute* a = n.attr("perm");
  return a && a->ints == perm && n.inputs.size() == 1 && n.outputs.size() == 1;
}

// A Transpose replaced by a channels-last reorder of `input`, keeping its output name.
Node reorder_node(const Node& transpose, const std::string& op, const std::string& input) {
  Node r;
  r.name = transpose.name;
  r.op_type = op;
  r.domain = kOnyxDomain;
  r.inputs = {input};
  r.outputs = transpose.outputs;
  r.attributes["channels_last"] = int_attr(1);
  return r;
}

// A 1x1, stride-1, unpadded, ungrouped conv of at most 8 outputs.
bool pointwise_head(const Node& conv, const Tensor& w, int64_t group) {
  if (group != 1 || w.dim(0) > 8) return false;
  for (int d = 2; d < w.rank(); ++d)
    if (w.dim(d) != 1) return false;
  const Attribute* pad = conv.attr("auto_pad");
  const bool explicit_pads = !pad || pad->s == "NOTSET" || pad->s == "VALID" || pad->s.empty();
  return explicit_pads && ints_all(conv, "strides", 1) && ints_all(conv, "pads", 0);
}

// A plain [N, C, 1, 1] value computed at run time (a UNet's timestep embedding added to
// every pixel, an attention gate): reordered in, it is a few bytes, and the blocked
// value it meets stays blocked.
bool per_image_channels(const GraphView& view, const std::string& v, int64_t channels) {
  const TypeInfo* t = view.type_of(v);
  return !view.constant(v) && t && t->has_shape && t->shape.size() == 4 && t->shape[1].value == channels &&
         t->shape[2].value == 1 && t->shape[3].value == 1;
}

// How many groups of a grouped Conv to merge so that each merged group is one
// channel block wide (ResNeXt's 4 and 8 channels per group against blocks of
// 16), or 0 when they do not tile blocks or would waste over 3/4 of the work.
int64_t groups_per_block(const Tensor& w, int64_t group, int64_t block) {
  const int64_t cg = w.dim(1), M = w.dim(0);
  if (group <= 1 || cg >= block || block % cg != 0 || M % group != 0) return 0;
  const int64_t k = block / cg, mg = M / group;
  if (k > 4 || group % k != 0 || (k * mg) % block != 0) return 0;
  return k;
}

// The weights of the same Conv with every k consecutive groups merged into one:
// each merged group's [k mg, k cg] matrix per tap holds the k original
// [mg, cg] blocks on its diagonal and zeros elsewhere. k times the
// multiply-adds, but the layer runs in the blocked kernel with no layout
// conversions around it.
Tensor merged_group_weights(const Tensor& w, int64_t group, int64_t k) {
  const int64_t M = w.dim(0), cg = w.dim(1), taps = w.dim(2) * w.dim(3), mg = M / group;
  Tensor out = Tensor::zeros(DataType::Float, {M, k * cg, w.dim(2), w.dim(3)});
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  for (int64_t o = 0; o < M; ++o) {
    const int64_t slot = (o / mg) % k;  // the original group's place in its merged group
    std::copy(src + o * cg * taps, src + (o + 1) * cg * taps, dst + (o * k * cg + slot * cg) * taps);
  }
  return out;
}

// GroupNorm as PyTorch exports it: Reshape(x, [0 or N, G, -1]) ->
// InstanceNormalization -> Reshape(back to x's shape, from Shape(x) or a
// constant). With whole blocks per group the blocked tensor, reshaped the same
// way, holds each group's values contiguously (and no padding lanes), so the
// three nodes run on it unchanged: only the final Reshape needs the blocked shape.
struct GroupNormNodes {
  int instance_norm = -1, reshape_back = -1;
  int shape_of_input = -1;  // the Shape(x) node the reshape back reads, or -1 (constant shape)
};

std::optional<GroupNormNodes> group_norm_on(const Graph& g, const GraphView& view, int i, int64_t channels, int block) {
  const Node& reshape = g.nodes[i];
  const Tensor* shape = reshape.inputs.size() == 2 ? view.constant(reshape.inputs[1]) : nullptr;
  if (!shape || shape->numel() != 3 || read_int(reshape, "allowzero", 0) != 0) return std::nullopt;
  const int64_t groups = shape->int_at(1);
  if (shape->int_at(2) != -1 || groups <= 0 || channels % groups != 0 || (channels / groups) % block != 0)
    return std::nullopt;
  GroupNormNodes nodes;
  nodes.instance_norm = view.single_consumer(reshape.outputs[0]);
  const Node* in = node_of_type(g, nodes.instance_norm, "InstanceNormalization");
  if (!in || in->inputs[0] != reshape.outputs[0] || view.is_graph_output(reshape.outputs[0])) return std::nullopt;
  nodes.reshape_back = view.single_consumer(in->outputs[0]);
  const Node* back = node_of_type(g, nodes.reshape_back, "Reshape");
  if (!back || back->inputs[0] != in->outputs[0] || view.is_graph_output(in->outputs[0])) return std::nullopt;
  const std::string& x = reshape.inputs[0];
  const Tensor* back_shape = view.constant(back->inputs[1]);
  const TypeInfo* xt = view.type_of(x);
  if (back_shape) {  // the constant must be x's own (static) shape
    if (!xt || !xt->has_shape || static_cast<int64_t>(xt->shape.size()) != back_shape->numel()) return std::nullopt;
    for (int64_t d = 0; d < back_shape->numel(); ++d)
      if (xt->shape[d].value != back_shape->int_at(d)) return std::nullopt;
    return nodes;
  }
  nodes.shape_of_input = view.producer(back->inputs[1]);
  const Node* shape_of = node_of_type(g, nodes.shape_of_input, "Shape");
  if (!shape_of || shape_of->inputs[0] != x || shape_of->attr("start") || shape_of->attr("end")) return std::nullopt;
  return nodes;
}

// Resize sizes that are x's own batch and channels: constant ones equal to x's
// static dims, or Concat(Slice(Shape(x), 0, 2), <2 constant values>) as
// exporters write F.interpolate(x, size=(h, w)) for a dynamic batch.
bool sizes_keep_batch_and_channels(const Graph& g, const GraphView& view, const std::string& sizes,
                                   const std::string& x, int64_t opset) {
  const TypeInfo* t = view.type_of(x);
  if (const Tensor* c = view.constant(sizes)) {
    return t && t->has_shape && t->shape.size() == 4 && c->numel() == 4 && t->shape[0].value == c->int_at(0) &&
           t->shape[1].value == c->int_at(1);
  }
  const Node* cat = node_of_type(g, view.producer(sizes), "Concat");
  if (!cat || cat->inputs.size() < 2) return false;
  const Node* slice = node_of_type(g, view.producer(cat->inputs[0]), "Slice");
  if (!slice || slice->inputs.empty()) return false;
  const Node* shape = node_of_type(g, view.producer(slice->inputs[0]), "Shape");
  if (!shape || shape->inputs[0] != x || shape->attr("start") || shape->attr("end")) return false;
  const auto sp = slice_params(*slice, view, opset);
  if (!sp || sp->starts != std::vector<int64_t>{0} || sp->ends != std::vector<int64_t>{2} || sp->axes[0] != 0 ||
      sp->steps[0] != 1)
    return false;
  int64_t rest = 0;
  for (size_t k = 1; k < cat->inputs.size(); ++k) {
    const Tensor* v = view.constant(cat->inputs[k]);
    if (!v) return false;
    rest += v->numel();
  }
  return rest == 2;
}

// A Resize of a 4-D value that changes height and width only: its output's
// declared batch and channels are the input's (or constant scales are 1 there),
// no crop-and-resize (its roi reaches every axis), no aspect-ratio policy.
bool resizes_spatial_only(const Graph& g, const GraphView& view, const Node& n, int64_t opset) {
  if (n.outputs.size() != 1 || n.attr("keep_aspect_ratio_policy")) return false;
  if (const Attribute* c = n.attr("coordinate_transformation_mode"); c && c->s == "tf_crop_and_resize") return false;
  if (const Attribute* axes = n.attr("axes"))
    for (int64_t a : axes->ints)
      if (a == 0 || a == 1 || a == -4 || a == -3) return false;
  const TypeInfo* in = view.type_of(n.inputs[0]);
  const TypeInfo* out = view.type_of(n.outputs[0]);
  if (!in || !in->has_shape || in->shape.size() != 4) return false;
  if (out && out->has_shape && out->shape.size() == 4) {
    auto same = [](const Dim& a, const Dim& b) {
      return a.value >= 0 ? a.value == b.value : !a.symbol.empty() && a.symbol == b.symbol;
    };
    if (same(in->shape[0], out->shape[0]) && same(in->shape[1], out->shape[1])) return true;
  }
  if (n.attr("axes")) return false;
  const Tensor* scales = n.inputs.size() > 2 ? view.constant(n.inputs[2]) : nullptr;
  if (scales && scales->numel() == 4) return scales->float_at(0) == 1.0 && scales->float_at(1) == 1.0;
  return n.inputs.size() > 3 && sizes_keep_batch_and_channels(g, view, n.inputs[3], n.inputs[0], opset);
}

class NchwcLayout final : public GraphPass {
 public:
  std::string name() const override { return "nchwc_layout"; }
  bool run(Graph& g, PassContext& ctx) override {
    const int block = preferred_block();
    if (!kernel_exists(ctx, "NchwcConv", kOnyxDomain)) return false;
    GraphView view(g);
    UniqueNames names(g);
    struct Blocked {
      std::string name;
      int64_t channels;
    };
    // NCHW value name -> its blocked version; a ReorderOutput writes the NCHW value back.
    LayoutValues<Blocked> blocked([&](const Blocked& b, const std::string& v) {
      Node r;
      r.name = names.make(v + "_reorder");
      r.op_type = "ReorderOutput";
      r.domain = kOnyxDomain;
      r.inputs = {b.name};
      r.outputs = {v};
      r.attributes["channels"] = int_attr(b.channels);
      return r;
    });
    auto is_blocked = [&](const std::string& v) { return blocked.has(v); };
    auto make_blocked = [&](Node& n, int64_t channels) {
      std::string orig = n.outputs[0];
      std::string bn = names.make(orig + "_nchwc");
      n.outputs[0] = bn;
      blocked.add(orig, {bn, channels});
    };

    // A plain value converted in, once; its plain version stays for other readers.
    auto reorder_in = [&](const std::string& v, int64_t channels) {
      Node r;
      r.name = names.make(v + "_reorder_in");
      r.op_type = "ReorderInput";
      r.domain = kOnyxDomain;
      r.inputs = {v};
      r.outputs = {names.make(v + "_nchwc")};
      r.attributes["block"] = int_attr(block);
      blocked.add(v, {r.outputs[0], channels}, true);
      blocked.append(std::move(r));
    };

    // Whether some reader of `v` would take it blocked: a conv, or arithmetic
    // with an operand that is blocked already.
    auto feeds_blocked = [&](const std::string& v) {
      for (int c : view.consumers(v)) {
        const Node& r = g.nodes[c];
        if ((r.op_type == "Conv" && r.domain.empty()) || (r.op_type == "FusedConv" && r.domain == kOnyxDomain))
          if (r.inputs[0] == v) return true;
        if ((r.op_type == "Add" || r.op_type == "Mul" || r.op_type == "Sub") && r.domain.empty() &&
            r.inputs.size() == 2) {
          const std::string other = other_input(r, v);
          if (is_blocked(other)) return true;
          const TypeInfo* t = view.type_of(v);
          if (view.constant(other) && t && t->has_shape && t->shape.size() == 4 && t->shape[1].value > 0 &&
              arithmetic_affine(view, r, v, t->shape[1].value))
            return true;
        }
      }
      return false;
    };
    // The per-channel affine map of a BatchNormalization or constant Mul/Add/Sub
    // on a blocked value, with that value's name.
    auto channel_affine = [&](const Node& n) -> std::optional<std::pair<ChannelAffine, std::string>> {
      if (n.inputs.empty() || n.outputs.empty()) return std::nullopt;
      if (n.op_type == "BatchNormalization" && is_blocked(n.inputs[0])) {
        auto a = batchnorm_affine(view, n, blocked[n.inputs[0]].channels);
        if (a) return std::make_pair(std::move(*a), n.inputs[0]);
      } else if (n.op_type == "Mul" || n.op_type == "Add" || n.op_type == "Sub") {
        for (auto& x : n.inputs) {
          if (!is_blocked(x)) continue;
          auto a = arithmetic_affine(view, n, x, blocked[x].channels);
          if (a) return std::make_pair(std::move(*a), x);
        }
      }
      return std::nullopt;
    };
    // The map of a per-channel node reading NCHW value `v` (C channels), for chaining.
    auto channel_affine_of = [&](const Node& r, const std::string& v,
                                 int64_t C) -> std::optional<ChannelAffine> {
      if (!r.domain.empty() || r.inputs.empty() || r.outputs.size() != 1) return std::nullopt;
      if (r.op_type == "BatchNormalization" && r.inputs[0] == v) return batchnorm_affine(view, r, C);
      if (r.op_type == "Mul" || r.op_type == "Add" || r.op_type == "Sub") return arithmetic_affine(view, r, v, C);
      return std::nullopt;
    };
    std::set<int> skip;  // nodes folded into an earlier one
    std::map<int, Node> rewritten;  // later nodes an earlier conversion already rewrote
    for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
      if (skip.count(i)) continue;
      if (auto it = rewritten.find(i); it != rewritten.end()) {
        blocked.emit(view, i, std::move(it->second), true);
        continue;
      }
      Node n = g.nodes[i];
      bool onnx = n.domain.empty() || n.domain == "ai.onnx";
      bool converted = false;
      if ((onnx && n.op_type == "Conv") || (n.domain == kOnyxDomain && n.op_type == "FusedConv")) {
        const Tensor* w = n.inputs.size() > 1 ? view.constant(n.inputs[1]) : nullptr;
        int64_t group = read_int(n, "group", 1);
        bool ok = w && w->dtype() == DataType::Float && w->rank() == 4 && n.outputs.size() == 1;
        // Grouped: depthwise, or whole channel blocks per group (RegNet's
        // group width 16, ResNeXt's later stages), so no block straddles two
        // groups; narrower groups merged into block-wide ones (ResNeXt's early stages).
        int64_t merge = 0;
        if (ok && group != 1) {
          ok = (w->dim(1) == 1 && w->dim(0) == group) ||
               (w->dim(0) % group == 0 && w->dim(1) % block == 0 && (w->dim(0) / group) % block == 0);
          if (!ok && w->dim(1) > 1 && (merge = groups_per_block(*w, group, block)) > 0) ok = true;
        }
        if (ok && n.inputs.size() > 2 && !n.inputs[2].empty()) {
          const Tensor* b = view.constant(n.inputs[2]);
          ok = b && b->dtype() == DataType::Float;
        }
        // A residual sum input left plain (FocalNet's MLP output adds the un-normalized x) is
        // reordered in: its plain FusedConv ran the 1x1 convs 2x slower than the blocked one.
        bool has_z = n.inputs.size() > 3 && !n.inputs[3].empty();
        if (ok && has_z) ok = !may_broadcast_up(view, n.inputs[3], n.outputs[0]);  // summed element by element
        if (ok && has_z && is_blocked(n.inputs[3])) ok = blocked[n.inputs[3]].channels == w->dim(0);
        if (ok && has_z && !is_blocked(n.inputs[3])) {
          const TypeInfo* zt = view.type_of(n.inputs[3]);
          ok = zt && zt->has_shape && zt->shape.size() == 4 && zt->shape[1].value == w->dim(0);
        }
        if (ok && is_blocked(n.inputs[0]) && blocked[n.inputs[0]].channels != w->dim(1) * group) ok = false;
        // A 1x1 head of a few output channels on a plain value, read by nothing blocked: the
        // plain kernel runs it as one GEMM (is_pointwise_head in cpu/conv_geometry.h); blocked,
        // most output lanes would be padding.
        if (ok && !is_blocked(n.inputs[0]) && !feeds_blocked(n.outputs[0]) && pointwise_head(n, *w, group))
          ok = false;
        if (ok && ctx.can_run) {  // the blocked kernels take the activation (see register_nchwc)
          Node probe = n;
          probe.op_type = "NchwcConv";
          probe.domain = kOnyxDomain;
          ok = ctx.can_run(probe);
        }
        if (ok) {
          int64_t M = w->dim(0);
          if (group != 1 && w->dim(1) != 1) ++ctx.fusion_counts["grouped Conv as NchwcConv"];
          if (merge > 0) {
            std::string wn = names.make(n.inputs[1] + "_merged_groups");
            g.initializers[wn] = merged_group_weights(*w, group, merge);
            g.initializer_order.push_back(wn);
            n.inputs[1] = wn;
            n.attributes["group"] = int_attr(group / merge);
            ++ctx.fusion_counts["grouped Conv groups merged to block width"];
          }
          n.op_type = "NchwcConv";
          n.domain = kOnyxDomain;
          const int64_t C = w->dim(1) * group;
          // A plain input of whole blocks (after a Concat, Resize or ConvTranspose that stays
          // plain): one reorder, then the blocked kernel. Read plain, the conv converted it
          // through oneDNN's own reorders (a 32-channel depthwise 3x3 at 64x64: 93 us, the
          // reorder and the blocked kernel 35).
          if (!is_blocked(n.inputs[0]) && C >= block) reorder_in(n.inputs[0], C);
          if (has_z && !is_blocked(n.inputs[3])) {
            reorder_in(n.inputs[3], M);
            ++ctx.fusion_counts["plain residual reordered into NchwcConv"];
          }
          if (is_blocked(n.inputs[0])) n.inputs[0] = blocked[n.inputs[0]].name;
          if (has_z) n.inputs[3] = blocked[n.inputs[3]].name;
          n.attributes["block"] = int_attr(block);
          make_blocked(n, M);
          converted = true;
        }
      } else if (onnx && (n.op_type == "MaxPool" || n.op_type == "AveragePool" || n.op_type == "GlobalAveragePool") &&
                 is_blocked(n.inputs[0])) {
        bool ok = (n.outputs.size() == 1 || n.outputs[1].empty()) && ints_all(n, "dilations", 1) &&
                  read_int(n, "storage_order", 0) == 0;
        if (n.op_type == "AveragePool" && read_int(n, "ceil_mode", 0) != 0 && read_int(n, "count_include_pad", 0) != 0)
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
          n.attributes["block"] = int_attr(block);
          make_blocked(n, C);
          converted = true;
        }
      } else if (onnx && n.op_type == "Concat" && !n.inputs.empty() && n.outputs.size() == 1) {
        int64_t axis = read_int(n, "axis", 0);
        bool ok = axis == 1 || axis == -3;
        int64_t total = 0;
        bool whole_blocks = true;  // else the lanes shift: NchwcConcat
        std::vector<int64_t> channels;
        for (size_t k = 0; ok && k < n.inputs.size(); ++k) {
          if (!is_blocked(n.inputs[k])) {
            ok = false;
            break;
          }
          channels.push_back(blocked[n.inputs[k]].channels);
          whole_blocks = whole_blocks && (k + 1 == n.inputs.size() || channels.back() % block == 0);
          total += channels.back();
        }
        if (ok) {
          for (auto& in : n.inputs) in = blocked[in].name;
          if (whole_blocks) {
            n.attributes["axis"] = int_attr(1);
          } else {
            n.op_type = "NchwcConcat";
            n.domain = kOnyxDomain;
            n.attributes.erase("axis");
            n.attributes["channels"] = ints_attr(channels);
            ++ctx.fusion_counts["Concat of partial blocks as NchwcConcat"];
          }
          make_blocked(n, total);
          converted = true;
        }
      } else if (auto affine = onnx ? channel_affine(n) : std::nullopt) {
        // A per-channel op no conv absorbed (DenseNet's pre-activation BN after
        // a Concat, ConvNeXt's layer scale) runs as a depthwise 1x1 NchwcConv,
        // with a Relu that is its only reader fused.
        const std::string& x = affine->second;
        const int64_t C = blocked[x].channels;
        // Per-channel ops in a row (HGNetV2's scale-then-shift) compose into one.
        ChannelAffine map = std::move(affine->first);
        std::string ops = g.nodes[i].op_type;
        int last = i;
        for (int next = view.single_consumer(n.outputs[0]); next > last && !skip.count(next);
             next = view.single_consumer(g.nodes[last].outputs[0])) {
          auto then = channel_affine_of(g.nodes[next], g.nodes[last].outputs[0], C);
          if (!then) break;
          map = compose(map, *then);
          ops += "+" + g.nodes[next].op_type;
          skip.insert(next);
          last = next;
        }
        n = affine_as_depthwise(g, names, g.nodes[last], blocked[x].name, map);
        n.name = g.nodes[i].name;
        n.attributes["block"] = int_attr(block);
        int ri = view.single_consumer(g.nodes[last].outputs[0]);
        bool relu = ri > i && g.nodes[ri].op_type == "Relu" && g.nodes[ri].domain.empty();
        if (relu) {
          skip.insert(ri);
          n.outputs = g.nodes[ri].outputs;
          n.attributes["activation"] = string_attr("Relu");
        }
        ++ctx.fusion_counts[ops + (relu ? "+Relu" : "") + " as depthwise NchwcConv"];
        make_blocked(n, C);
        converted = true;
      } else if (auto gn = onnx && n.op_type == "Reshape" && is_blocked(n.inputs[0])
                               ? group_norm_on(g, view, i, blocked[n.inputs[0]].channels, block)
                               : std::nullopt) {
        const int64_t C = blocked[n.inputs[0]].channels;
        const std::string x_blocked = blocked[n.inputs[0]].name;
        n.inputs[0] = x_blocked;
        n.outputs[0] = names.make(n.outputs[0] + "_nchwc_groups");
        Node norm = g.nodes[gn->instance_norm];
        norm.inputs[0] = n.outputs[0];
        norm.outputs[0] = names.make(norm.outputs[0] + "_nchwc_groups");
        Node back = g.nodes[gn->reshape_back];
        back.inputs[0] = norm.outputs[0];
        Node shape = make_node("Shape", names.make(back.name + "_blocked_shape"), {x_blocked},
                               {names.make(back.inputs[1] + "_nchwc")});
        back.inputs[1] = shape.outputs[0];
        if (gn->shape_of_input >= 0 && view.consumers(g.nodes[gn->shape_of_input].outputs[0]).size() == 1 &&
            !view.is_graph_output(g.nodes[gn->shape_of_input].outputs[0]))
          skip.insert(gn->shape_of_input);
        blocked.append(std::move(shape));
        make_blocked(back, C);
        rewritten[gn->instance_norm] = std::move(norm);
        rewritten[gn->reshape_back] = std::move(back);
        ++ctx.fusion_counts["GroupNorm (Reshape, InstanceNormalization) on blocked values"];
        converted = true;
      } else if (onnx && n.op_type == "Transpose" && is_blocked(n.inputs[0]) && perm_is(n, {0, 2, 3, 1})) {
        // Blocked to NHWC is a copy of block-wide runs: no NCHW in between.
        int64_t C = blocked[n.inputs[0]].channels;
        n = reorder_node(n, "ReorderOutput", blocked[n.inputs[0]].name);
        n.attributes["channels"] = int_attr(C);
        ++ctx.fusion_counts["Transpose as channels-last reorder"];
        converted = true;  // its output is plain NHWC: not entered in `blocked`
      } else if (onnx && n.op_type == "Transpose" && perm_is(n, {0, 3, 1, 2}) && feeds_blocked(n.outputs[0])) {
        // NHWC back to channels-first, read by a conv or blocked arithmetic: straight to blocked.
        // Not an image of a few channels (RGB): blocked, most lanes of each pixel would be
        // padding the first conv multiplies through; it reads the plain NCHW tensor instead.
        const TypeInfo* t = view.type_of(n.inputs[0]);
        if (t && t->has_shape && t->shape.size() == 4 && t->shape.back().value * 2 >= block) {
          int64_t C = t->shape.back().value;
          n = reorder_node(n, "ReorderInput", n.inputs[0]);
          n.attributes["block"] = int_attr(block);
          ++ctx.fusion_counts["Transpose as channels-last reorder"];
          make_blocked(n, C);
          converted = true;
        }
      } else if (onnx && n.op_type == "Resize" && ctx.opset() >= 11 && is_blocked(n.inputs[0]) &&
                 resizes_spatial_only(g, view, n, ctx.opset())) {
        // Upsampling between convs (FPN and YOLO necks, U-Nets, GhostNetV2's attention) stays blocked.
        // One that only makes a graph output (a segmentation head's final upsampling) writes it
        // plain, a row at a time, rather than leaving its larger output to a ReorderOutput.
        const int64_t C = blocked[n.inputs[0]].channels;
        const bool nchw_output = view.consumers(n.outputs[0]).empty();
        n.op_type = "NchwcResize";
        n.domain = kOnyxDomain;
        n.inputs[0] = blocked[n.inputs[0]].name;
        n.attributes["channels"] = int_attr(C);
        if (nchw_output) n.attributes["nchw_output"] = int_attr(1);
        ++ctx.fusion_counts[nchw_output ? "Resize as NchwcResize to NCHW" : "Resize as NchwcResize"];
        if (!nchw_output) make_blocked(n, C);
        converted = true;
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
          if (!is_blocked(n.inputs[1]) && per_image_channels(view, n.inputs[1], C)) {
            reorder_in(n.inputs[1], C);
            ++ctx.fusion_counts["per-channel operand reordered in"];
          }
          ok = is_blocked(n.inputs[1]) && blocked[n.inputs[1]].channels == C;
        }
        if (ok) {
          n.inputs[0] = blocked[n.inputs[0]].name;
          if (binary.count(n.op_type)) n.inputs[1] = blocked[n.inputs[1]].name;
          make_blocked(n, C);
          converted = true;
        }
      }
      blocked.emit(view, i, std::move(n), converted);
    }
    return blocked.finish(g);
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_nchwc_layout() { return std::make_unique<NchwcLayout>(); }

}  // namespace onyx
