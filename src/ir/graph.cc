#include "ir/graph.h"

namespace onyx {

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::Float: return "float";
    case AttrType::Int: return "int";
    case AttrType::String: return "string";
    case AttrType::Tensor: return "tensor";
    case AttrType::Graph: return "graph";
    case AttrType::Floats: return "floats";
    case AttrType::Ints: return "ints";
    case AttrType::Strings: return "strings";
    case AttrType::Tensors: return "tensors";
    case AttrType::Graphs: return "graphs";
    case AttrType::TypeProto: return "type_proto";
    case AttrType::TypeProtos: return "type_protos";
    case AttrType::Undefined: return "undefined";
  }
  return "undefined";
}

std::string Node::describe() const {
  std::string d = domain.empty() ? op_type : domain + "." + op_type;
  return "'" + name + "' (" + d + ")";
}

bool Node::has_subgraphs() const {
  for (auto& [k, a] : attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

std::string canonical_domain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

int64_t Model::opset(const std::string& d) const {
  auto it = opset_imports.find(canonical_domain(d));
  return it == opset_imports.end() ? 0 : it->second;
}

}  // namespace onyx
