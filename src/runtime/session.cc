#include "onyx/session.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "base/logging.h"
#include "cpu/cpu_provider.h"
#include "onnx/loader.h"
#include "onnx/writer.h"
#include "opt/pass.h"
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

  void initialize();
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
  for (auto& p : options.providers)
    if (p != "cpu" && p != "CPU" && p != "CPUExecutionProvider")
      fail(ErrorCode::InvalidArgument, "model '" + model.path + "': provider '" + p + "' is not available in this build");
  if (options.initializers_as_constants) {
    auto& ins = model.graph.inputs;
    ins.erase(std::remove_if(ins.begin(), ins.end(), [&](const ValueInfo& v) { return model.graph.is_initializer(v.name); }),
              ins.end());
  }
  optimize();
  if (!options.optimized_model_filepath.empty()) save_model(model, options.optimized_model_filepath);
  CompileEnv env;
  env.model = &model;
  env.registry = &cpu_kernel_registry();
  env.options = &options;
  env.model_name = model.path;
  auto graph = std::make_shared<const Graph>(model.graph);
  plan = compile_graph(graph, env, {});

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
  if (threads > 1) pool = std::make_unique<ThreadPool>(threads);
}

void Session::Impl::optimize() {
  if (options.optimization_level == OptimizationLevel::Disable) return;
  const KernelRegistry& registry = cpu_kernel_registry();
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
  impl->model = load_model(path);
  impl->initialize();
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

std::unique_ptr<Session> Session::from_bytes(const void* data, size_t size, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->model = load_model_from_bytes(data, size, "<memory>");
  impl->initialize();
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const std::vector<ValueMeta>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueMeta>& Session::outputs() const { return impl_->outputs; }
const std::vector<ValueMeta>& Session::overridable_initializers() const { return impl_->overridable; }
const std::string& Session::model_name() const { return impl_->model.path; }
const OptimizationReport& Session::optimization_report() const { return impl_->report; }

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
  std::vector<Value> all = execute_graph(*m.plan, std::move(inputs), {}, env);
  if (output_names.empty()) return all;
  std::vector<Value> out;
  for (size_t i : wanted) out.push_back(all[i]);
  return out;
}

}  // namespace onyx
