#include "runtime/partitioner.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "opt/pass.h"
#include "runtime/execution_plan.h"

namespace onyx {

namespace {

constexpr int kCpu = -1;

// Inputs whose data a CPU kernel never reads (only the shape): no copy needed.
bool metadata_only(const Node& n, size_t k) {
  return k == 0 && canonical_domain(n.domain).empty() && (n.op_type == "Shape" || n.op_type == "Size");
}

bool is_int(DataType t) { return dtype_is_int(t) || t == DataType::Bool; }

KernelDef make_copy_def(bool to_device) {
  KernelDef d;
  d.domain = kOnyxDomain;
  d.op_type = to_device ? "MemcpyToDevice" : "MemcpyToHost";
  d.since_version = 0;
  d.factory = [to_device](const KernelInitContext& ctx) { return make_copy_kernel(ctx.provider(), to_device); };
  return d;
}

const KernelDef* copy_def(bool to_device) {
  static const KernelDef to_dev = make_copy_def(true), to_host = make_copy_def(false);
  return to_device ? &to_dev : &to_host;
}

// Why a CUDA graph cannot hold the placed graph g, or "". Replays run only the
// captured device work, so a CPU node may stay only when its results are fixed
// for fixed input shapes (it reads constants, other such nodes and shapes) and
// reach the device as host-side kernel arguments, never through a copy.
std::string capture_blocker(const Graph& g, const Placement& pl, const std::unordered_set<std::string>& graph_inputs) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  auto on_cpu = [&](size_t i) { return pl.provider[i] == nullptr; };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!on_cpu(i)) {
      if (n.op_type == "MemcpyToDevice") {
        auto p = producer.find(n.inputs[0]);
        if (p != producer.end() && on_cpu(p->second))
          return "'" + n.inputs[0] + "' (made on the CPU by " + g.nodes[p->second].describe() + ") is copied to the device";
      }
      continue;
    }
    if (n.has_subgraphs()) return n.describe() + " runs control flow on the CPU";
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& v = n.inputs[k];
      if (v.empty() || metadata_only(n, k)) continue;
      auto p = producer.find(v);
      bool fixed = p != producer.end() ? on_cpu(p->second) : g.initializers.count(v) && !graph_inputs.count(v);
      if (!fixed) return n.describe() + " runs on the CPU and reads '" + v + "', which changes from run to run";
    }
  }
  return "";
}

}  // namespace

Placement partition_graph(Graph& g, const Model& model, const std::vector<ExecutionProvider*>& device_providers,
                          const KernelRegistry& cpu_registry, bool upload) {
  const size_t n_nodes = g.nodes.size();
  Placement pl;
  std::vector<int> where(n_nodes, kCpu);  // index into device_providers, or kCpu
  std::vector<const KernelDef*> dev_def(n_nodes, nullptr), cpu_def(n_nodes, nullptr);
  std::vector<std::string> why(n_nodes);
  const std::string dev_name = device_providers.empty() ? "device" : device_providers.front()->name();

  // Values read by subgraphs (outer scope): their producers stay on the CPU.
  std::unordered_set<std::string> read_by_subgraph;
  for (auto& n : g.nodes)
    if (n.has_subgraphs())
      for (auto& [k, a] : n.attributes) {
        std::vector<std::shared_ptr<Graph>> graphs = a.graphs;
        if (a.g) graphs.push_back(a.g);
        for (auto& sg : graphs)
          for (auto& name : free_names(*sg)) read_by_subgraph.insert(name);
      }

  // Element types: declared, initializers, then propagated (an op's output
  // mostly has its first input's type).
  std::unordered_map<std::string, DataType> types;
  auto note = [&](const ValueInfo& vi) {
    if (vi.type.kind == TypeInfo::Kind::Tensor && vi.type.elem_type != DataType::Undefined) types[vi.name] = vi.type.elem_type;
  };
  for (auto& vi : g.inputs) note(vi);
  for (auto& vi : g.outputs) note(vi);
  for (auto& vi : g.value_infos) note(vi);
  for (auto& [name, t] : g.initializers) types[name] = t.dtype();
  auto type_of = [&](const std::string& v) {
    auto it = types.find(v);
    return it == types.end() ? DataType::Undefined : it->second;
  };
  static const std::set<std::string> bool_ops = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not",
                                                 "And", "Or", "Xor", "IsNaN", "IsInf"};
  static const std::set<std::string> int64_ops = {"Shape", "Size", "ArgMax", "ArgMin", "NonZero"};
  for (int round = 0; round < 3; ++round)
    for (auto& n : g.nodes) {
      if (n.outputs.empty() || n.outputs[0].empty() || types.count(n.outputs[0])) continue;
      DataType t = DataType::Undefined;
      const bool onnx = canonical_domain(n.domain).empty();
      if (onnx && int64_ops.count(n.op_type)) t = DataType::Int64;
      else if (onnx && bool_ops.count(n.op_type)) t = DataType::Bool;
      else if (n.op_type == "Cast" && n.attr("to")) t = static_cast<DataType>(n.attr("to")->i);
      else if (onnx && n.op_type == "ConstantOfShape") t = n.attr("value") ? n.attr("value")->t.dtype() : DataType::Float;
      else if (n.op_type == "Where" && n.inputs.size() > 1) t = type_of(n.inputs[1]);
      else if (!n.inputs.empty() && !n.inputs[0].empty()) t = type_of(n.inputs[0]);
      if (t != DataType::Undefined) types[n.outputs[0]] = t;
    }

  // 1. First provider with a kernel that supports the node.
  for (size_t i = 0; i < n_nodes; ++i) {
    const Node& n = g.nodes[i];
    int64_t opset = model.opset(n.domain);
    cpu_def[i] = cpu_registry.find(n, opset);
    if (n.has_subgraphs()) {
      why[i] = "has subgraphs (control flow runs on the CPU)";
      continue;
    }
    bool known_op = false;
    for (size_t p = 0; p < device_providers.size() && where[i] == kCpu; ++p) {
      const KernelRegistry& r = device_providers[p]->registry();
      known_op |= r.has_op(n.domain, n.op_type);
      if (const KernelDef* d = r.find(n, opset)) {
        if (d->supports_types) {
          std::vector<DataType> in_types;
          for (auto& in : n.inputs) in_types.push_back(in.empty() ? DataType::Undefined : type_of(in));
          if (!d->supports_types(in_types)) continue;
        }
        where[i] = static_cast<int>(p);
        dev_def[i] = d;
      }
    }
    if (where[i] == kCpu)
      why[i] = known_op ? "the " + dev_name + " kernel does not support this node (opset, types or attributes)"
                        : "no " + dev_name + " kernel for this op";
  }
  // 2. Producers of values read by subgraphs.
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < n_nodes; ++i)
    for (auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  for (auto& name : read_by_subgraph) {
    auto it = producer.find(name);
    if (it != producer.end() && where[it->second] != kCpu && cpu_def[it->second]) {
      where[it->second] = kCpu;
      why[it->second] = "its output is read by a subgraph (on the CPU)";
    }
  }

  // Consumers of each value.
  std::unordered_map<std::string, std::vector<std::pair<size_t, size_t>>> consumers;
  for (size_t i = 0; i < n_nodes; ++i)
    for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k)
      if (!g.nodes[i].inputs[k].empty()) consumers[g.nodes[i].inputs[k]].push_back({i, k});
  std::unordered_set<std::string> graph_outputs;
  for (auto& vi : g.outputs) graph_outputs.insert(vi.name);

  auto declared_host = [&](size_t i, size_t k) {
    const auto& h = dev_def[i]->host_inputs;
    return std::find(h.begin(), h.end(), static_cast<int>(k)) != h.end();
  };

  // 3. Shape computations: the largest set S of integer device nodes with a
  // CPU kernel whose inputs are on the host (or come from S) and whose outputs
  // are read only on the host (or by S).
  std::vector<char> in_s(n_nodes, 0);
  for (size_t i = 0; i < n_nodes; ++i) {
    if (where[i] == kCpu || !cpu_def[i]) continue;
    bool ints = true;
    for (auto& o : g.nodes[i].outputs)
      if (!o.empty()) {
        auto it = types.find(o);
        ints &= it != types.end() && is_int(it->second);
      }
    in_s[i] = ints;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n_nodes; ++i) {
      if (!in_s[i]) continue;
      const Node& n = g.nodes[i];
      bool ok = true;
      for (auto& in : n.inputs) {
        if (in.empty()) continue;
        auto p = producer.find(in);
        if (p != producer.end() && where[p->second] != kCpu && !in_s[p->second]) ok = false;
      }
      bool read = false;
      for (auto& o : n.outputs) {
        if (o.empty()) continue;
        if (graph_outputs.count(o)) read = true;
        auto c = consumers.find(o);
        if (c == consumers.end()) continue;
        for (auto [j, k] : c->second) {
          read = true;
          bool host = where[j] == kCpu || in_s[j] || declared_host(j, k);
          if (!host) ok = false;
        }
      }
      if (!ok || !read) {
        in_s[i] = 0;
        changed = true;
      }
    }
  }
  for (size_t i = 0; i < n_nodes; ++i)
    if (in_s[i]) {
      where[i] = kCpu;
      why[i] = "shape computation kept on the CPU";
    }

  pl.provider.resize(n_nodes, nullptr);
  pl.def.resize(n_nodes, nullptr);
  for (size_t i = 0; i < n_nodes; ++i) {
    if (where[i] == kCpu) {
      pl.def[i] = cpu_def[i];
      if (!device_providers.empty()) {
        auto& f = pl.fallbacks[g.nodes[i].op_type];
        ++f.first;
        if (f.second.empty()) f.second = why[i];
      }
    } else {
      pl.provider[i] = device_providers[where[i]];
      pl.def[i] = dev_def[i];
    }
  }

  // 4. Copies. Location of a value: kCpu (host) or a device provider index.
  std::unordered_set<std::string> graph_inputs;
  for (auto& vi : g.inputs) graph_inputs.insert(vi.name);
  auto location = [&](const std::string& v) {
    auto p = producer.find(v);
    return p == producer.end() ? kCpu : where[p->second];
  };
  std::map<std::pair<std::string, int>, std::string> copied;  // (value, target) -> name of the copy
  std::vector<Node> added;
  std::vector<ExecutionProvider*> added_provider;
  std::vector<bool> added_to_device;
  for (size_t i = 0; i < n_nodes; ++i) {
    Node& n = g.nodes[i];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string v = n.inputs[k];
      if (v.empty()) continue;
      int need;
      if (where[i] == kCpu) {
        if (metadata_only(n, k)) continue;
        need = kCpu;
      } else {
        need = declared_host(i, k) ? kCpu : where[i];
      }
      int loc = location(v);
      if (loc == need) continue;
      auto key = std::make_pair(v, need);
      auto it = copied.find(key);
      if (it != copied.end()) {
        n.inputs[k] = it->second;
        continue;
      }
      ExecutionProvider* dev = device_providers[need == kCpu ? loc : need];
      std::string name = v + "@" + (need == kCpu ? std::string("CPU") : dev->name());
      bool constant = need != kCpu && g.initializers.count(v) && !graph_inputs.count(v);
      if (constant) {
        if (upload) g.initializers[name] = dev->to_device(g.initializers.at(v));
        else g.initializers[name] = g.initializers.at(v);
        g.initializer_order.push_back(name);
        ++pl.uploaded_constants;
      } else {
        Node c;
        c.name = (need == kCpu ? "MemcpyToHost:" : "MemcpyToDevice:") + v;
        c.op_type = need == kCpu ? "MemcpyToHost" : "MemcpyToDevice";
        c.domain = kOnyxDomain;
        c.inputs = {v};
        c.outputs = {name};
        added.push_back(std::move(c));
        added_provider.push_back(dev);
        added_to_device.push_back(need != kCpu);
        ++pl.copies;
      }
      copied[key] = name;
      n.inputs[k] = name;
    }
  }
  for (size_t a = 0; a < added.size(); ++a) {
    g.nodes.push_back(std::move(added[a]));
    pl.provider.push_back(added_provider[a]);
    pl.def.push_back(copy_def(added_to_device[a]));
  }
  pl.capture_blocker = capture_blocker(g, pl, graph_inputs);
  return pl;
}

}  // namespace onyx
