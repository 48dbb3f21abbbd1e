#include "onnx/writer.h"

#include <google/protobuf/unknown_field_set.h>

#include <fstream>

#include "onnx/tensor_proto.h"

namespace onyx {

static onnx::AttributeProto::AttributeType proto_attribute_type(AttrType type) {
  using AP = onnx::AttributeProto;
  switch (type) {
    case AttrType::Float: return AP::FLOAT;
    case AttrType::Int: return AP::INT;
    case AttrType::String: return AP::STRING;
    case AttrType::Tensor: return AP::TENSOR;
    case AttrType::Graph: return AP::GRAPH;
    case AttrType::Floats: return AP::FLOATS;
    case AttrType::Ints: return AP::INTS;
    case AttrType::Strings: return AP::STRINGS;
    case AttrType::Tensors: return AP::TENSORS;
    case AttrType::Graphs: return AP::GRAPHS;
    case AttrType::TypeProto: return AP::TYPE_PROTO;
    default: return AP::UNDEFINED;
  }
}

void attribute_to_proto(const std::string& name, const Attribute& a, onnx::AttributeProto* p) {
  p->set_name(name);
  p->set_type(proto_attribute_type(a.type));
  if (!a.ref_attr_name.empty()) {
    // A reference to the calling node's attribute carries its type but no value.
    p->set_ref_attr_name(a.ref_attr_name);
    return;
  }
  switch (a.type) {
    case AttrType::Float: p->set_f(a.f); break;
    case AttrType::Int: p->set_i(a.i); break;
    case AttrType::String: p->set_s(a.s); break;
    case AttrType::Tensor: tensor_to_proto(a.t, p->mutable_t()); break;
    case AttrType::Graph: graph_to_proto(*a.g, p->mutable_g()); break;
    case AttrType::Floats: for (float f : a.floats) p->add_floats(f); break;
    case AttrType::Ints: for (int64_t i : a.ints) p->add_ints(i); break;
    case AttrType::Strings: for (auto& s : a.strings) p->add_strings(s); break;
    case AttrType::Tensors: for (auto& t : a.tensors) tensor_to_proto(t, p->add_tensors()); break;
    case AttrType::Graphs: for (auto& g : a.graphs) graph_to_proto(*g, p->add_graphs()); break;
    case AttrType::TypeProto: type_to_proto(a.type_info, p->mutable_tp()); break;
    default: break;
  }
}

void node_to_proto(const Node& n, onnx::NodeProto* p) {
  p->set_name(n.name);
  p->set_op_type(n.op_type);
  p->set_domain(n.domain);
  for (auto& i : n.inputs) p->add_input(i);
  for (auto& o : n.outputs) p->add_output(o);
  for (auto& [k, a] : n.attributes) attribute_to_proto(k, a, p->add_attribute());
}

static void value_info_to_proto(const ValueInfo& vi, onnx::ValueInfoProto* p) {
  p->set_name(vi.name);
  if (vi.type.kind != TypeInfo::Kind::Unknown) type_to_proto(vi.type, p->mutable_type());
}

void graph_to_proto(const Graph& g, onnx::GraphProto* p) {
  p->set_name(g.name);
  // ONNX requires producers before consumers; a model read out of order (or
  // rewritten) is written sorted.
  for (size_t i : topological_order(g)) node_to_proto(g.nodes[i], p->add_node());
  for (auto& vi : g.inputs) value_info_to_proto(vi, p->add_input());
  for (auto& vi : g.outputs) value_info_to_proto(vi, p->add_output());
  for (auto& vi : g.value_infos) value_info_to_proto(vi, p->add_value_info());
  for (auto& name : g.initializer_order) {
    auto* t = p->add_initializer();
    tensor_to_proto(g.initializers.at(name), t);
    t->set_name(name);
  }
}

static void function_to_proto(const Function& f, onnx::FunctionProto* p) {
  p->set_name(f.name);
  p->set_domain(f.domain);
  for (auto& i : f.inputs) p->add_input(i);
  for (auto& o : f.outputs) p->add_output(o);
  for (auto& name : f.attribute_names) {
    auto def = f.attribute_defaults.find(name);
    if (def == f.attribute_defaults.end()) {
      p->add_attribute(name);
      continue;
    }
    onnx::AttributeProto ap;
    attribute_to_proto(name, def->second, &ap);
    p->mutable_unknown_fields()->AddLengthDelimited(kFunctionAttributeProtoField, ap.SerializeAsString());
  }
  for (auto& n : f.nodes) node_to_proto(n, p->add_node());
  for (auto& [d, v] : f.opset_imports) {
    auto* op = p->add_opset_import();
    op->set_domain(d);
    op->set_version(v);
  }
}

void model_to_proto(const Model& m, onnx::ModelProto* p) {
  p->set_ir_version(m.ir_version);
  p->set_producer_name(m.producer_name);
  p->set_producer_version(m.producer_version);
  p->set_domain(m.domain);
  p->set_model_version(m.model_version);
  p->set_doc_string(m.doc_string);
  for (auto& [d, v] : m.opset_imports) {
    auto* op = p->add_opset_import();
    op->set_domain(d);
    op->set_version(v);
  }
  for (auto& [k, v] : m.metadata) {
    auto* kv = p->add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  graph_to_proto(m.graph, p->mutable_graph());
  // Calls to model-local functions survive optimization (they expand when the
  // session plans), so the functions travel with the saved model.
  for (auto& f : m.functions) function_to_proto(f, p->add_functions());
}

namespace {

// Moves large initializers of `g` (and its subgraphs) into `data`, recording
// location/offset/length in each TensorProto.
void externalize(onnx::GraphProto* g, const std::string& location, std::ofstream& data, size_t& offset) {
  for (auto& t : *g->mutable_initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() < 1024) continue;
    size_t aligned = (offset + 63) / 64 * 64;  // keep weights aligned for zero-copy mapping
    std::string pad(aligned - offset, '\0');
    data.write(pad.data(), static_cast<std::streamsize>(pad.size()));
    data.write(t.raw_data().data(), static_cast<std::streamsize>(t.raw_data().size()));
    auto kv = [&](const char* k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    kv("location", location);
    kv("offset", std::to_string(aligned));
    kv("length", std::to_string(t.raw_data().size()));
    offset = aligned + t.raw_data().size();
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
  }
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) externalize(a.mutable_g(), location, data, offset);
      for (auto& sg : *a.mutable_graphs()) externalize(&sg, location, data, offset);
    }
}

size_t weight_bytes(const Graph& g) {
  size_t n = 0;
  for (auto& [name, t] : g.initializers) n += t.nbytes();
  return n;
}

}  // namespace

void save_model(const Model& model, const std::string& path, size_t external_threshold) {
  onnx::ModelProto proto;
  model_to_proto(model, &proto);
  if (weight_bytes(model.graph) > external_threshold) {
    std::string location = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1) + ".data";
    std::ofstream data(path + ".data", std::ios::binary);
    if (!data) fail(ErrorCode::NoSuchFile, "cannot write '" + path + ".data'");
    size_t offset = 0;
    externalize(proto.mutable_graph(), location, data, offset);
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(ErrorCode::NoSuchFile, "cannot write optimized model '" + path + "'");
  if (!proto.SerializeToOstream(&out)) fail(ErrorCode::Fail, "failed to write '" + path + "'");
}

}  // namespace onyx
