#include "onyx/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "base/logging.h"
#include "cpu/cpu_provider.h"
#include "cpu/dnnl_conv.h"
#include "onnx/loader.h"
#include "onnx/op_arity.h"
#include "onnx/shape_inference.h"
#include "onnx/writer.h"
#include "opt/pass.h"
#include "profile/profiler.h"
#include "runtime/executor.h"
#include "runtime/model_overrides.h"
#include "runtime/parallel_executor.h"
#include "runtime/session_threads.h"
#include "runtime/node_evaluator.h"
#include "runtime/providers.h"

namespace onyx {

struct Session::Impl {
  SessionOptions options;
  Model model;
  std::shared_ptr<CompiledGraph> plan;
  SessionThreads threads;  // the intra-op pool kernels use; the inter-op pool in parallel mode
  std::vector<ValueMeta> inputs, outputs, overridable;
  std::unordered_map<std::string, size_t> input_index;  // name -> index in plan->inputs
  std::unordered_map<std::string, size_t> output_index;
  OptimizationReport report;
  std::unique_ptr<Profiler> profiler;  // set when options.enable_profiling
  // Device providers in use (priority order; the CPU is implicit). Runs that
  // use them are serialized: one stream per session.
  std::vector<std::shared_ptr<ExecutionProvider>> devices;
  mutable std::mutex device_mutex;
  struct GraphCapture {  // enable_cuda_graph: warm-up run, capture run, then replays
    int runs = 0;
    bool captured = false;
    std::vector<std::pair<const void*, Shape>> inputs;  // bound input addresses and shapes at capture
    std::vector<Value> outputs;                          // the captured outputs' memory
  };
  mutable GraphCapture graph_capture;
  std::unique_lock<std::mutex> lock_devices() const {
    return devices.empty() ? std::unique_lock<std::mutex>() : std::unique_lock<std::mutex>(device_mutex);
  }
  ExecutionProvider* device_provider(Device d) const;
  void outputs_to_host(std::vector<Value>& values) const;

  void start_profiling() {
    if (options.enable_profiling) profiler = std::make_unique<Profiler>(options.profile_file_prefix);
  }
  void initialize();
  void log_placement() const;
  void profile_optimizer(int64_t start_ns) const;
  // prepare_schemas() while the model is parsed, where the optimizer will
  // need them and the session may start threads of its own.
  std::future<void> schemas_in_background() const {
    const bool own_threads = options.use_per_session_threads && !options.create_thread;
    return options.optimization_level != OptimizationLevel::Disable && own_threads ? prepare_schemas()
                                                                                   : std::future<void>();
  }
  void optimize();
  void check_feed(const GraphInput& in, const Value& v) const;
  std::vector<Value> execute(std::vector<Value> inputs, const RunEnv& env) const {
    if (threads.inter && devices.empty()) return execute_graph_parallel(*plan, std::move(inputs), env, threads.inter);
    return execute_graph(*plan, std::move(inputs), {}, env);
  }
};

namespace {

// Convolutions run by oneDNN, whose OpenMP threads live beside the pool.
bool runs_openmp_kernels(const CompiledGraph& plan) {
  for (const PlannedNode& pn : plan.nodes)
    if (pn.provider == "CPU" && runs_dnnl_convolutions(pn.node->op_type)) return true;
  return false;
}

std::string names_of(const std::vector<ValueMeta>& metas) {
  std::string s;
  for (auto& m : metas) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

// The optimizer's rewrites assume nodes can be ordered; a cycle would send them round it.
void check_acyclic(const Model& model) {
  for_each_graph(model.graph, [&](const Graph& g) {
    const Node* n = node_on_cycle(g);
    if (!n) return;
    std::string where = "model '" + model.path + "': graph '" + g.name + "' has a cycle through node " + n->describe();
    // The common cause: a subgraph reads a name it meant to declare as an input
    // (a Loop body missing one), which resolves to the node's own output.
    std::vector<std::string> reads;
    collect_subgraph_free_names(*n, reads);
    for (auto& name : reads)
      if (std::find(n->outputs.begin(), n->outputs.end(), name) != n->outputs.end())
        fail(ErrorCode::InvalidGraph, where + ": its subgraph reads '" + name +
                                          "', the node's own output (is a subgraph input missing?)");
    fail(ErrorCode::InvalidGraph, where);
  });
}

}  // namespace

void Session::Impl::initialize() {
  const int64_t init_start = profiler ? profiler->now_ns() : 0;
  {
    ResolvedProviders resolved = resolve_providers(options, model.path);
    for (auto& w : resolved.warnings) log_message(options, LogLevel::Warning, w);
    devices = std::move(resolved.devices);
  }
  apply_free_dimension_overrides(model, options);
  apply_initializer_overrides(model, options);
  // Before IR version 4 every initializer had to be listed as a graph input too: there it
  // says nothing about overriding, and initializers are constants (as in onnxruntime). Kept
  // overridable, an opset-7 ResNet-18 ran 8x slower: no weight packing, no fusions.
  if (options.initializers_as_constants || model.ir_version < 4) {
    auto& ins = model.graph.inputs;
    ins.erase(std::remove_if(ins.begin(), ins.end(), [&](const ValueInfo& v) { return model.graph.is_initializer(v.name); }),
              ins.end());
    // Initializers that are not graph inputs need IR version 4: a saved optimized model says so
    // (saved as IR 3 it failed onnx.checker: "fc.weight in initializer but not in graph input").
    model.ir_version = std::max<int64_t>(model.ir_version, 4);
  }
  check_acyclic(model);
  check_node_arity(model);
  check_window_attributes(model);
  const int64_t opt_start = profiler ? profiler->now_ns() : 0;
  optimize();
  if (profiler) profile_optimizer(opt_start);
  if (!options.optimized_model_filepath.empty()) save_model(model, options.optimized_model_filepath);
  CompileEnv env;
  env.model = &model;
  env.registry = &cpu_kernel_registry();
  env.options = &options;
  env.model_name = model.path;
  for (auto& d : devices) env.device_providers.push_back(d.get());
  // The plan keeps its own copy of the graph; keeping the model's too would
  // hold every weight the kernels did not pre-pack (and free) a second time.
  plan = compile_graph(std::make_shared<const Graph>(std::move(model.graph)), env, {});
  model.graph = Graph();
  if (options.log_severity_level == LogLevel::Verbose) log_placement();

  std::vector<std::string> warned;
  for (size_t i = 0; i < plan->inputs.size(); ++i) {
    const GraphInput& in = plan->inputs[i];
    input_index[in.name] = i;
    if (in.initializer) {
      overridable.push_back({in.name, in.type});
      warned.push_back(in.name);
    } else {
      inputs.push_back({in.name, in.type});
    }
  }
  if (!warned.empty() && model.ir_version >= 4) {
    std::string list;
    for (auto& w : warned) list += (list.empty() ? "" : ", ") + w;
    log_message(options, LogLevel::Warning,
                "model '" + model.path + "': initializers also listed as graph inputs (overridable at run time): " +
                    list + ". Set initializers_as_constants to treat them as constants.");
  }
  const std::vector<ValueInfo>& graph_outputs = plan->graph->outputs;
  for (size_t i = 0; i < graph_outputs.size(); ++i) {
    outputs.push_back({graph_outputs[i].name, graph_outputs[i].type});
    output_index[graph_outputs[i].name] = i;
  }
  threads = make_session_threads(options, model.path, runs_openmp_kernels(*plan));
  if (auto arena = environment_arena(options, model.path)) plan->buffers = std::move(arena);
  if (profiler) profiler->session_event("session_initialization", init_start);
}

// At verbose: where every node runs (provider, and the kernel chosen for it).
void Session::Impl::log_placement() const {
  const KernelRegistry& registry = cpu_kernel_registry();
  std::map<std::string, int> per_provider;
  for (const PlannedNode& pn : plan->nodes) {
    const Node& n = *pn.node;
    int64_t opset = model.opset(n.domain);
    const KernelDef* def = pn.def ? pn.def : registry.find(n, opset);
    std::string kernel = def ? (def->domain.empty() ? "" : def->domain + ".") + def->op_type + " opset " +
                                   std::to_string(def->since_version) +
                                   (def->until_version >= kMaxOpset ? "+" : "-" + std::to_string(def->until_version))
                             : "(none)";
    ++per_provider[pn.provider];
    log_message(options, LogLevel::Verbose,
                "placement: node '" + n.name + "' (" + n.op_type + ", opset " + std::to_string(opset) + ") -> " +
                    pn.provider + "ExecutionProvider, kernel " + kernel);
  }
  std::string summary;
  for (auto& [p, count] : per_provider) summary += (summary.empty() ? "" : ", ") + p + ": " + std::to_string(count);
  log_message(
      options, LogLevel::Verbose,
      "placement: model '" + model.path + "': " + std::to_string(plan->nodes.size()) + " nodes (" + summary +
          (devices.empty() ? std::string("); no device provider in use, so no node fell back to the CPU")
                           : "); " + std::to_string(plan->copies) + " copies between host and device inserted"));
  for (auto& [op, f] : plan->fallbacks)
    log_message(options, LogLevel::Verbose,
                "placement: fallback to the CPU: " + op + " x" + std::to_string(f.first) + ": " + f.second);
}

// The optimizer's pass timings as trace events: the whole optimization, then
// each pass (time summed over its rounds) laid end to end inside it.
void Session::Impl::profile_optimizer(int64_t start_ns) const {
  int64_t end_ns = profiler->now_ns();
  std::string fused;
  for (auto& [name, count] : report.fusions)
    fused += (fused.empty() ? "\"" : ",\"") + name + "\":" + std::to_string(count);
  profiler->session_event("graph_optimization", start_ns, end_ns, "{\"fusions\":{" + fused + "}}");
  int64_t t = start_ns;
  for (auto& p : report.passes) {
    int64_t dur = static_cast<int64_t>(p.ms * 1e6);
    profiler->session_event("optimizer_pass:" + p.name, t, t + dur,
                            "{\"pass\":\"" + p.name + "\",\"changed_rounds\":" + std::to_string(p.changed) + "}");
    t += dur;
  }
}

namespace {

bool graph_uses_domain(const Graph& graph, const std::string& domain) {
  bool used = false;
  for_each_graph(graph, [&](const Graph& g) {
    used = used || std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.domain == domain; });
  });
  return used;
}

}  // namespace

void Session::Impl::optimize() {
  if (options.optimization_level == OptimizationLevel::Disable) return;
  const KernelRegistry& registry = cpu_kernel_registry();
  const auto inference_start = std::chrono::steady_clock::now();
  const NodeEvaluator evaluate = [&](const Node& n,
                                     const std::vector<Tensor>& inputs) -> std::optional<std::vector<Tensor>> {
    std::vector<Value> values;
    for (auto& t : inputs) {
      if (t.defined()) values.emplace_back(t);
      else values.emplace_back();
    }
    try {
      std::vector<Tensor> out;
      for (auto& v : evaluate_node(n, model.opset(n.domain), values, registry)) {
        if (!v.is_tensor()) return std::nullopt;
        out.push_back(v.tensor());
      }
      return out;
    } catch (const std::exception&) {
      return std::nullopt;  // not foldable here (no kernel, or it fails): leave it to run time
    }
  };
  infer_shapes(model, evaluate);
  // Reported as the first pass: it waits for libonnx's schemas and can take longer than all the passes.
  report.passes.push_back({"shape_inference",
                           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - inference_start).count(),
                           0});
  PassContext ctx;
  ctx.model = &model;
  ctx.evaluate = evaluate;
  // The domains of ops passes may introduce (qdq_fusion makes com.microsoft
  // QLinear* ops); an import added here is dropped again when nothing uses it.
  std::vector<std::string> added_domains;
  for (const std::string& d : {kOnyxDomain, kMicrosoftDomain})
    if (model.opset_imports.emplace(d, 1).second) added_domains.push_back(d);
  ctx.can_run = [&](const Node& n) {
    if (!registry.find(n, model.opset(n.domain))) return false;
    // With a device provider, fused Onyx ops are made only where it runs them.
    if (devices.empty() || n.domain != kOnyxDomain) return true;
    for (auto& d : devices)
      if (d->registry().find(n, model.opset(n.domain))) return true;
    return false;
  };
  std::set<std::string> disabled;
  auto it = options.config.find("session.disable_passes");
  if (it != options.config.end()) {
    std::stringstream ss(it->second);
    std::string name;
    while (std::getline(ss, name, ',')) disabled.insert(name);
  }
  if (!devices.empty()) disabled.insert("nchwc_layout");  // a CPU-only layout
  // No device provider runs QLinearConv and the like: fused, a QDQ model's
  // convolutions would all move to the CPU instead of running as float on the device.
  if (!devices.empty()) disabled.insert("qdq_fusion");
  std::vector<PassTiming> timings = optimize_graph(model.graph, options.optimization_level, ctx, disabled);
  optimize_subgraphs(model.graph, options.optimization_level, ctx, disabled, timings);
  for (auto& t : timings) report.passes.push_back({t.name, t.ms, t.changed});
  report.fusions = ctx.fusion_counts;
  for (const std::string& d : added_domains)
    if (!graph_uses_domain(model.graph, d)) model.opset_imports.erase(d);
  for (auto& [name, count] : report.fusions)
    log_message(options, LogLevel::Info, "fused " + name + " x" + std::to_string(count));
}

void Session::Impl::check_feed(const GraphInput& in, const Value& v) const {
  auto bad = [&](const std::string& why) {
    fail(ErrorCode::InvalidArgument, "model '" + model.path + "', input '" + in.name + "': " + why);
  };
  const TypeInfo& t = in.type;
  if (v.is_none()) bad("no value given");
  switch (t.kind) {
    case TypeInfo::Kind::Tensor: {
      if (!v.is_tensor()) bad("expected " + t.to_string() + ", got " + v.kind_name());
      const Tensor& x = v.tensor();
      if (t.elem_type != DataType::Undefined && x.dtype() != t.elem_type)
        bad("expected element type " + dtype_name(t.elem_type) + ", got " + dtype_name(x.dtype()));
      if (!t.has_shape) break;
      if (static_cast<size_t>(x.rank()) != t.shape.size())
        bad("expected rank " + std::to_string(t.shape.size()) + ", got shape " + shape_to_string(x.shape()));
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (t.shape[d].value >= 0 && t.shape[d].value != x.shape()[d])
          bad("dimension " + std::to_string(d) + " must be " + std::to_string(t.shape[d].value) + ", got shape " +
              shape_to_string(x.shape()));
      break;
    }
    case TypeInfo::Kind::Sequence: {
      bool of_maps = t.inner && t.inner->kind == TypeInfo::Kind::Map;
      if (of_maps ? !v.is_map_sequence() : !v.is_sequence()) bad("expected " + t.to_string() + ", got " + v.kind_name());
      break;
    }
    case TypeInfo::Kind::Map:
      if (!v.is_map()) bad("expected " + t.to_string() + ", got " + v.kind_name());
      if (v.map().keys.dtype() != t.elem_type ||
          (t.inner && t.inner->elem_type != DataType::Undefined && v.map().size() > 0 &&
           v.map().values.dtype() != t.inner->elem_type))
        bad("expected " + t.to_string() + ", got " + v.kind_name());
      break;
    case TypeInfo::Kind::Optional:
      if (!v.is_optional()) bad("expected " + t.to_string() + ", got " + v.kind_name());
      break;
    default: break;
  }
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

std::unique_ptr<Session> Session::from_file(const std::string& path, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->start_profiling();
  const int64_t load_start = impl->profiler ? impl->profiler->now_ns() : 0;
  std::future<void> schemas = impl->schemas_in_background();
  impl->model = load_model(path, options.external_data_files);
  if (impl->profiler) impl->profiler->session_event("model_loading", load_start);
  impl->initialize();
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

std::unique_ptr<Session> Session::from_bytes(const void* data, size_t size, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->start_profiling();
  const int64_t load_start = impl->profiler ? impl->profiler->now_ns() : 0;
  std::future<void> schemas = impl->schemas_in_background();
  impl->model = load_model_from_bytes(data, size, "<memory>", "", options.external_data_files);
  if (impl->profiler) impl->profiler->session_event("model_loading", load_start);
  impl->initialize();
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const std::vector<ValueMeta>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueMeta>& Session::outputs() const { return impl_->outputs; }
const std::vector<ValueMeta>& Session::overridable_initializers() const { return impl_->overridable; }
const std::string& Session::model_name() const { return impl_->model.path; }
const OptimizationReport& Session::optimization_report() const { return impl_->report; }

std::string Session::end_profiling() { return impl_->profiler ? impl_->profiler->end_profiling() : std::string(); }

namespace {

// RunOptions "memory.enable_memory_arena_shrinkage": set to a device list
// ("cpu:0") in onnxruntime; any value but "" / "0" turns it on here.
bool shrink_arena_after_run(const RunOptions& o) {
  auto it = o.config.find("memory.enable_memory_arena_shrinkage");
  return it != o.config.end() && !it->second.empty() && it->second != "0";
}

}  // namespace

std::vector<Value> Session::run(const Feeds& feeds, const std::vector<std::string>& output_names) const {
  return run(feeds, output_names, RunOptions{});
}

std::vector<Value> Session::run(const Feeds& feeds, const std::vector<std::string>& output_names,
                                const RunOptions& run_options) const {
  const Impl& m = *impl_;
  std::vector<Value> inputs(m.plan->inputs.size());
  for (auto& [name, value] : feeds) {
    auto it = m.input_index.find(name);
    if (it == m.input_index.end())
      fail(ErrorCode::InvalidArgument, "model '" + m.model.path + "': '" + name +
                                           "' is not an input of the model (inputs: " + names_of(m.inputs) + ")");
    m.check_feed(m.plan->inputs[it->second], value);
    inputs[it->second] = value;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].is_none() && !m.plan->inputs[i].initializer)
      fail(ErrorCode::InvalidArgument, "model '" + m.model.path + "': input '" + m.plan->inputs[i].name + "' is missing");
  std::vector<size_t> wanted;
  for (auto& name : output_names) {
    auto it = m.output_index.find(name);
    if (it == m.output_index.end())
      fail(ErrorCode::InvalidArgument, "model '" + m.model.path + "': '" + name +
                                           "' is not an output of the model (outputs: " + names_of(m.outputs) + ")");
    wanted.push_back(it->second);
  }
  RunEnv env;
  env.pool = m.threads.intra;
  env.model_name = &m.model.path;
  Profiler* prof = m.profiler && m.profiler->active() ? m.profiler.get() : nullptr;
  std::unique_lock<std::mutex> device_lock = m.lock_devices();
  for (auto& d : m.devices)
    if (d->graph_capture_enabled())
      fail(ErrorCode::InvalidArgument, "model '" + m.model.path +
                                           "': enable_cuda_graph is set: run the session with an I/O binding "
                                           "(run_with_binding) whose inputs are on the CUDA device");
  std::vector<Value> all;
  if (!prof) {
    all = m.execute(std::move(inputs), env);
  } else {
    env.profiler = prof;
    const int64_t run_start = prof->begin_run();
    try {
      all = m.execute(std::move(inputs), env);
    } catch (...) {
      prof->end_run(run_start);
      throw;
    }
    prof->end_run(run_start);
  }
  if (!m.devices.empty()) m.outputs_to_host(all);
  if (!m.options.enable_mem_pattern || shrink_arena_after_run(run_options)) m.plan->buffers->trim();
  if (output_names.empty()) return all;
  std::vector<Value> out;
  for (size_t i : wanted) out.push_back(all[i]);
  return out;
}


// ---- Devices, I/O binding, CUDA graphs ----

ExecutionProvider* Session::Impl::device_provider(Device d) const {
  for (auto& p : devices)
    if (p->device() == d) return p.get();
  return nullptr;
}

// Graph outputs left on a device by the plan come back to the host; then the
// device work of the run is complete.
void Session::Impl::outputs_to_host(std::vector<Value>& values) const {
  for (auto& v : values)
    if (v.is_tensor() && v.tensor().device().type != DeviceType::CPU) {
      ExecutionProvider* p = device_provider(v.tensor().device());
      if (!p) fail(ErrorCode::RuntimeException, "model '" + model.path + "': an output is on a device no provider owns");
      v = Value(p->to_host(v.tensor()));
    }
  for (auto& d : devices) d->synchronize();
}

void IoBinding::bind_input(const std::string& name, const Value& value) {
  for (auto& [n, v] : inputs_)
    if (n == name) {
      v = value;
      return;
    }
  inputs_.push_back({name, value});
}

void IoBinding::bind_output(const std::string& name, Device device) {
  for (auto& o : outputs_)
    if (o.name == name) {
      o = BoundOutput{name, device, Tensor()};
      return;
    }
  outputs_.push_back({name, device, Tensor()});
}

void IoBinding::bind_output(const std::string& name, const Tensor& tensor) {
  for (auto& o : outputs_)
    if (o.name == name) {
      o = BoundOutput{name, tensor.device(), tensor};
      return;
    }
  outputs_.push_back({name, tensor.device(), tensor});
}

std::vector<std::string> IoBinding::output_names() const {
  std::vector<std::string> names;
  for (auto& o : outputs_) names.push_back(o.name);
  return names;
}

void Session::run_with_binding(IoBinding& binding) const {
  const Impl& m = *impl_;
  const std::string& model_name = m.model.path;
  std::vector<Value> inputs(m.plan->inputs.size());
  for (auto& [name, value] : binding.bound_inputs()) {
    auto it = m.input_index.find(name);
    if (it == m.input_index.end())
      fail(ErrorCode::InvalidArgument, "model '" + model_name + "': bound input '" + name +
                                           "' is not an input of the model (inputs: " + names_of(m.inputs) + ")");
    if (value.is_tensor() && value.tensor().device().type != DeviceType::CPU && !m.device_provider(value.tensor().device()))
      fail(ErrorCode::InvalidArgument, "model '" + model_name + "': bound input '" + name +
                                           "' is on a device that no provider of this session uses");
    m.check_feed(m.plan->inputs[it->second], value);
    inputs[it->second] = value;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].is_none() && !m.plan->inputs[i].initializer)
      fail(ErrorCode::InvalidArgument, "model '" + model_name + "': input '" + m.plan->inputs[i].name + "' is not bound");
  std::vector<size_t> wanted;
  for (auto& o : binding.bound_outputs()) {
    auto it = m.output_index.find(o.name);
    if (it == m.output_index.end())
      fail(ErrorCode::InvalidArgument, "model '" + model_name + "': bound output '" + o.name +
                                           "' is not an output of the model (outputs: " + names_of(m.outputs) + ")");
    if (o.device.type != DeviceType::CPU && !m.device_provider(o.device))
      fail(ErrorCode::InvalidArgument, "model '" + model_name + "': output '" + o.name +
                                           "' is bound to a device that no provider of this session uses");
    wanted.push_back(it->second);
  }
  if (wanted.empty())  // nothing bound: every output, on the host
    for (size_t i = 0; i < m.outputs.size(); ++i) {
      binding.bind_output(m.outputs[i].name, Device{});
      wanted.push_back(i);
    }

  ExecutionProvider* graph_ep = nullptr;
  for (auto& d : m.devices)
    if (d->graph_capture_enabled()) graph_ep = d.get();

  RunEnv env;
  env.pool = m.threads.intra;
  env.model_name = &model_name;
  std::unique_lock<std::mutex> device_lock = m.lock_devices();
  std::vector<Value> all;
  Impl::GraphCapture& gc = m.graph_capture;
  auto bound_ptrs = [&]() {
    std::vector<std::pair<const void*, Shape>> p;
    for (auto& v : inputs) p.push_back(v.is_tensor() ? std::make_pair(v.tensor().raw(), v.tensor().shape())
                                                     : std::make_pair(static_cast<const void*>(nullptr), Shape{}));
    return p;
  };
  if (graph_ep) {
    // The documented constraints of CUDA graphs, checked before each run.
    const std::string pre = "model '" + model_name + "': enable_cuda_graph: ";
    if (!m.plan->capture_blocker.empty()) {
      std::string ops;
      for (auto& [op, f] : m.plan->fallbacks) ops += (ops.empty() ? "" : ", ") + op + " (" + f.second + ")";
      fail(ErrorCode::InvalidArgument, pre + "a CUDA graph replays only device work, and " + m.plan->capture_blocker +
                                           (ops.empty() ? "" : " (on the CPU: " + ops + ")"));
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i].is_tensor() || inputs[i].tensor().device() != graph_ep->device())
        fail(ErrorCode::InvalidArgument, pre + "input '" + m.plan->inputs[i].name +
                                             "' must be bound to a tensor on the CUDA device (I/O binding)");
    for (auto& o : binding.bound_outputs())
      if (o.device != graph_ep->device())
        fail(ErrorCode::InvalidArgument, pre + "output '" + o.name + "' must be bound to the CUDA device");
    if (gc.captured) {
      auto now = bound_ptrs();
      for (size_t i = 0; i < now.size(); ++i) {
        if (now[i].second != gc.inputs[i].second)
          fail(ErrorCode::InvalidArgument, pre + "input '" + m.plan->inputs[i].name + "' has shape " +
                                               shape_to_string(now[i].second) + " but the graph was captured with " +
                                               shape_to_string(gc.inputs[i].second) + " (shapes must stay fixed)");
        if (now[i].first != gc.inputs[i].first)
          fail(ErrorCode::InvalidArgument, pre + "input '" + m.plan->inputs[i].name +
                                               "' is bound at another address than when the graph was captured "
                                               "(bound addresses must stay fixed)");
      }
      graph_ep->replay();
      all = gc.outputs;
      ++gc.runs;
    } else if (gc.runs >= 1) {
      gc.inputs = bound_ptrs();
      graph_ep->begin_capture();
      try {
        all = execute_graph(*m.plan, std::move(inputs), {}, env);  // no profiling while capturing
      } catch (...) {
        graph_ep->end_capture();
        throw;
      }
      graph_ep->end_capture();
      graph_ep->replay();  // capturing does not run the work
      gc.outputs = all;
      gc.captured = true;
      ++gc.runs;
    }
  }
  if (!graph_ep || gc.runs == 0) {
    Profiler* prof = m.profiler && m.profiler->active() ? m.profiler.get() : nullptr;
    env.profiler = prof;
    const int64_t run_start = prof ? prof->begin_run() : 0;
    try {
      all = m.execute(std::move(inputs), env);
    } catch (...) {
      if (prof) prof->end_run(run_start);
      throw;
    }
    if (prof) prof->end_run(run_start);
    if (graph_ep) ++gc.runs;
  }

  std::vector<Value>& results = binding.mutable_outputs();
  results.clear();
  const auto& bound = binding.bound_outputs();
  for (size_t k = 0; k < bound.size(); ++k) {
    Value v = all[wanted[k]];
    const auto& o = bound[k];
    if (v.is_tensor()) {
      const Tensor& t = v.tensor();
      if (o.tensor.defined()) {
        Tensor dst = o.tensor;
        if (dst.dtype() != t.dtype() || dst.shape() != t.shape())
          fail(ErrorCode::InvalidArgument, "model '" + model_name + "': output '" + o.name + "' is bound to a " +
                                               dtype_name(dst.dtype()) + " tensor of shape " + shape_to_string(dst.shape()) +
                                               " but the model produced " + dtype_name(t.dtype()) + " " +
                                               shape_to_string(t.shape()));
        if (dst.device().type == DeviceType::CPU) {
          Tensor h = t.device().type == DeviceType::CPU ? t : m.device_provider(t.device())->to_host(t);
          if (h.nbytes()) std::memcpy(dst.raw(), h.raw(), h.nbytes());
        } else if (t.device().type == DeviceType::CPU) {
          m.device_provider(dst.device())->copy_to_device(t, dst);
        } else {
          m.device_provider(dst.device())->copy_on_device(t, dst);
        }
        v = Value(dst);
      } else if (o.device.type == DeviceType::CPU) {
        if (t.device().type != DeviceType::CPU) v = Value(m.device_provider(t.device())->to_host(t));
      } else if (t.device() != o.device) {
        v = Value(m.device_provider(o.device)->to_device(t.device().type == DeviceType::CPU
                                                             ? t
                                                             : m.device_provider(t.device())->to_host(t)));
      }
    }
    results.push_back(std::move(v));
  }
  for (auto& d : m.devices) d->synchronize();
  if (!m.options.enable_mem_pattern) m.plan->buffers->trim();
}

std::vector<std::string> Session::providers() const {
  std::vector<std::string> p;
  for (auto& d : impl_->devices) p.push_back(d->full_name());
  p.push_back("CPUExecutionProvider");
  return p;
}

std::vector<std::pair<std::string, std::string>> Session::node_placement() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& pn : impl_->plan->nodes) out.push_back({pn.node->name, pn.provider + "ExecutionProvider"});
  return out;
}

std::vector<Session::NodeAssignment> Session::node_assignment() const {
  std::vector<NodeAssignment> out;
  for (auto& pn : impl_->plan->nodes)
    out.push_back({pn.node->name, pn.node->domain, pn.node->op_type, pn.provider + "ExecutionProvider"});
  return out;
}

Tensor Session::allocate_on(Device device, DataType dtype, const Shape& shape) const {
  if (device.type == DeviceType::CPU) return Tensor(dtype, shape);
  ExecutionProvider* p = impl_->device_provider(device);
  if (!p)
    fail(ErrorCode::InvalidArgument, "model '" + impl_->model.path + "': no provider of this session uses device " +
                                         std::string(device.type == DeviceType::CUDA ? "cuda:" : "?:") + std::to_string(device.id));
  return p->make_tensor(dtype, shape);
}

void Session::copy_tensor(const Tensor& src, Tensor& dst) const {
  if (src.dtype() != dst.dtype() || src.nbytes() != dst.nbytes())
    fail(ErrorCode::InvalidArgument, "model '" + impl_->model.path + "': copy_tensor: the tensors differ in type or size");
  auto owner = [&](const Tensor& t) {
    if (t.device().type == DeviceType::CPU) return static_cast<ExecutionProvider*>(nullptr);
    ExecutionProvider* p = impl_->device_provider(t.device());
    if (!p) fail(ErrorCode::InvalidArgument, "model '" + impl_->model.path + "': copy_tensor: a device this session does not use");
    return p;
  };
  ExecutionProvider* ps = owner(src);
  ExecutionProvider* pd = owner(dst);
  std::unique_lock<std::mutex> lock = impl_->lock_devices();
  if (!ps && !pd) {
    if (src.nbytes()) std::memcpy(dst.raw(), src.raw(), src.nbytes());
  } else if (!ps) {
    pd->copy_to_device(src, dst);
    pd->synchronize();
  } else if (!pd) {
    ps->copy_to_host(src, dst);
  } else if (ps == pd) {
    pd->copy_on_device(src, dst);
    pd->synchronize();
  } else {
    Tensor h = ps->to_host(src);
    pd->copy_to_device(h, dst);
    pd->synchronize();
  }
}

Tensor Session::to_host(const Tensor& t) const {
  if (t.device().type == DeviceType::CPU) return t;
  ExecutionProvider* p = impl_->device_provider(t.device());
  if (!p) fail(ErrorCode::InvalidArgument, "model '" + impl_->model.path + "': the tensor is on a device this session does not use");
  return p->to_host(t);
}

}  // namespace onyx
