#include "runtime/function_expansion.h"

#include <onnx/defs/schema.h>

#include <map>

#include "onnx/loader.h"
#include "onnx/tensor_proto.h"
#include "onnx/writer.h"

namespace onyx {

namespace {

// Builds the FunctionProto the spec gives `node` at the model's opset, if any.
std::optional<onnx::FunctionProto> schema_function(const Node& node, const Model& model,
                                                   const std::unordered_map<std::string, TypeInfo>& value_types) {
  int64_t opset = model.opset(node.domain);
  if (opset <= 0) return std::nullopt;
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(opset), node.domain);
  if (!schema) return std::nullopt;
  if (schema->HasFunction()) return *schema->GetFunction();
  if (!schema->HasContextDependentFunction()) return std::nullopt;
  onnx::NodeProto np;
  node_to_proto(node, &np);
  std::vector<onnx::TypeProto> input_types;
  for (const std::string& in : node.inputs) {
    onnx::TypeProto tp;
    auto it = value_types.find(in);
    if (!in.empty() && it != value_types.end()) type_to_proto(it->second, &tp);
    input_types.push_back(tp);
  }
  onnx::FunctionBodyBuildContextImpl ctx(np, input_types);
  onnx::FunctionProto fp;
  try {
    if (!schema->BuildContextDependentFunction(ctx, fp)) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;  // the builder needs type information we do not have
  }
  return fp;
}

// One call's copy of a function body: formal inputs and outputs become the call's names,
// every other name gets a prefix unique to the call (in nested If / Loop / Scan graphs
// too, which read the body's values), and attribute references take the caller's
// attributes (or the function's defaults), also inside nested graphs.
class Instantiation {
 public:
  Instantiation(const Function& fn, const Node& call, int unique_id) : fn_(fn), call_(call) {
    for (size_t i = 0; i < fn.inputs.size(); ++i) rename_[fn.inputs[i]] = i < call.inputs.size() ? call.inputs[i] : "";
    for (size_t i = 0; i < fn.outputs.size(); ++i)
      rename_[fn.outputs[i]] = i < call.outputs.size() ? call.outputs[i] : "";
    prefix_ = (call.name.empty() ? call.op_type : call.name) + "__fn" + std::to_string(unique_id) + "__";
  }

  std::vector<Node> nodes() const {
    std::vector<Node> out;
    int k = 0;
    for (const Node& body : fn_.nodes) {
      Node n = body;
      n.name = prefix_ + (body.name.empty() ? std::to_string(k) : body.name);
      ++k;
      bind(n);
      out.push_back(std::move(n));
    }
    return out;
  }

 private:
  std::string mapped(const std::string& name) const {
    if (name.empty()) return name;
    auto it = rename_.find(name);
    return it != rename_.end() ? it->second : prefix_ + name;
  }

  // Renames n's values and resolves its attribute references, nested graphs included.
  void bind(Node& n) const {
    for (auto& in : n.inputs) in = mapped(in);
    for (auto& o : n.outputs) o = mapped(o);
    std::map<std::string, Attribute> attrs;
    for (auto& [key, a] : n.attributes) {
      if (!a.ref_attr_name.empty()) {
        // A reference to an attribute the caller omits (and that has no default)
        // leaves the body node's attribute unset, as the spec says.
        if (const Attribute* given = call_.attr(a.ref_attr_name)) {
          attrs[key] = *given;
        } else {
          auto def = fn_.attribute_defaults.find(a.ref_attr_name);
          if (def == fn_.attribute_defaults.end()) continue;
          attrs[key] = def->second;
        }
        attrs[key].ref_attr_name.clear();
        continue;
      }
      Attribute copy = a;
      if (copy.g) copy.g = bound_graph(*copy.g);
      for (auto& sub : copy.graphs) sub = bound_graph(*sub);
      attrs[key] = std::move(copy);
    }
    n.attributes = std::move(attrs);
  }

  std::shared_ptr<Graph> bound_graph(const Graph& g) const {
    auto out = std::make_shared<Graph>(g);
    for (auto& vi : out->inputs) vi.name = mapped(vi.name);
    for (auto& vi : out->outputs) vi.name = mapped(vi.name);
    for (auto& vi : out->value_infos) vi.name = mapped(vi.name);
    out->initializers.clear();
    for (auto& name : out->initializer_order) {
      std::string renamed = mapped(name);
      out->initializers[renamed] = g.initializers.at(name);
      name = renamed;
    }
    for (auto& n : out->nodes) bind(n);
    return out;
  }

  const Function& fn_;
  const Node& call_;
  std::map<std::string, std::string> rename_;
  std::string prefix_;
};

std::vector<Node> instantiate(const Function& fn, const Node& call, int unique_id) {
  return Instantiation(fn, call, unique_id).nodes();
}

}  // namespace

std::optional<std::vector<Node>> expand_function(const Node& node, const Model& model,
                                                 const std::unordered_map<std::string, TypeInfo>& value_types,
                                                 int unique_id) {
  for (const Function& f : model.functions)
    if (f.name == node.op_type && f.domain == node.domain) return instantiate(f, node, unique_id);
  auto fp = schema_function(node, model, value_types);
  if (!fp) return std::nullopt;
  Function f = function_from_proto(*fp, model.path);
  // Declared defaults of the op's attributes apply when the caller omits them.
  int64_t opset = model.opset(node.domain);
  if (const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(opset), node.domain)) {
    for (const auto& [name, attr] : schema->attributes())
      if (attr.default_value.has_type() || attr.default_value.ints_size() || attr.default_value.floats_size()) {
        onnx::NodeProto tmp;
        *tmp.add_attribute() = attr.default_value;
        tmp.mutable_attribute(0)->set_name(name);
        tmp.set_op_type("Tmp");
        Node parsed = node_from_proto(tmp, model.path);
        if (auto* a = parsed.attr(name)) f.attribute_defaults[name] = *a;
      }
  }
  return instantiate(f, node, unique_id);
}

}  // namespace onyx
