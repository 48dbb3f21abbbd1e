#include "onyx/session.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "base/logging.h"
#include "cpu/cpu_provider.h"
#include "onnx/loader.h"
#include "onnx/shape_inference.h"
#include "onnx/writer.h"
#include "opt/pass.h"
#include "profile/profiler.h"
#include "runtime/executor.h"
#include "runtime/node_evaluator.h"

namespace onyx {

struct Session::Impl {
  SessionOptions options;
  Model model;
  std::shared_ptr<CompiledGraph> plan;
  std::unique_ptr<ThreadPool> pool;
  std::vector<ValueMeta> inputs, outputs, overridable;
  std::unordered_map<std::string, size_t> input_index;  // name -> index in plan->inputs
  std::unordered_map<std::string, size_t> output_index;
  OptimizationReport report;
  std::unique_ptr<Profiler> profiler;  // set when options.enable_profiling

  void start_profiling() {
    if (options.enable_profiling) profiler = std::make_unique<Profiler>(options.profile_file_prefix);
  }
  void initialize();
  void log_placement() const;
  void profile_optimizer(int64_t start_ns) const;
  void optimize();
  void check_feed(const GraphInput& in, const Value& v) const;
};

namespace {

std::string names_of(const std::vector<ValueMeta>& metas) {
  std::string s;
  for (auto& m : metas) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

}  // namespace

void Session::Impl::initialize() {
  const int64_t init_start = profiler ? profiler->now_ns() : 0;
  for (auto& p : options.providers)
    if (p != "cpu" && p != "CPU" && p != "CPUExecutionProvider")
      fail(ErrorCode::InvalidArgument, "model '" + model.path + "': provider '" + p + "' is not available in this build");
  if (options.initializers_as_constants) {
    auto& ins = model.graph.inputs;
    ins.erase(std::remove_if(ins.begin(), ins.end(), [&](const ValueInfo& v) { return model.graph.is_initializer(v.name); }),
              ins.end());
  }
  const int64_t opt_start = profiler ? profiler->now_ns() : 0;
  optimize();
  if (profiler) profile_optimizer(opt_start);
  if (!options.optimized_model_filepath.empty()) save_model(model, options.optimized_model_filepath);
  CompileEnv env;
  env.model = &model;
  env.registry = &cpu_kernel_registry();
  env.options = &options;
  env.model_name = model.path;
  auto graph = std::make_shared<const Graph>(model.graph);
  plan = compile_graph(graph, env, {});
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
    log_message(options.log_severity_level, LogLevel::Warning,
                "model '" + model.path + "': initializers also listed as graph inputs (overridable at run time): " + list +
                    ". Set initializers_as_constants to treat them as constants.");
  }
  for (size_t i = 0; i < model.graph.outputs.size(); ++i) {
    outputs.push_back({model.graph.outputs[i].name, model.graph.outputs[i].type});
    output_index[model.graph.outputs[i].name] = i;
  }
  int threads = options.intra_op_num_threads > 0 ? options.intra_op_num_threads : physical_core_count();
  if (threads > 1) pool = std::make_unique<ThreadPool>(threads, options.allow_spinning);
  if (profiler) profiler->session_event("session_initialization", init_start);
}

// At verbose: where every node runs (provider, and the kernel chosen for it).
void Session::Impl::log_placement() const {
  const KernelRegistry& registry = cpu_kernel_registry();
  std::map<std::string, int> per_provider;
  for (const PlannedNode& pn : plan->nodes) {
    const Node& n = *pn.node;
    int64_t opset = model.opset(n.domain);
    const KernelDef* def = registry.find(n, opset);
    std::string kernel = def ? (def->domain.empty() ? "" : def->domain + ".") + def->op_type + " opset " +
                                   std::to_string(def->since_version) +
                                   (def->until_version >= kMaxOpset ? "+" : "-" + std::to_string(def->until_version))
                             : "(none)";
    ++per_provider[pn.provider];
    log_message(options.log_severity_level, LogLevel::Verbose,
                "placement: node '" + n.name + "' (" + n.op_type + ", opset " + std::to_string(opset) + ") -> " +
                    pn.provider + "ExecutionProvider, kernel " + kernel);
  }
  std::string summary;
  for (auto& [p, count] : per_provider) summary += (summary.empty() ? "" : ", ") + p + ": " + std::to_string(count);
  log_message(options.log_severity_level, LogLevel::Verbose,
              "placement: model '" + model.path + "': " + std::to_string(plan->nodes.size()) + " nodes (" + summary +
                  "); no device provider in use, so no node fell back to the CPU");
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

void Session::Impl::optimize() {
  if (options.optimization_level == OptimizationLevel::Disable) return;
  const KernelRegistry& registry = cpu_kernel_registry();
  infer_shapes(model);
  PassContext ctx;
  ctx.model = &model;
  ctx.evaluate = [&](const Node& n, const std::vector<Tensor>& inputs) -> std::optional<std::vector<Tensor>> {
    std::vector<Value> values;
    for (auto& t : inputs) values.push_back(t.defined() ? Value(t) : Value());
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
  model.opset_imports.emplace(kOnyxDomain, 1);
  ctx.can_run = [&](const Node& n) { return registry.find(n, model.opset(n.domain)) != nullptr; };
  std::set<std::string> disabled;
  auto it = options.config.find("session.disable_passes");
  if (it != options.config.end()) {
    std::stringstream ss(it->second);
    std::string name;
    while (std::getline(ss, name, ',')) disabled.insert(name);
  }
  for (auto& t : optimize_graph(model.graph, options.optimization_level, ctx, disabled))
    report.passes.push_back({t.name, t.ms, t.changed});
  report.fusions = ctx.fusion_counts;
  bool uses_onyx_ops = false;
  for (auto& n : model.graph.nodes) uses_onyx_ops |= n.domain == kOnyxDomain;
  if (!uses_onyx_ops) model.opset_imports.erase(kOnyxDomain);
  for (auto& [name, count] : report.fusions)
    log_message(options.log_severity_level, LogLevel::Info, "fused " + name + " x" + std::to_string(count));
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
    case TypeInfo::Kind::Sequence:
      if (!v.is_sequence()) bad("expected " + t.to_string() + ", got " + v.kind_name());
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
  impl->model = load_model(path);
  if (impl->profiler) impl->profiler->session_event("model_loading", load_start);
  impl->initialize();
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

std::unique_ptr<Session> Session::from_bytes(const void* data, size_t size, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->start_profiling();
  const int64_t load_start = impl->profiler ? impl->profiler->now_ns() : 0;
  impl->model = load_model_from_bytes(data, size, "<memory>");
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

std::vector<Value> Session::run(const Feeds& feeds, const std::vector<std::string>& output_names) const {
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
  env.pool = m.pool.get();
  env.model_name = &m.model.path;
  Profiler* prof = m.profiler && m.profiler->active() ? m.profiler.get() : nullptr;
  std::vector<Value> all;
  if (!prof) {
    all = execute_graph(*m.plan, std::move(inputs), {}, env);
  } else {
    env.profiler = prof;
    const int64_t run_start = prof->begin_run();
    try {
      all = execute_graph(*m.plan, std::move(inputs), {}, env);
    } catch (...) {
      prof->end_run(run_start);
      throw;
    }
    prof->end_run(run_start);
  }
  if (!m.options.enable_mem_pattern) m.plan->buffers->trim();
  if (output_names.empty()) return all;
  std::vector<Value> out;
  for (size_t i : wanted) out.push_back(all[i]);
  return out;
}

}  // namespace onyx
