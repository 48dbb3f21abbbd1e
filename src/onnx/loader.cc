#include "onnx/loader.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <fstream>
#include <sstream>

#include "onnx/tensor_proto.h"

namespace onyx {

namespace {

class GraphReader {
 public:
  GraphReader(const std::string& model_name, ExternalDataFiles* external) : model_(model_name), external_(external) {}

  Graph read_graph(onnx::GraphProto& gp) {
    Graph g;
    g.name = gp.name();
    for (const auto& vi : gp.input()) g.inputs.push_back(read_value_info(vi));
    for (const auto& vi : gp.output()) g.outputs.push_back(read_value_info(vi));
    for (const auto& vi : gp.value_info()) g.value_infos.push_back(read_value_info(vi));
    for (auto& tp : *gp.mutable_initializer()) add_initializer(g, tp.name(), take_tensor_from_proto(tp, external_));
    for (const auto& sp : gp.sparse_initializer())
      add_initializer(g, sp.values().name(), sparse_tensor_from_proto(sp, external_));
    for (auto& np : *gp.mutable_node()) g.nodes.push_back(read_node(np));
    return g;
  }

  Node read_node(onnx::NodeProto& np) {
    Node n;
    n.name = np.name();
    n.op_type = np.op_type();
    n.domain = canonical_domain(np.domain());
    if (n.op_type.empty()) fail(ErrorCode::InvalidGraph, "model '" + model_ + "': node '" + n.name + "' has no op_type");
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (auto& ap : *np.mutable_attribute()) {
      try {
        n.attributes[ap.name()] = read_attribute(ap);
      } catch (const Error& e) {
        fail(e.code(), "model '" + model_ + "', node " + n.describe() + ", attribute '" + ap.name() + "': " + e.what());
      }
    }
    return n;
  }

  Attribute read_attribute(onnx::AttributeProto& ap) {
    Attribute a;
    a.ref_attr_name = ap.ref_attr_name();
    using AP = onnx::AttributeProto;
    AP::AttributeType type = ap.type();
    if (type == AP::UNDEFINED) type = infer_type(ap);  // very old models omit the type
    switch (type) {
      case AP::FLOAT: a.type = AttrType::Float; a.f = ap.f(); break;
      case AP::INT: a.type = AttrType::Int; a.i = ap.i(); break;
      case AP::STRING: a.type = AttrType::String; a.s = ap.s(); break;
      case AP::TENSOR: a.type = AttrType::Tensor; a.t = take_tensor_from_proto(*ap.mutable_t(), external_); break;
      case AP::SPARSE_TENSOR: a.type = AttrType::Tensor; a.t = sparse_tensor_from_proto(ap.sparse_tensor(), external_); break;
      case AP::GRAPH: a.type = AttrType::Graph; a.g = std::make_shared<Graph>(read_graph(*ap.mutable_g())); break;
      case AP::FLOATS: a.type = AttrType::Floats; a.floats.assign(ap.floats().begin(), ap.floats().end()); break;
      case AP::INTS: a.type = AttrType::Ints; a.ints.assign(ap.ints().begin(), ap.ints().end()); break;
      case AP::STRINGS: a.type = AttrType::Strings; a.strings.assign(ap.strings().begin(), ap.strings().end()); break;
      case AP::TENSORS:
        a.type = AttrType::Tensors;
        for (const auto& t : ap.tensors()) a.tensors.push_back(tensor_from_proto(t, external_));
        break;
      case AP::GRAPHS:
        a.type = AttrType::Graphs;
        for (auto& g : *ap.mutable_graphs()) a.graphs.push_back(std::make_shared<Graph>(read_graph(g)));
        break;
      case AP::TYPE_PROTO: a.type = AttrType::TypeProto; a.type_info = type_from_proto(ap.tp()); break;
      default:
        if (!a.ref_attr_name.empty()) break;
        fail(ErrorCode::InvalidGraph, "unsupported attribute type " + std::to_string(static_cast<int>(type)));
    }
    return a;
  }

  ValueInfo read_value_info(const onnx::ValueInfoProto& vi) {
    ValueInfo v;
    v.name = vi.name();
    if (vi.has_type()) v.type = type_from_proto(vi.type());
    return v;
  }

 private:
  static onnx::AttributeProto::AttributeType infer_type(const onnx::AttributeProto& ap) {
    using AP = onnx::AttributeProto;
    if (ap.has_f()) return AP::FLOAT;
    if (ap.has_i()) return AP::INT;
    if (ap.has_s()) return AP::STRING;
    if (ap.has_t()) return AP::TENSOR;
    if (ap.has_g()) return AP::GRAPH;
    if (ap.floats_size()) return AP::FLOATS;
    if (ap.ints_size()) return AP::INTS;
    if (ap.strings_size()) return AP::STRINGS;
    if (ap.tensors_size()) return AP::TENSORS;
    if (ap.graphs_size()) return AP::GRAPHS;
    return AP::UNDEFINED;
  }

  void add_initializer(Graph& g, const std::string& name, Tensor t) {
    if (name.empty()) fail(ErrorCode::InvalidGraph, "model '" + model_ + "': an initializer has no name");
    if (!g.initializers.count(name)) g.initializer_order.push_back(name);
    g.initializers[name] = std::move(t);
  }

  std::string model_;
  ExternalDataFiles* external_;
};

Function read_function(onnx::FunctionProto& fp, GraphReader& reader) {
  Function f;
  f.name = fp.name();
  f.domain = canonical_domain(fp.domain());
  f.inputs.assign(fp.input().begin(), fp.input().end());
  f.outputs.assign(fp.output().begin(), fp.output().end());
  f.attribute_names.assign(fp.attribute().begin(), fp.attribute().end());
  for (auto& np : *fp.mutable_node()) f.nodes.push_back(reader.read_node(np));
  for (const auto& op : fp.opset_import()) f.opset_imports[canonical_domain(op.domain())] = op.version();
  return f;
}

Model model_from_proto(onnx::ModelProto& mp, const std::string& name, const std::string& base_dir) {
  Model m;
  m.path = name;
  m.ir_version = mp.ir_version();
  if (!mp.has_graph())
    fail(ErrorCode::InvalidProtobuf, "model '" + name + "' has no graph: not an ONNX model, or a corrupt one");
  if (m.ir_version < kMinIrVersion)
    fail(ErrorCode::InvalidGraph, "model '" + name + "' has IR version " + std::to_string(m.ir_version) +
                                      "; Onyx supports IR version " + std::to_string(kMinIrVersion) + " and later");
  if (m.ir_version > kMaxIrVersion)
    fail(ErrorCode::InvalidGraph, "model '" + name + "' has IR version " + std::to_string(m.ir_version) +
                                      ", newer than the newest Onyx supports (" + std::to_string(kMaxIrVersion) + ")");
  for (const auto& op : mp.opset_import()) {
    std::string domain = canonical_domain(op.domain());
    m.opset_imports[domain] = op.version();
    int64_t max = domain == "" ? kMaxAiOnnxOpset : domain == "ai.onnx.ml" ? kMaxAiOnnxMlOpset : INT64_MAX;
    if (op.version() > max)
      fail(ErrorCode::InvalidGraph, "model '" + name + "' imports opset " + std::to_string(op.version()) + " of domain '" +
                                        (domain.empty() ? "ai.onnx" : domain) + "', newer than the newest Onyx supports (" +
                                        std::to_string(max) + ")");
  }
  if (!m.opset_imports.count("")) m.opset_imports[""] = 1;
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  m.domain = mp.domain();
  m.model_version = mp.model_version();
  m.doc_string = mp.doc_string();
  for (const auto& kv : mp.metadata_props()) m.metadata[kv.key()] = kv.value();
  ExternalDataFiles external(base_dir);
  GraphReader reader(name, &external);
  try {
    m.graph = reader.read_graph(*mp.mutable_graph());
    for (auto& fp : *mp.mutable_functions()) m.functions.push_back(read_function(fp, reader));
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind("model '", 0) == 0) throw;
    fail(e.code(), "model '" + name + "': " + msg);
  }
  return m;
}

std::string dir_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

Model load_model_from_bytes(const void* data, size_t size, const std::string& name, const std::string& base_dir) {
  onnx::ModelProto mp;
  google::protobuf::io::ArrayInputStream raw(data, static_cast<int>(std::min<size_t>(size, INT_MAX)));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  if (size > static_cast<size_t>(INT_MAX))
    fail(ErrorCode::InvalidProtobuf, "model '" + name + "' is over 2 GB in one protobuf; store its weights as external data");
  if (!mp.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    fail(ErrorCode::InvalidProtobuf, "model '" + name + "' could not be parsed: the file is corrupt or not an ONNX model");
  return model_from_proto(mp, name, base_dir);
}

Model load_model(const std::string& path) {
  std::string dir = dir_of(path);
  std::string file = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  std::shared_ptr<MappedFile> mapped;
  try {
    mapped = ExternalDataFiles(dir).open_path(path);
  } catch (const Error&) {
    fail(ErrorCode::NoSuchFile, "model file '" + path + "' does not exist or cannot be read");
  }
  if (mapped->size == 0) fail(ErrorCode::InvalidProtobuf, "model '" + path + "' is an empty file");
  return load_model_from_bytes(mapped->data, mapped->size, path, dir);
}

}  // namespace onyx

namespace onyx {

Node node_from_proto(const onnx::NodeProto& proto, const std::string& model_name) {
  GraphReader reader(model_name, nullptr);
  onnx::NodeProto copy = proto;
  return reader.read_node(copy);
}

Function function_from_proto(const onnx::FunctionProto& proto, const std::string& model_name) {
  GraphReader reader(model_name, nullptr);
  onnx::FunctionProto copy = proto;
  return read_function(copy, reader);
}

}  // namespace onyx
