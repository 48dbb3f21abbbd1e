#include "onnx/shape_inference.h"

#include <onnx/shape_inference/implementation.h>

#include <unordered_set>

#include "onnx/tensor_proto.h"
#include "onnx/writer.h"

namespace onyx {

namespace {

// Inference reads the values of small constants (shapes, axes); large weights
// only need their type and shape, so they travel as typed graph inputs.
constexpr size_t kInlineBytes = 4096;

void add_typed_input(onnx::GraphProto* g, const std::string& name, const Tensor& t) {
  auto* vi = g->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(t.dtype()));
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.shape()) shape->add_dim()->set_dim_value(d);
}

// Whether every value the graph's nodes (and their subgraphs') read has a
// type, given the names already typed in enclosing scopes.
bool every_input_typed(const onnx::GraphProto& g, std::unordered_set<std::string> typed = {}) {
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) typed.insert(vi.name());
  };
  for (auto& vi : g.input()) add(vi);
  for (auto& vi : g.value_info()) add(vi);
  for (auto& vi : g.output()) add(vi);
  for (auto& t : g.initializer()) typed.insert(t.name());
  for (auto& n : g.node()) {
    for (auto& in : n.input())
      if (!in.empty() && !typed.count(in)) return false;
    for (auto& a : n.attribute()) {
      if (a.has_g() && !every_input_typed(a.g(), typed)) return false;
      for (auto& sub : a.graphs())
        if (!every_input_typed(sub, typed)) return false;
    }
  }
  return true;
}

}  // namespace

bool infer_shapes(Model& model) {
  onnx::ModelProto mp;
  mp.set_ir_version(std::max<int64_t>(model.ir_version, 4));
  for (auto& [domain, version] : model.opset_imports) {
    auto* op = mp.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  const Graph& g = model.graph;
  onnx::GraphProto* gp = mp.mutable_graph();
  gp->set_name(g.name);
  std::unordered_set<std::string> declared;
  for (auto& vi : g.inputs) declared.insert(vi.name);
  try {
    for (auto& n : g.nodes) node_to_proto(n, gp->add_node());
    for (auto& vi : g.inputs) {
      auto* p = gp->add_input();
      p->set_name(vi.name);
      if (vi.type.kind != TypeInfo::Kind::Unknown) type_to_proto(vi.type, p->mutable_type());
    }
    for (auto& name : g.initializer_order) {
      const Tensor& t = g.initializers.at(name);
      if (t.dtype() != DataType::String && t.nbytes() > kInlineBytes) {
        if (!declared.count(name)) add_typed_input(gp, name, t);
        continue;
      }
      auto* tp = gp->add_initializer();
      tensor_to_proto(t, tp);
      tp->set_name(name);
    }
    for (auto& vi : g.outputs) {
      auto* p = gp->add_output();
      p->set_name(vi.name);
      if (vi.type.kind != TypeInfo::Kind::Unknown) type_to_proto(vi.type, p->mutable_type());
    }
    onnx::ShapeInferenceOptions types_only(false, 0, false);
    onnx::shape_inference::InferShapes(mp, onnx::OpSchemaRegistry::Instance(), types_only);
    // Data propagation (shape values through Shape/Gather/Concat...) in
    // Debian's libonnx 1.12 dereferences the input type unchecked, so it
    // crashes on a Shape of a value nothing typed (the output of a
    // TreeEnsembleClassifier-1 or a custom op). It runs, as a second pass,
    // only when the first pass typed every value a node reads.
    if (every_input_typed(mp.graph())) {
      onnx::ShapeInferenceOptions with_values(false, 0, true);
      onnx::shape_inference::InferShapes(mp, onnx::OpSchemaRegistry::Instance(), with_values);
    }
  } catch (const std::exception&) {
    return false;  // inference is an optimization aid; a model it cannot handle still runs
  }
  std::vector<ValueInfo> infos;
  for (auto& vi : mp.graph().value_info()) infos.push_back({vi.name(), type_from_proto(vi.type())});
  model.graph.value_infos = std::move(infos);
  return true;
}

}  // namespace onyx
