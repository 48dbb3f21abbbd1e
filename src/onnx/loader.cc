#include "onnx/loader.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>

#include <climits>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "onnx/inline_weights.h"
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
  // attribute_proto (IR 9) lists the attributes that have a default value. The ONNX
  // headers Onyx builds with predate it, so it arrives as an unknown field.
  const auto& unknown = fp.unknown_fields();
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& field = unknown.field(i);
    if (field.number() != kFunctionAttributeProtoField ||
        field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::AttributeProto ap;
    if (!ap.ParseFromString(field.length_delimited()))
      fail(ErrorCode::InvalidGraph, "function '" + f.name + "': an attribute default does not parse");
    f.attribute_names.push_back(ap.name());
    f.attribute_defaults[ap.name()] = reader.read_attribute(ap);
  }
  for (auto& np : *fp.mutable_node()) f.nodes.push_back(reader.read_node(np));
  for (const auto& op : fp.opset_import()) f.opset_imports[canonical_domain(op.domain())] = op.version();
  return f;
}

// ---- ai.onnx.preview.training Gradient ----
// Gradient(xs, zs, y) differentiates the part of the graph that computes y from
// xs and zs, at the values given as the node's inputs. Onyx expands it at load
// time into standard ops: a copy of that forward part reading the node's
// inputs, then reverse-mode differentiation through it (the adjoint of y is
// ones). Broadcasting is undone by com.onyx SumToShape. Differentiable ops:
// Add, Sub, Mul, Div, Neg, Identity, Relu, Sigmoid, Tanh, Exp, Log, Sqrt and
// 2-D MatMul.
class GradientExpander {
 public:
  GradientExpander(const std::string& model, int id) : model_(model), prefix_("Gradient" + std::to_string(id) + "__") {}

  std::vector<Node> expand(const Graph& g, const Node& grad) {
    auto where = [&](const std::string& what) {
      return "model '" + model_ + "', node " + grad.describe() + ": " + what;
    };
    const Attribute* xs_a = grad.attr("xs");
    const Attribute* y_a = grad.attr("y");
    if (!xs_a || xs_a->type != AttrType::Strings || !y_a || y_a->type != AttrType::String)
      fail(ErrorCode::InvalidGraph, where("Gradient needs the attributes xs (strings) and y (string)"));
    std::vector<std::string> xs = xs_a->strings, zs;
    if (const Attribute* z = grad.attr("zs"); z && z->type == AttrType::Strings) zs = z->strings;
    const std::string& y = y_a->s;
    if (grad.inputs.size() != xs.size() + zs.size())
      fail(ErrorCode::InvalidGraph, where("Gradient has " + std::to_string(grad.inputs.size()) + " inputs but xs and zs name " +
                                          std::to_string(xs.size() + zs.size())));
    std::map<std::string, std::string> rename;
    std::set<std::string> independent;
    for (size_t i = 0; i < xs.size(); ++i) rename[xs[i]] = grad.inputs[i], independent.insert(xs[i]);
    for (size_t i = 0; i < zs.size(); ++i) rename[zs[i]] = grad.inputs[xs.size() + i], independent.insert(zs[i]);
    std::map<std::string, size_t> producer;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const auto& o : g.nodes[i].outputs)
        if (!o.empty()) producer[o] = i;
    // The nodes between xs/zs and y.
    std::set<size_t> needed;
    std::vector<std::string> stack = {y};
    while (!stack.empty()) {
      std::string v = stack.back();
      stack.pop_back();
      if (v.empty() || independent.count(v)) continue;
      auto it = producer.find(v);
      if (it == producer.end() || needed.count(it->second)) continue;
      const Node& n = g.nodes[it->second];
      if (n.op_type == "Gradient") fail(ErrorCode::NotImplemented, where("nested Gradient nodes are not supported"));
      needed.insert(it->second);
      for (const auto& in : n.inputs) stack.push_back(in);
    }
    auto ren = [&](const std::string& v) {
      auto it = rename.find(v);
      return it != rename.end() ? it->second : v;
    };
    std::vector<const Node*> fwd;
    for (size_t i : needed) {  // std::set: graph (topological) order
      Node n = g.nodes[i];
      n.name = prefix_ + n.name;
      for (auto& o : n.outputs)
        if (!o.empty()) rename[o] = prefix_ + "f_" + o;
      for (auto& in : n.inputs) in = ren(in);
      for (auto& o : n.outputs) o = ren(o);
      out_.push_back(std::move(n));
      fwd.push_back(&g.nodes[i]);
    }
    std::string zero = constant(0.0f);
    std::map<std::string, std::string> grads;  // original value name -> its adjoint
    grads[y] = emit("Pow", {ren(y), zero});     // ones shaped like y
    for (size_t k = fwd.size(); k-- > 0;) {
      const Node& n = *fwd[k];
      std::vector<std::string> outs;
      for (const auto& o : n.outputs)
        if (!o.empty()) outs.push_back(o);
      if (outs.size() != 1 || !grads.count(outs[0])) continue;
      std::string go = grads[outs[0]];
      std::string out_v = ren(outs[0]);
      auto in = [&](size_t i) { return ren(n.inputs.at(i)); };
      auto add = [&](size_t i, const std::string& d) {
        const std::string& v = n.inputs.at(i);
        if (v.empty()) return;
        std::string reduced = emit("SumToShape", {d, ren(v)}, "com.onyx");
        auto it = grads.find(v);
        grads[v] = it == grads.end() ? reduced : emit("Add", {it->second, reduced});
      };
      const std::string& op = n.op_type;
      if (!n.domain.empty()) fail(ErrorCode::NotImplemented, where("Gradient cannot differentiate " + n.describe()));
      if (op == "Add") {
        add(0, go), add(1, go);
      } else if (op == "Sub") {
        add(0, go), add(1, emit("Neg", {go}));
      } else if (op == "Mul") {
        add(0, emit("Mul", {go, in(1)})), add(1, emit("Mul", {go, in(0)}));
      } else if (op == "Div") {
        add(0, emit("Div", {go, in(1)}));
        add(1, emit("Neg", {emit("Div", {emit("Mul", {go, out_v}), in(1)})}));  // -g * a / b^2 = -g * y / b
      } else if (op == "Neg") {
        add(0, emit("Neg", {go}));
      } else if (op == "Identity") {
        add(0, go);
      } else if (op == "Relu") {
        add(0, emit("Where", {emit("Greater", {in(0), emit("Sub", {in(0), in(0)})}), go, emit("Sub", {go, go})}));
      } else if (op == "Sigmoid") {  // g * y * (1 - y)
        add(0, emit("Mul", {go, emit("Mul", {out_v, emit("Sub", {emit("Pow", {out_v, zero}), out_v})})}));
      } else if (op == "Tanh") {  // g * (1 - y^2)
        add(0, emit("Mul", {go, emit("Sub", {emit("Pow", {out_v, zero}), emit("Mul", {out_v, out_v})})}));
      } else if (op == "Exp") {
        add(0, emit("Mul", {go, out_v}));
      } else if (op == "Log") {
        add(0, emit("Div", {go, in(0)}));
      } else if (op == "Sqrt") {  // g / (2 y)
        add(0, emit("Div", {go, emit("Add", {out_v, out_v})}));
      } else if (op == "MatMul") {  // 2-D: dA = g B^T, dB = A^T g
        add(0, emit("MatMul", {go, emit("Transpose", {in(1)})}));
        add(1, emit("MatMul", {emit("Transpose", {in(0)}), go}));
      } else {
        fail(ErrorCode::NotImplemented, where("Gradient cannot differentiate through " + op + " (node '" + n.name + "')"));
      }
    }
    for (size_t i = 0; i < xs.size() && i < grad.outputs.size(); ++i) {
      if (grad.outputs[i].empty()) continue;
      auto it = grads.find(xs[i]);
      std::string d = it != grads.end() ? it->second : emit("Sub", {grad.inputs[i], grad.inputs[i]});  // y does not depend on it
      Node id;
      id.name = prefix_ + "out" + std::to_string(i);
      id.op_type = "Identity";
      id.inputs = {d};
      id.outputs = {grad.outputs[i]};
      out_.push_back(std::move(id));
    }
    return std::move(out_);
  }

 private:
  std::string emit(const std::string& op, std::vector<std::string> inputs, const std::string& domain = "") {
    Node n;
    n.name = prefix_ + op + std::to_string(counter_);
    n.op_type = op;
    n.domain = domain;
    n.inputs = std::move(inputs);
    n.outputs = {prefix_ + "v" + std::to_string(counter_++)};
    out_.push_back(n);
    return n.outputs[0];
  }
  std::string constant(float v) {
    Node n;
    n.name = prefix_ + "Constant" + std::to_string(counter_);
    n.op_type = "Constant";
    Attribute a;
    a.type = AttrType::Tensor;
    a.t = Tensor::scalar<float>(v);
    n.attributes["value"] = a;
    n.outputs = {prefix_ + "v" + std::to_string(counter_++)};
    out_.push_back(n);
    return n.outputs[0];
  }

  std::string model_, prefix_;
  int counter_ = 0;
  std::vector<Node> out_;
};

// Replaces the Gradient nodes of the main graph by their expansion.
void expand_gradients(Model& m) {
  bool any = false;
  int id = 0;
  for (size_t i = 0; i < m.graph.nodes.size(); ++i) {
    const Node& n = m.graph.nodes[i];
    if (n.op_type != "Gradient" || n.domain != "ai.onnx.preview.training") continue;
    std::vector<Node> repl = GradientExpander(m.path, id++).expand(m.graph, n);
    m.graph.nodes.erase(m.graph.nodes.begin() + static_cast<std::ptrdiff_t>(i));
    m.graph.nodes.insert(m.graph.nodes.begin() + static_cast<std::ptrdiff_t>(i), repl.begin(), repl.end());
    i += repl.size() - 1;
    any = true;
  }
  if (any) m.opset_imports.emplace("com.onyx", 1);
}

Model model_from_proto(onnx::ModelProto& mp, const std::string& name, ExternalDataFiles& external) {
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
  GraphReader reader(name, &external);
  try {
    m.graph = reader.read_graph(*mp.mutable_graph());
    for (auto& fp : *mp.mutable_functions()) m.functions.push_back(read_function(fp, reader));
    expand_gradients(m);
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

Model parse_model(const void* data, size_t size, const std::string& name, ExternalDataFiles& external) {
  onnx::ModelProto mp;
  google::protobuf::io::ArrayInputStream raw(data, static_cast<int>(std::min<size_t>(size, INT_MAX)));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  if (size > static_cast<size_t>(INT_MAX))
    fail(ErrorCode::InvalidProtobuf, "model '" + name + "' is over 2 GB in one protobuf; store its weights as external data");
  if (!mp.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    fail(ErrorCode::InvalidProtobuf, "model '" + name + "' could not be parsed: the file is corrupt or not an ONNX model");
  return model_from_proto(mp, name, external);
}

}  // namespace

Model load_model_from_bytes(const void* data, size_t size, const std::string& name, const std::string& base_dir,
                            const InMemoryFiles& in_memory) {
  ExternalDataFiles external(base_dir);
  external.adopt(in_memory);
  return parse_model(data, size, name, external);
}

Model load_model(const std::string& path, const InMemoryFiles& in_memory) {
  std::string dir = dir_of(path);
  std::string file = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  std::shared_ptr<MappedFile> mapped;
  try {
    mapped = ExternalDataFiles(dir).open_path(path);
  } catch (const Error&) {
    fail(ErrorCode::NoSuchFile, "model file '" + path + "' does not exist or cannot be read");
  }
  if (mapped->size == 0) fail(ErrorCode::InvalidProtobuf, "model '" + path + "' is an empty file");
  ExternalDataFiles external(dir);
  external.adopt(in_memory);
  external.adopt(file, mapped);
  std::string without_weights = point_initializers_into_file(mapped->data, mapped->size, file);
  if (without_weights.empty()) return parse_model(mapped->data, mapped->size, path, external);
  return parse_model(without_weights.data(), without_weights.size(), path, external);
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
