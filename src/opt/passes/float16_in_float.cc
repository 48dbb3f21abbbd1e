// Float16 models compute in float32, as ONNX Runtime's CPU provider runs
// them: it has float kernels only, so it casts around every float16 node and
// then removes the casts that meet (float -> float16 -> float included). A
// model converted to float16 for a GPU (onnxconverter-common's
// convert_float_to_float16) otherwise ran every Conv, Add and Relu on the
// slow element-by-element float16 paths, 7-30x onnxruntime's time, and none
// of the float fusions or layouts applied.
//
// The ai.onnx nodes that read or write float16 tensors take float tensors
// instead: float16 constants are widened once (exact), float16 graph inputs
// and the values of nodes left alone pass through a Cast to float, and float16
// graph outputs (and what nodes left alone read) through a Cast back. A
// Cast to float16 whose result feeds widened nodes is skipped (they read its
// float input), as onnxruntime's cast removal does. Left alone: Casts
// themselves, nodes with subgraphs, sequences or optionals, random ops and
// ops whose output type an attribute names, other domains, and nodes whose
// types inference did not find.
#include <algorithm>
#include <unordered_map>

#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

bool is_half(const TypeInfo* t) {
  return t && t->kind == TypeInfo::Kind::Tensor && t->elem_type == DataType::Float16;
}

bool known_tensor(const TypeInfo* t) {
  return t && t->kind == TypeInfo::Kind::Tensor && t->elem_type != DataType::Undefined;
}

// A Cast of `from` to `type`, writing `to`.
Node cast_node(const std::string& name, const std::string& from, const std::string& to, DataType type) {
  Node c = make_node("Cast", name, {from}, {to});
  c.attributes["to"] = int_attr(static_cast<int64_t>(type));
  return c;
}

Tensor widen(const Tensor& half, PassContext& ctx) {
  if (ctx.evaluate) {  // the CPU Cast kernel: vectorized
    if (auto out = ctx.evaluate(cast_node("widen", "x", "y", DataType::Float), {half}); out && out->size() == 1)
      return (*out)[0];
  }
  Tensor wide(DataType::Float, half.shape());
  for (int64_t i = 0; i < half.numel(); ++i) wide.data<float>()[i] = static_cast<float>(half.float_at(i));
  return wide;
}

// Whether node n computes in float in place of float16.
bool widens(const Node& n, const GraphView& view) {
  if (!n.domain.empty() || n.op_type == "Cast" || n.op_type == "CastLike" || n.has_subgraphs()) return false;
  if (n.op_type.rfind("Random", 0) == 0 || n.op_type == "Bernoulli" || n.op_type == "Multinomial" ||
      n.op_type.rfind("Sequence", 0) == 0 || n.op_type.rfind("Optional", 0) == 0 ||
      n.op_type == "SplitToSequence" || n.op_type == "ConcatFromSequence")
    return false;
  for (const char* typed : {"dtype", "output_dtype", "to"})
    if (n.attr(typed)) return false;
  bool half = false;
  for (const auto* names : {&n.inputs, &n.outputs})
    for (const std::string& v : *names) {
      if (v.empty()) continue;
      const TypeInfo* t = view.type_of(v);
      if (!known_tensor(t)) return false;
      half = half || is_half(t);
    }
  if (n.op_type == "Constant" || n.op_type == "ConstantOfShape") {
    const Attribute* value = n.attr("value");
    return value && value->type == AttrType::Tensor && value->t.dtype() == DataType::Float16;
  }
  return half;
}

class Float16InFloat final : public GraphPass {
 public:
  std::string name() const override { return "float16_in_float"; }
  bool run(Graph& g, PassContext& ctx) override {
    GraphView view(g);
    std::vector<char> wide(g.nodes.size(), 0);
    bool any = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) any |= (wide[i] = widens(g.nodes[i], view)) != 0;
    if (!any) return false;

    UniqueNames names(g);
    // Inserted casts: at the front (reading graph inputs), or after the node whose output they read.
    std::vector<Node> front;
    std::vector<std::vector<Node>> after(g.nodes.size());
    auto place = [&](Node cast, int producer) {
      (producer >= 0 ? after[producer] : front).push_back(std::move(cast));
    };
    std::unordered_map<std::string, std::string> float_name;  // float16 value -> its float version
    std::vector<ValueInfo> new_infos;
    auto float_info = [&](const std::string& half, const std::string& f) {
      ValueInfo vi{f, *view.type_of(half)};
      vi.type.elem_type = DataType::Float;
      new_infos.push_back(std::move(vi));
    };
    // The float version of every float16 value a widened node reads or writes.
    auto float_version = [&](const std::string& v) -> const std::string& {
      auto it = float_name.find(v);
      if (it != float_name.end()) return it->second;
      const int p = view.producer(v);
      std::string f;
      if (p >= 0 && wide[p]) {
        f = names.make(v + "_f32");  // the producer writes it; see below for readers of v
        float_info(v, f);
      } else if (const Tensor* c = view.constant(v)) {
        f = names.make(v + "_f32");
        g.initializers.emplace(f, widen(*c, ctx));
        g.initializer_order.push_back(f);
      } else if (p >= 0 && g.nodes[p].op_type == "Cast" && g.nodes[p].domain.empty() &&
                 view.type_of(g.nodes[p].inputs[0]) &&
                 view.type_of(g.nodes[p].inputs[0])->elem_type == DataType::Float) {
        f = g.nodes[p].inputs[0];  // a Cast float -> float16: read what it rounds
      } else {
        f = names.make(v + "_f32");
        float_info(v, f);
        place(cast_node(names.make(f + "_cast"), v, f, DataType::Float), p);
      }
      return float_name.emplace(v, f).first->second;
    };

    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!wide[i]) continue;
      Node& n = g.nodes[i];
      for (std::string& in : n.inputs)
        if (!in.empty() && is_half(view.type_of(in))) in = float_version(in);
      for (std::string& out : n.outputs) {
        if (out.empty() || !is_half(view.type_of(out))) continue;
        const std::string half = out;
        out = float_version(half);
        // Casts read the float value directly; a graph output and the other readers get float16 back.
        bool half_readers = view.is_graph_output(half);
        for (int c : view.consumers(half)) {
          Node& reader = g.nodes[c];
          if (wide[c]) continue;  // renamed when its turn comes
          if (reader.op_type == "Cast" && reader.domain.empty()) {
            for (std::string& in : reader.inputs)
              if (in == half) in = out;
          } else {
            half_readers = true;
          }
        }
        if (half_readers) place(cast_node(names.make(half + "_cast"), out, half, DataType::Float16), static_cast<int>(i));
      }
      // Constant / ConstantOfShape: the float16 value itself
      if (auto a = n.attributes.find("value");
          a != n.attributes.end() && a->second.type == AttrType::Tensor && a->second.t.dtype() == DataType::Float16)
        a->second.t = widen(a->second.t, ctx);
    }
    std::vector<Node> nodes = std::move(front);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      nodes.push_back(std::move(g.nodes[i]));
      for (Node& c : after[i]) nodes.push_back(std::move(c));
    }
    g.nodes = std::move(nodes);
    for (auto& vi : new_infos) g.value_infos.push_back(std::move(vi));
    ctx.fusion_counts["float16 computed in float"] += static_cast<int>(std::count(wide.begin(), wide.end(), 1));
    return true;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_float16_in_float() { return std::make_unique<Float16InFloat>(); }

}  // namespace onyx
