#include "runtime/execution_plan.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <deque>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "base/aligned_memory.h"
#include "runtime/function_expansion.h"
#include "runtime/partitioner.h"

namespace onyx {

namespace {

// PlannedNode::donatable_inputs: a CPU node's inputs read once by it, last
// read there, and produced by a node of this plan (never graph inputs,
// constants or outer-scope values, whose buffers belong to others).
void plan_donatable_inputs(CompiledGraph& plan, const std::vector<int>& last_use) {
  std::vector<char> produced(plan.num_slots, 0);
  for (const PlannedNode& pn : plan.nodes)
    for (int s : pn.outputs)
      if (s >= 0) produced[s] = 1;
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    PlannedNode& pn = plan.nodes[i];
    if (pn.ep) continue;
    for (size_t k = 0; k < pn.inputs.size(); ++k) {
      const int s = pn.inputs[k];
      if (s < 0 || !produced[s] || last_use[s] != static_cast<int>(i)) continue;
      if (std::count(pn.inputs.begin(), pn.inputs.end(), s) != 1) continue;
      if (std::count(pn.implicit_inputs.begin(), pn.implicit_inputs.end(), s) != 0) continue;
      pn.donatable_inputs.push_back(static_cast<int>(k));
    }
  }
}

[[noreturn]] void graph_fail(const CompileEnv& env, ErrorCode code, const std::string& msg) {
  fail(code, "model '" + env.model_name + "': " + msg);
}

[[noreturn]] void node_fail(const CompileEnv& env, const Node& n, ErrorCode code, const std::string& msg) {
  fail(code, "model '" + env.model_name + "', node " + n.describe() + ": " + msg);
}

std::string domain_label(const std::string& d) { return d.empty() ? "ai.onnx" : d; }

// Replaces nodes without a kernel by their function bodies, until every node has one.
void expand_functions(Graph& g, const CompileEnv& env) {
  std::unordered_map<std::string, TypeInfo> types;
  for (auto& vi : g.inputs) types[vi.name] = vi.type;
  for (auto& vi : g.value_infos) types[vi.name] = vi.type;
  for (auto& vi : g.outputs) types[vi.name] = vi.type;
  for (auto& [name, t] : g.initializers) {
    TypeInfo ti;
    ti.kind = TypeInfo::Kind::Tensor;
    ti.elem_type = t.dtype();
    types[name] = ti;
  }
  int expansions = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    int64_t opset = env.model->opset(n.domain);
    if (opset <= 0)
      node_fail(env, n, ErrorCode::InvalidGraph, "domain '" + domain_label(n.domain) + "' is not imported by the model");
    if (env.registry->find(n, opset)) continue;
    std::optional<std::vector<Node>> body;
    if (expansions < 100000) body = expand_function(n, *env.model, types, expansions++);
    if (!body) {
      std::string why = env.registry->has_op(n.domain, n.op_type)
                            ? "no CPU kernel supports this op at opset " + std::to_string(opset) + " with these attributes"
                            : "unsupported op: no kernel for '" + n.op_type + "' in domain '" + domain_label(n.domain) +
                                  "' (opset " + std::to_string(opset) + ")";
      node_fail(env, n, ErrorCode::NotImplemented, why);
    }
    g.nodes.erase(g.nodes.begin() + static_cast<long>(i));
    g.nodes.insert(g.nodes.begin() + static_cast<long>(i), body->begin(), body->end());
    --i;  // look at the first body node next
  }
}

// Orders nodes so each runs after the producers of its inputs; keeps the
// model's order where it is already valid.
std::vector<size_t> topological_order(const Graph& g, const std::unordered_set<std::string>& available,
                                      const std::vector<std::vector<std::string>>& reads, const CompileEnv& env) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (auto& o : g.nodes[i].outputs)
      if (!o.empty()) {
        if (available.count(o) || producer.count(o))
          node_fail(env, g.nodes[i], ErrorCode::InvalidGraph, "output '" + o + "' is defined more than once");
        producer[o] = i;
      }
  std::vector<std::vector<size_t>> deps(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (auto& in : reads[i]) {
      if (in.empty() || available.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        node_fail(env, g.nodes[i], ErrorCode::InvalidGraph,
                  "input '" + in + "' is not a graph input, an initializer or the output of any node");
      deps[i].push_back(it->second);
    }
  std::vector<size_t> order = dependency_order(deps);
  if (order.size() != g.nodes.size()) graph_fail(env, ErrorCode::InvalidGraph, "the graph has a cycle");
  return order;
}

// The capacity a request of `bytes` gets: 64-byte multiples, and past 64 KB the next of
// eight steps per power of two (at most 1/8 more). Tensors that grow a little each run (a
// decoder's KV cache, one token longer per step) then reuse one buffer for several runs;
// sized exactly, each step missed every cached buffer and took fresh pages.
size_t buffer_capacity(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  if (bytes <= (size_t{1} << 16)) return bytes;
  const size_t step = std::bit_floor(bytes) >> 3;
  return (bytes + step - 1) / step * step;
}

}  // namespace

BufferPool::~BufferPool() { trim(); }

Tensor BufferPool::make(DataType dtype, const Shape& shape) {
  if (dtype == DataType::String) return Tensor(dtype, shape);
  int64_t n = shape_numel(shape);
  size_t bytes = static_cast<size_t>(n < 0 ? 0 : n) * dtype_size(dtype);
  for (int64_t d : shape)
    if (d < 0) return Tensor(dtype, shape);  // let the tensor report the bad shape
  if (bytes < kMinBytes) return Tensor(dtype, shape);
  bytes = buffer_capacity(bytes);
  void* p = nullptr;
  size_t capacity = bytes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The most recently freed buffer that fits without wasting over half of
    // it: it is the likeliest still in cache, and sizes that differ a little
    // share buffers instead of each keeping its own.
    for (size_t i = free_.size(); i-- > 0;) {
      if (free_[i].second < bytes || free_[i].second > 2 * bytes) continue;
      p = free_[i].first;
      capacity = free_[i].second;
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      cached_ -= capacity;
      break;
    }
  }
  if (!p) {
    p = allocate_aligned(bytes);
  }
  std::shared_ptr<BufferPool> self = shared_from_this();
  return Tensor::wrap(dtype, shape, p,
                      std::shared_ptr<void>(p, [self, capacity](void* q) { self->give_back(q, capacity); }));
}

void BufferPool::give_back(void* p, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + bytes <= max_cached_) {
      free_.emplace_back(p, bytes);
      cached_ += bytes;
      return;
    }
  }
  std::free(p);
}

void BufferPool::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [p, bytes] : free_) std::free(p);
  free_.clear();
  cached_ = 0;
}

size_t BufferPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

// The dependency counts for the parallel executor (see PlannedNode::reads).
static void plan_dependencies(CompiledGraph& plan) {
  std::vector<int> producer(plan.num_slots, -1);
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    for (int s : plan.nodes[i].outputs)
      if (s >= 0) producer[s] = static_cast<int>(i);
  plan.slot_readers.assign(plan.num_slots, 0);
  std::vector<int> seen_slot(plan.num_slots, -1), seen_node(plan.nodes.size(), -1);
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    PlannedNode& pn = plan.nodes[i];
    const int me = static_cast<int>(i);
    auto read = [&](int s) {
      if (s < 0 || seen_slot[s] == me) return;
      seen_slot[s] = me;
      pn.reads.push_back(s);
      ++plan.slot_readers[s];
      int p = producer[s];
      if (p >= 0 && p != me && seen_node[p] != me) {
        seen_node[p] = me;
        ++pn.num_producers;
        plan.nodes[p].consumers.push_back(me);
      }
    };
    for (int s : pn.inputs) read(s);
    for (int s : pn.implicit_inputs) read(s);
    if (pn.num_producers == 0) plan.roots.push_back(me);
  }
  for (int s : plan.output_slots) plan.slot_readers[s] = -1;
}

// Frees the data of each constant that every reader's kernel pre-packed, as
// soon as its last reader is compiled: weights are then held once, in packed
// form, and the next kernel's packing reuses the memory just freed. A freed
// constant keeps its type and shape, which kernels still check.
class PackedConstantReleaser {
 public:
  PackedConstantReleaser(CompiledGraph& plan, Graph& g, const std::vector<std::vector<std::string>>& implicit)
      : plan_(plan), g_(g) {
    for (size_t i = 0; i < plan.constants.size(); ++i) index_[plan.slot_names[plan.constants[i].first]] = i;
    for (auto& n : g.nodes)
      for (auto& in : n.inputs)
        if (index_.count(in)) ++pending_[in];
    for (auto& names : implicit) data_needed_.insert(names.begin(), names.end());
    for (auto& vi : g.outputs) data_needed_.insert(vi.name);
  }
  // After node n's kernel is made from `ictx`.
  void compiled(const Node& n, const KernelInitContext& ictx) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto it = index_.find(n.inputs[i]);
      if (it == index_.end()) continue;
      if (!ictx.constant_was_packed(i)) data_needed_.insert(n.inputs[i]);
      if (--pending_[n.inputs[i]] == 0 && !data_needed_.count(n.inputs[i])) release(it->second);
    }
  }

 private:
  void release(size_t index) {
    Tensor& t = plan_.constants[index].second;
    t = Tensor::wrap(t.dtype(), t.shape(), nullptr, nullptr);
    g_.initializers[plan_.slot_names[plan_.constants[index].first]] = t;
  }
  CompiledGraph& plan_;
  Graph& g_;
  std::unordered_map<std::string, size_t> index_;  // constant name -> position in plan.constants
  std::unordered_map<std::string, int> pending_;   // readers not compiled yet
  std::unordered_set<std::string> data_needed_;    // read unpacked by some node, subgraph or the caller
};

std::shared_ptr<CompiledGraph> compile_graph(std::shared_ptr<const Graph> source, const CompileEnv& env,
                                             const std::vector<std::string>& outer_names) {
  auto graph = std::make_shared<Graph>(*source);
  source.reset();  // where it was the last owner, the constants freed below are freed at once
  expand_functions(*graph, env);
  Placement placement;
  if (!env.device_providers.empty()) placement = partition_graph(*graph, *env.model, env.device_providers, *env.registry);

  auto plan = std::make_shared<CompiledGraph>();
  plan->graph = graph;
  if (env.options && !env.options->enable_cpu_mem_arena) plan->buffers = std::make_shared<BufferPool>(0);
  const Graph& g = *graph;
  std::unordered_map<std::string, int> slot_of;
  auto new_slot = [&](const std::string& name) {
    int s = plan->num_slots++;
    plan->slot_names.push_back(name);
    slot_of[name] = s;
    return s;
  };

  std::unordered_set<std::string> available;
  for (auto& name : outer_names) {
    plan->outer_slots.push_back(new_slot(name));
    available.insert(name);
  }
  std::unordered_set<std::string> graph_input_names;
  for (auto& vi : g.inputs) {
    if (vi.name.empty()) graph_fail(env, ErrorCode::InvalidGraph, "a graph input has no name");
    GraphInput in;
    in.name = vi.name;
    in.type = vi.type;
    in.slot = slot_of.count(vi.name) ? slot_of[vi.name] : new_slot(vi.name);
    auto init = g.initializers.find(vi.name);
    if (init != g.initializers.end()) {
      if (env.options->initializers_as_constants) {
        plan->constants.push_back({in.slot, init->second});
        available.insert(vi.name);
        continue;
      }
      in.initializer = &init->second;
    }
    graph_input_names.insert(vi.name);
    plan->inputs.push_back(in);
    available.insert(vi.name);
  }
  for (auto& name : g.initializer_order) {
    if (available.count(name)) continue;
    plan->constants.push_back({new_slot(name), g.initializers.at(name)});
    available.insert(name);
  }

  std::vector<std::vector<std::string>> reads(g.nodes.size()), implicit(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    collect_subgraph_free_names(g.nodes[i], implicit[i]);
    reads[i] = g.nodes[i].inputs;
    reads[i].insert(reads[i].end(), implicit[i].begin(), implicit[i].end());
  }
  std::vector<size_t> order = topological_order(g, available, reads, env);
  for (auto& n : g.nodes)
    for (auto& o : n.outputs)
      if (!o.empty()) new_slot(o);

  PackedConstantReleaser releaser(*plan, *graph, implicit);
  for (size_t idx : order) {
    const Node& n = g.nodes[idx];
    PlannedNode pn;
    pn.node = &n;
    std::vector<const Tensor*> constants;
    for (auto& in : n.inputs) {
      pn.inputs.push_back(in.empty() ? -1 : slot_of.at(in));
      auto init = g.initializers.find(in);
      bool constant = init != g.initializers.end() && !graph_input_names.count(in);
      constants.push_back(constant ? &init->second : nullptr);
    }
    for (auto& o : n.outputs) pn.outputs.push_back(o.empty() ? -1 : slot_of.at(o));
    for (auto& name : implicit[idx]) pn.implicit_inputs.push_back(slot_of.at(name));

    int64_t opset = env.model->opset(n.domain);
    const KernelDef* def = placement.def.empty() ? env.registry->find(n, opset) : placement.def[idx];
    std::vector<std::string> outer = implicit[idx];
    auto compile_sub = [&env, &n, outer](const std::string& attr) -> std::shared_ptr<const CompiledGraph> {
      if (env.device_providers.empty()) return compile_graph(n.attr(attr)->g, env, outer);
      CompileEnv cpu_env = env;  // subgraphs run on the CPU
      cpu_env.device_providers.clear();
      return compile_graph(n.attr(attr)->g, cpu_env, outer);
    };
    KernelInitContext ictx(n, opset, constants, compile_sub);
    pn.def = def;
    if (!placement.provider.empty() && placement.provider[idx]) {
      pn.ep = placement.provider[idx];
      pn.provider = pn.ep->name();
      ictx.set_provider(pn.ep);
    }
    try {
      pn.kernel = def->factory(ictx);
    } catch (const Error& e) {
      std::string msg = e.what();
      if (msg.rfind("model '", 0) == 0) throw;
      node_fail(env, n, e.code(), msg);
    }
    releaser.compiled(n, ictx);
    plan->nodes.push_back(std::move(pn));
  }

  for (auto& vi : g.outputs) {
    auto it = slot_of.find(vi.name);
    if (it == slot_of.end())
      graph_fail(env, ErrorCode::InvalidGraph, "graph output '" + vi.name + "' is not produced by any node");
    plan->output_slots.push_back(it->second);
  }

  if (!env.device_providers.empty()) {
    plan->fallbacks = placement.fallbacks;
    plan->copies = placement.copies;
    plan->capture_blocker = placement.capture_blocker;
  }

  // Memory plan: release each value after its last reader; never graph outputs.
  std::vector<int> last_use(plan->num_slots, -1);
  for (size_t i = 0; i < plan->nodes.size(); ++i) {
    for (int s : plan->nodes[i].inputs)
      if (s >= 0) last_use[s] = static_cast<int>(i);
    for (int s : plan->nodes[i].implicit_inputs) last_use[s] = static_cast<int>(i);
    for (int s : plan->nodes[i].outputs)
      if (s >= 0 && last_use[s] < static_cast<int>(i)) last_use[s] = static_cast<int>(i);  // unread outputs die at once
  }
  for (int s : plan->output_slots) last_use[s] = -1;
  // Constants stay bound in the frames the plan keeps across runs (FramePool): never released.
  std::vector<char> constant(plan->num_slots, 0);
  for (auto& c : plan->constants) constant[c.first] = 1;
  for (int s = 0; s < plan->num_slots; ++s) {
    if (!constant[s]) plan->unbound_slots.push_back(s);
    if (last_use[s] >= 0 && !constant[s]) plan->nodes[last_use[s]].release_after.push_back(s);
  }
  plan_donatable_inputs(*plan, last_use);
  plan_dependencies(*plan);
  for (auto& c : plan->constants) plan->slot_readers[c.first] = -1;
  plan_in_place_concats(*plan);
  return plan;
}

}  // namespace onyx
