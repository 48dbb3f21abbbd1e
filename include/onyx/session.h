// The public C++ API: load a model into a Session once, then run it many
// times, from several threads at once if you like.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onyx/status.h"
#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx {

enum class OptimizationLevel { Disable = 0, Basic = 1, Extended = 2, All = 99 };
enum class ExecutionMode { Sequential, Parallel };
enum class LogLevel { Verbose = 0, Info = 1, Warning = 2, Error = 3, Fatal = 4 };

struct SessionOptions {
  OptimizationLevel optimization_level = OptimizationLevel::All;
  int intra_op_num_threads = 0;  // 0: number of physical cores
  int inter_op_num_threads = 0;
  ExecutionMode execution_mode = ExecutionMode::Sequential;
  LogLevel log_severity_level = LogLevel::Warning;
  std::vector<std::string> providers = {"cpu"};
  // Initializers that also appear as graph inputs are overridable by default;
  // set this to treat them as constants.
  bool initializers_as_constants = false;
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
  // Memory: the arena keeps the buffers of intermediate tensors for reuse
  // (within a run and across runs); off, every buffer goes back to the
  // system as soon as it is released. The memory pattern reuses across runs
  // the buffers sized by the previous runs; off, the cached buffers are given
  // back at the end of every run.
  bool enable_cpu_mem_arena = true;
  bool enable_mem_pattern = true;
  // Free-form settings, e.g. "session.disable_passes" = "gelu_fusion,attention_fusion".
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

  // Writes the profile (see SessionOptions::enable_profiling), stops
  // profiling and returns the file's path; "" when profiling is off.
  std::string end_profiling();

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
