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

std::vector<Node> instantiate(const Function& fn, const Node& call, int unique_id) {
  std::map<std::string, std::string> rename;
  for (size_t i = 0; i < fn.inputs.size(); ++i) rename[fn.inputs[i]] = i < call.inputs.size() ? call.inputs[i] : "";
  for (size_t i = 0; i < fn.outputs.size(); ++i) rename[fn.outputs[i]] = i < call.outputs.size() ? call.outputs[i] : "";
  std::string prefix = (call.name.empty() ? call.op_type : call.name) + "__fn" + std::to_string(unique_id) + "__";
  auto mapped = [&](const std::string& name) -> std::string {
    if (name.empty()) return name;
    auto it = rename.find(name);
    return it != rename.end() ? it->second : prefix + name;
  };
  std::vector<Node> out;
  int k = 0;
  for (const Node& body : fn.nodes) {
    Node n = body;
    n.name = prefix + (body.name.empty() ? std::to_string(k) : body.name);
    ++k;
    for (auto& in : n.inputs) in = mapped(in);
    for (auto& o : n.outputs) o = mapped(o);
    std::map<std::string, Attribute> attrs;
    for (auto& [key, a] : n.attributes) {
      if (a.ref_attr_name.empty()) {
        attrs[key] = a;
        continue;
      }
      // A reference to an attribute the caller omits (and that has no default)
      // leaves the body node's attribute unset, as the spec says.
      if (const Attribute* given = call.attr(a.ref_attr_name)) {
        attrs[key] = *given;
      } else {
        auto def = fn.attribute_defaults.find(a.ref_attr_name);
        if (def == fn.attribute_defaults.end()) continue;
        attrs[key] = def->second;
      }
      attrs[key].ref_attr_name.clear();
    }
    n.attributes = std::move(attrs);
    out.push_back(std::move(n));
  }
  return out;
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
