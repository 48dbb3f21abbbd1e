// The public C++ API: load a model into a Session once, then run it many
// times, from several threads at once if you like.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onyx/environment.h"
#include "onyx/logging.h"
#include "onyx/status.h"
#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx {

enum class OptimizationLevel { Disable = 0, Basic = 1, Extended = 2, All = 99 };
enum class ExecutionMode { Sequential, Parallel };

struct SessionOptions {
  OptimizationLevel optimization_level = OptimizationLevel::All;
  int intra_op_num_threads = 0;  // 0: number of physical cores
  // Parallel: independent nodes run at once on an inter-op pool of
  // inter_op_num_threads threads (0: number of physical cores; 1: none, nodes
  // run one after another), the calling thread included. Subgraphs (If, Loop,
  // Scan bodies) run sequentially. Ignored in Sequential mode.
  int inter_op_num_threads = 0;
  ExecutionMode execution_mode = ExecutionMode::Sequential;
  LogLevel log_severity_level = LogLevel::Warning;
  // Names the session in its log messages (LogRecord::logid), as onnxruntime's SessionOptions.logid.
  std::string logid;
  // Execution providers in priority order: "cuda" (or "CUDA",
  // "CUDAExecutionProvider") and "cpu" (or "CPUExecutionProvider"); the CPU is
  // always used last for what the others do not run. A CUDA provider asked for
  // without a CUDA device (or in a build without it) logs a warning and the
  // session runs on the CPU.
  std::vector<std::string> providers = {"cpu"};
  // Per-provider key/value options, keyed by provider name (any spelling).
  // CUDA: device_id, gpu_mem_limit (bytes), arena_extend_strategy
  // (kNextPowerOfTwo | kSameAsRequested), cudnn_conv_algo_search (EXHAUSTIVE |
  // HEURISTIC | DEFAULT), cudnn_conv_use_max_workspace, cudnn_conv1d_pad_to_nc1d,
  // do_copy_in_default_stream, enable_cuda_graph (0/1), conv_algo_cache_file
  // (a file where the chosen cuDNN convolution algorithms are kept across
  // processes). Unknown keys and bad values are errors.
  std::map<std::string, std::map<std::string, std::string>> provider_options;
  // Initializers that also appear as graph inputs are overridable by default
  // (IR version 4 and later; before it, where every initializer is an input,
  // they are constants); set this to treat them as constants.
  bool initializers_as_constants = false;
  // Symbolic dimensions fixed at load, as onnxruntime's
  // add_free_dimension_override_by_name / _by_denotation: every dimension of
  // the graph's inputs, outputs and value infos whose dim_param (or
  // denotation, e.g. "DATA_BATCH") is a key takes that size; inputs must then
  // be fed with it. Keys the model does not use are ignored.
  std::map<std::string, int64_t> free_dimension_overrides_by_name;
  std::map<std::string, int64_t> free_dimension_overrides_by_denotation;
  // Values replacing the model's initializers of the same names (as
  // onnxruntime's add_initializer; e.g. weights shared by several sessions).
  // A name that is no initializer of the model is ignored with a warning; an
  // element type other than the model's is an error.
  std::map<std::string, Tensor> initializer_overrides;
  // Contents of external data files by the location the model's tensors name
  // (as onnxruntime's add_external_initializers_from_files_in_memory): read
  // from here before the model's folder; the session keeps what it uses.
  std::map<std::string, std::shared_ptr<const std::string>> external_data_files;
  // When set, the optimized model is saved there (weights as external data
  // beside it when large).
  std::string optimized_model_filepath;
  // Profiling: when on, the session records a Chrome trace (session events,
  // one event per run and per executed node); end_profiling() writes it to
  // PREFIX_YYYY-MM-DD_HH-MM-SS.json and returns that path.
  bool enable_profiling = false;
  std::string profile_file_prefix = "onyx_profile";
  // Thread pool: when set, idle workers poll for new work for ~100 us after a
  // job before sleeping (low latency for back-to-back kernels, no CPU burnt
  // while the session is idle); when not, they go to sleep at once.
  bool allow_spinning = true;
  // Threads: the session's pools start their worker threads with these
  // application functions (both or neither; see onyx/environment.h).
  CreateThreadFn create_thread;
  JoinThreadFn join_thread;
  // false: the session starts no threads of its own and uses the pools of
  // `environment` (which must then be set); the thread counts, allow_spinning
  // and the thread functions above are then the environment's.
  bool use_per_session_threads = true;
  std::shared_ptr<Environment> environment;
  // Memory: the arena keeps the buffers of intermediate tensors for reuse
  // (within a run and across runs); off, every buffer goes back to the
  // system as soon as it is released. The memory pattern reuses across runs
  // the buffers sized by the previous runs; off, the cached buffers are given
  // back at the end of every run.
  bool enable_cpu_mem_arena = true;
  bool enable_mem_pattern = true;
  // Free-form settings, e.g. "session.disable_passes" = "gelu_fusion,attention_fusion";
  // "session.dynamic_block_base" = "4": parallel loops of the session's
  // intra-op pool take chunks of max(1, remaining / (4 x threads)) items,
  // large first (even load when iterations cost differently); "0" (default):
  // equal chunks; "session.use_env_allocators" = "1": intermediate tensors come
  // from the environment's arena (see onyx/environment.h), shared by every
  // session that says so, instead of one arena per session.
  std::map<std::string, std::string> config;
};

struct PassStat {
  std::string name;
  double ms = 0;     // time spent in the pass, all rounds
  int changed = 0;   // rounds in which it changed the graph
};

struct OptimizationReport {
  std::map<std::string, int> fusions;  // fusion name -> times it fired
  std::vector<PassStat> passes;
};

struct ValueMeta {
  std::string name;
  TypeInfo type;
};

using Feeds = std::vector<std::pair<std::string, Value>>;

// Per-call settings, as onnxruntime's RunOptions config entries:
//   "memory.enable_memory_arena_shrinkage" = "cpu:0" (any value but "" or
//   "0"): after this run, the buffers the session's arena keeps for reuse are
//   given back to the system (the next run allocates them again).
struct RunOptions {
  std::map<std::string, std::string> config;
};

// The providers this build has, as onnxruntime names them, in priority order
// ("CUDAExecutionProvider" only in a build with CUDA; a device may still be
// missing at run time).
std::vector<std::string> available_providers();

// Inputs and outputs bound to memory for Session::run_with_binding: inputs may
// already be on a device (no copy), outputs may be bound to a device (their
// memory allocated there at run time) or to a tensor of the right shape.
class IoBinding {
 public:
  void bind_input(const std::string& name, const Value& value);
  // The output stays on `device` (allocated at run time, shape unknown before).
  void bind_output(const std::string& name, Device device = {});
  // The output is written into `tensor` (same type and shape; any device).
  void bind_output(const std::string& name, const Tensor& tensor);
  void clear_inputs() { inputs_.clear(); }
  void clear_outputs() { outputs_.clear(); results_.clear(); }
  // After run_with_binding: the outputs, in the order they were bound.
  const std::vector<Value>& outputs() const { return results_; }
  std::vector<std::string> output_names() const;

  struct BoundOutput {
    std::string name;
    Device device;
    Tensor tensor;  // defined when bound to a tensor
  };
  const std::vector<std::pair<std::string, Value>>& bound_inputs() const { return inputs_; }
  const std::vector<BoundOutput>& bound_outputs() const { return outputs_; }
  std::vector<Value>& mutable_outputs() { return results_; }

 private:
  std::vector<std::pair<std::string, Value>> inputs_;
  std::vector<BoundOutput> outputs_;
  std::vector<Value> results_;
};

class Session {
 public:
  static std::unique_ptr<Session> from_file(const std::string& path, const SessionOptions& options = {});
  static std::unique_ptr<Session> from_bytes(const void* data, size_t size, const SessionOptions& options = {});
  ~Session();

  const std::vector<ValueMeta>& inputs() const;   // graph inputs that are not initializers
  const std::vector<ValueMeta>& outputs() const;
  const std::vector<ValueMeta>& overridable_initializers() const;
  const std::string& model_name() const;
  const OptimizationReport& optimization_report() const;

  // Runs the model. Empty output_names means every graph output, in order.
  std::vector<Value> run(const Feeds& feeds, const std::vector<std::string>& output_names = {}) const;
  std::vector<Value> run(const Feeds& feeds, const std::vector<std::string>& output_names,
                         const RunOptions& run_options) const;
  // Runs with bound inputs and outputs; the results are in binding.outputs().
  // With enable_cuda_graph this is the way to run: the first run warms up,
  // the second captures a CUDA graph, the later ones replay it.
  void run_with_binding(IoBinding& binding) const;

  // Where the session runs: the providers in use ("CUDAExecutionProvider",
  // "CPUExecutionProvider"), and each node's provider, in execution order.
  std::vector<std::string> providers() const;
  std::vector<std::pair<std::string, std::string>> node_placement() const;  // (node name, provider)
  // The same with each node's op, for onnxruntime's get_provider_graph_assignment_info.
  struct NodeAssignment {
    std::string name, domain, op_type, provider;
  };
  std::vector<NodeAssignment> node_assignment() const;
  // Allocates a tensor on the device of a provider in use (e.g. to bind).
  Tensor allocate_on(Device device, DataType dtype, const Shape& shape) const;
  // Copies a tensor to the host (no copy when it is there).
  Tensor to_host(const Tensor& t) const;
  // Copies between tensors of the same type and size, host or device (of a
  // provider in use), e.g. new input values into a bound device buffer.
  void copy_tensor(const Tensor& src, Tensor& dst) const;

  // Writes the profile (see SessionOptions::enable_profiling), stops
  // profiling and returns the file's path; "" when profiling is off.
  std::string end_profiling();

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
