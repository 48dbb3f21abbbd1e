#include "onnx/shape_inference.h"

#include <algorithm>
#include <atomic>

#include <onnx/shape_inference/implementation.h>

#include <deque>
#include <map>
#include <unordered_map>
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

// Node-by-node inference with libonnx's per-op functions, skipping any node
// that reads a value nothing typed. Debian's libonnx (1.12) has inference
// functions that dereference an input's type unchecked (LabelEncoder after
// ArrayFeatureExtractor, Shape's data propagation after a
// TreeEnsembleClassifier-1), so InferShapes segfaults on such graphs; this
// pass cannot, and tells whether InferShapes may run.
class GuardedInference {
 public:
  // `source`: the Onyx graph the proto graph was written from, node for node, and `evaluate`
  // (may be null): with both, small values are computed as inference goes (propagate()).
  explicit GuardedInference(const std::map<std::string, int64_t>& opsets, const GuardedInference* outer = nullptr,
                            const Graph* source = nullptr, const NodeEvaluator* evaluate = nullptr)
      : opsets_(opsets), source_(source), evaluate_(evaluate && *evaluate ? evaluate : nullptr) {
    if (!outer) return;
    types_ = outer->types_;
    assumed_ = outer->assumed_;
    data_ = outer->data_;
  }

  // Types the graph's values; false when some node (or subgraph node) reads
  // a value without a type. Outputs of control-flow nodes count as typed
  // (libonnx types them from their bodies, which are checked too) but get
  // no type here.
  bool run(onnx::GraphProto& g) {
    for (auto& vi : g.input())
      if (vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) set_type(vi.name(), vi.type());
    for (auto& t : g.initializer()) {
      onnx::TypeProto tp;
      tp.mutable_tensor_type()->set_elem_type(t.data_type());
      auto* shape = tp.mutable_tensor_type()->mutable_shape();
      for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
      set_type(t.name(), tp);
      data_[t.name()] = &t;
    }
    bool all_typed = true;
    const bool propagating = evaluate_ && source_ && source_->nodes.size() == static_cast<size_t>(g.node_size());
    for (int i = 0; i < g.node_size(); ++i) {
      onnx::NodeProto& n = *g.mutable_node(i);
      bool reads_untyped = false;
      for (auto& in : n.input()) reads_untyped |= !in.empty() && !types_.count(in) && !assumed_.count(in);
      if (reads_untyped) {
        all_typed = false;
        continue;
      }
      if (has_subgraph(n)) {
        for (auto& a : *n.mutable_attribute()) {
          if (a.has_g()) all_typed &= run_nested(*a.mutable_g());
          for (auto& sub : *a.mutable_graphs()) all_typed &= run_nested(sub);
        }
        for (auto& out : n.output()) assumed_.insert(out);
        continue;
      }
      infer(n);
      if (propagating) propagate(source_->nodes[static_cast<size_t>(i)]);
    }
    return all_typed;
  }

  // Whether a node holding a subgraph was passed over (its outputs only assumed typed).
  bool saw_control_flow() const { return !assumed_.empty(); }

  // Whether a node was left untyped for an axis InferShapes would crash on.
  bool saw_axis_out_of_range() const { return saw_axis_out_of_range_; }

  // The types found for node outputs, as value infos.
  std::vector<ValueInfo> value_infos() const {
    std::vector<ValueInfo> out;
    for (auto& name : inferred_) out.push_back({name, type_from_proto(*types_.at(name))});
    return out;
  }

 private:
  bool run_nested(onnx::GraphProto& g) {
    GuardedInference nested(opsets_, this);
    const bool all_typed = nested.run(g);
    saw_axis_out_of_range_ |= nested.saw_axis_out_of_range_;
    return all_typed;
  }

  static bool has_subgraph(const onnx::NodeProto& n) {
    for (auto& a : n.attribute())
      if (a.has_g() || a.graphs_size() > 0) return true;
    return false;
  }

  void set_type(const std::string& name, const onnx::TypeProto& t) {
    storage_.push_back(t);
    types_[name] = &storage_.back();
  }

  // The value of a small node whose inputs are all known: a Shape (or Size) of
  // a value with static dims, or a deterministic op on known small values, run
  // by `evaluate`. Known values reach the per-op inference as constant input
  // data, so a Reshape, Pad, Expand or Range they drive gets a static shape.
  void propagate(const Node& node) {
    if (node.is_random() || node.has_subgraphs() || !small_static_outputs(node)) return;
    std::optional<std::vector<Tensor>> out;
    if ((node.op_type == "Shape" || node.op_type == "Size") && node.domain.empty() && node.inputs.size() == 1) {
      out = shape_value(node);
    } else {
      std::vector<Tensor> inputs;
      for (auto& in : node.inputs) {
        if (in.empty()) {
          inputs.emplace_back();
          continue;
        }
        const Tensor* t = known_value(in);
        if (!t) return;
        inputs.push_back(*t);
      }
      out = (*evaluate_)(node, inputs);
    }
    if (!out) return;
    for (size_t k = 0; k < out->size() && k < node.outputs.size(); ++k) remember(node.outputs[k], (*out)[k]);
  }

  // Whether inference gave every output a static shape of at most kInlineBytes (so a
  // ConstantOfShape, Range or Expand of a huge size from tiny inputs is never run here).
  bool small_static_outputs(const Node& node) const {
    for (auto& out : node.outputs) {
      if (out.empty()) continue;
      auto it = types_.find(out);
      if (it == types_.end() || !it->second->has_tensor_type() || !it->second->tensor_type().has_shape()) return false;
      const auto& tt = it->second->tensor_type();
      uint64_t bytes = dtype_size(static_cast<DataType>(tt.elem_type()));
      if (bytes == 0 || tt.elem_type() == onnx::TensorProto::STRING) return false;
      for (auto& d : tt.shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) return false;
        bytes *= static_cast<uint64_t>(d.dim_value());
        if (bytes > kInlineBytes) return false;
      }
    }
    return true;
  }

  std::optional<std::vector<Tensor>> shape_value(const Node& node) const {
    auto it = types_.find(node.inputs[0]);
    if (it == types_.end() || !it->second->has_tensor_type() || !it->second->tensor_type().has_shape()) return {};
    Shape dims;
    for (auto& d : it->second->tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return {};
      dims.push_back(d.dim_value());
    }
    return std::vector<Tensor>{shape_node_value(node, dims)};
  }

  // A known small value: computed here, or a small initializer (decoded once).
  const Tensor* known_value(const std::string& name) {
    if (auto it = values_.find(name); it != values_.end()) return &it->second;
    auto it = data_.find(name);
    if (it == data_.end()) return nullptr;
    try {
      return &values_.emplace(name, tensor_from_proto(*it->second, nullptr)).first->second;
    } catch (const std::exception&) {
      return nullptr;
    }
  }

  // A computed value becomes constant data and the exact type of its name.
  void remember(const std::string& name, const Tensor& t) {
    if (name.empty() || !t.defined() || t.dtype() == DataType::String || t.nbytes() > kInlineBytes) return;
    onnx::TensorProto& proto = value_protos_.emplace_back();
    tensor_to_proto(t, &proto);
    proto.set_name(name);
    data_[name] = &proto;
    values_.emplace(name, t);
    onnx::TypeProto tp;
    tp.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t.dtype()));
    auto* shape = tp.mutable_tensor_type()->mutable_shape();
    for (int64_t d : t.shape()) shape->add_dim()->set_dim_value(d);
    if (!types_.count(name)) inferred_.push_back(name);
    set_type(name, tp);
  }

  void infer(onnx::NodeProto& n) {
    std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto it = opsets_.find(domain);
    if (it == opsets_.end()) return;
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(it->second), domain);
    // Ops defined by a function body and given no inference function of their own in libonnx
    // 1.12 (LessOrEqual, with which HF decoders build their causal masks, GreaterOrEqual, ...)
    // are typed through the body, as InferShapes does; left untyped, every value after them
    // (the whole network) was.
    const bool by_body = schema && !schema->has_type_and_shape_inference_function() && schema->HasFunction();
    if (!schema || (!schema->has_type_and_shape_inference_function() && !by_body)) return;
    if (!axes_within_rank(n)) {
      saw_axis_out_of_range_ = true;
      return;
    }
    onnx::shape_inference::InferenceContextImpl ctx(n, types_, data_, {});
    try {
      if (by_body)
        onnx::shape_inference::InferShapeForFunctionNode(*schema->GetFunction(), onnx::OpSchemaRegistry::Instance(),
                                                         ctx);
      else
        schema->GetTypeAndShapeInferenceFunction()(ctx);
    } catch (const std::exception&) {
      return;
    }
    for (int i = 0; i < n.output_size(); ++i) {
      const onnx::TypeProto* t = ctx.getOutputType(static_cast<size_t>(i));
      if (n.output(i).empty() || !t || t->value_case() == onnx::TypeProto::VALUE_NOT_SET) continue;
      set_type(n.output(i), *t);
      inferred_.push_back(n.output(i));
    }
  }

  // libonnx 1.12's inference functions index shapes by an axis attribute
  // unchecked (LayerNormalization with axis -7 and a Mean output segfaults).
  // A node whose axis / axes lie past its first input's rank (+ 1, or + the
  // count of axes, for the ops that insert dimensions) stays untyped; its
  // kernel reports the axis.
  bool axes_within_rank(const onnx::NodeProto& n) const {
    if (n.input_size() == 0) return true;
    auto it = types_.find(n.input(0));
    if (it == types_.end() || !it->second->has_tensor_type() || !it->second->tensor_type().has_shape()) return true;
    const int64_t rank = it->second->tensor_type().shape().dim_size();
    for (auto& a : n.attribute()) {
      const bool one = a.name() == "axis" && a.type() == onnx::AttributeProto::INT;
      if (!one && !(a.name() == "axes" && a.type() == onnx::AttributeProto::INTS)) continue;
      const int64_t reach = rank + (one ? 1 : a.ints_size());
      auto inside = [&](int64_t axis) { return axis >= -reach && axis < reach; };
      if (one ? !inside(a.i()) : !std::all_of(a.ints().begin(), a.ints().end(), inside)) return false;
    }
    return true;
  }

  const std::map<std::string, int64_t>& opsets_;
  const Graph* source_ = nullptr;
  const NodeEvaluator* evaluate_ = nullptr;
  std::unordered_map<std::string, Tensor> values_;  // known small values, for propagate()
  std::deque<onnx::TensorProto> value_protos_;      // their data, as data_ points at it
  std::deque<onnx::TypeProto> storage_;  // stable addresses for types_
  std::unordered_map<std::string, onnx::TypeProto*> types_;
  std::unordered_set<std::string> assumed_;
  std::unordered_map<std::string, const onnx::TensorProto*> data_;
  std::vector<std::string> inferred_;  // node outputs given a type, in graph order
  bool saw_axis_out_of_range_ = false;
};

// The inferred types of `inferred` (the graph as given to InferShapes, nodes in the same
// order) into `g`, its subgraphs' included: passes inside If branches and loop bodies need
// them as much as the top level (sdpa_fusion wants its operands' types).
void take_value_infos(const onnx::GraphProto& inferred, Graph& g) {
  g.value_infos.clear();
  for (auto& vi : inferred.value_info()) g.value_infos.push_back({vi.name(), type_from_proto(vi.type())});
  if (inferred.node_size() != static_cast<int>(g.nodes.size())) return;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const onnx::NodeProto& np = inferred.node(static_cast<int>(i));
    for (auto& ap : np.attribute()) {
      auto it = g.nodes[i].attributes.find(ap.name());
      if (it == g.nodes[i].attributes.end()) continue;
      Attribute& a = it->second;
      if (ap.has_g() && a.g) {
        a.g = std::make_shared<Graph>(*a.g);  // subgraphs may be shared with other copies of the model
        take_value_infos(ap.g(), *a.g);
      }
      for (int k = 0; k < ap.graphs_size() && k < static_cast<int>(a.graphs.size()); ++k) {
        a.graphs[k] = std::make_shared<Graph>(*a.graphs[k]);
        take_value_infos(ap.graphs(k), *a.graphs[k]);
      }
    }
  }
}

std::atomic<bool> schemas_built{false};

}  // namespace

void build_schemas() {
  if (schemas_built.load(std::memory_order_acquire)) return;
  // Instance() alone builds nothing: libonnx registers the schemas on the first lookup.
  onnx::OpSchemaRegistry::Schema("Relu", 14, "");
  schemas_built.store(true, std::memory_order_release);
}

std::future<void> prepare_schemas() {
  if (schemas_built.load(std::memory_order_acquire)) return {};
  return std::async(std::launch::async, build_schemas);
}

namespace {

// Known dims of a tensor type; -1 for no shape (or no tensor).
int known_dims(const TypeInfo& t) {
  if (t.kind != TypeInfo::Kind::Tensor || !t.has_shape) return -1;
  return static_cast<int>(std::count_if(t.shape.begin(), t.shape.end(), [](const Dim& d) { return d.value >= 0; }));
}

// Where the probe's propagated values made a type more precise than libonnx's, the probe's.
void prefer_more_known(std::vector<ValueInfo>& infos, const std::vector<ValueInfo>& probe) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < infos.size(); ++i) index.emplace(infos[i].name, i);
  for (const ValueInfo& p : probe) {
    auto it = index.find(p.name);
    if (it == index.end()) infos.push_back(p);
    else if (known_dims(p.type) > known_dims(infos[it->second].type)) infos[it->second].type = p.type;
  }
}

}  // namespace

bool infer_shapes(Model& model) { return infer_shapes(model, NodeEvaluator()); }

bool infer_shapes(Model& model, const NodeEvaluator& evaluate) {
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
    onnx::GraphProto probe = *gp;
    GuardedInference guarded(model.opset_imports, nullptr, &g, &evaluate);
    if (!guarded.run(probe) || guarded.saw_axis_out_of_range()) {
      model.graph.value_infos = guarded.value_infos();
      return true;
    }
    // Data propagation (shape values through Shape/Gather/Concat...) in
    // Debian's libonnx 1.12 dereferences the input type unchecked, so it
    // crashes on a Shape of a value nothing typed (the output of a
    // TreeEnsembleClassifier-1 or a custom op). The guarded pass has shown
    // every node reads typed values, except possibly the outputs of
    // control-flow nodes, which libonnx types from their bodies: only then
    // does a types-only InferShapes confirm it first. Propagation runs on the
    // graph as it was (a first pass's placeholder dims would stick).
    bool safe = !guarded.saw_control_flow();
    if (!safe) {
      onnx::ModelProto typed = mp;
      onnx::ShapeInferenceOptions types_only(false, 0, false);
      onnx::shape_inference::InferShapes(typed, onnx::OpSchemaRegistry::Instance(), types_only);
      safe = every_input_typed(typed.graph());
      if (!safe) mp = std::move(typed);
    }
    if (safe) {
      onnx::ShapeInferenceOptions with_values(false, 0, true);
      onnx::shape_inference::InferShapes(mp, onnx::OpSchemaRegistry::Instance(), with_values);
    }
    take_value_infos(mp.graph(), model.graph);
    if (evaluate) prefer_more_known(model.graph.value_infos, guarded.value_infos());
  } catch (const std::exception&) {
    return false;  // inference is an optimization aid; a model it cannot handle still runs
  }
  return true;
}

}  // namespace onyx
