#include "onyx/environment.h"

#include <cctype>
#include <climits>

#include "base/logging.h"
#include "onnx/shape_inference.h"
#include "runtime/session_threads.h"

namespace onyx {

namespace {

constexpr const char* kBlockBaseKey = "session.dynamic_block_base";

void check_thread_functions(const CreateThreadFn& create, const JoinThreadFn& join, const std::string& where) {
  if (static_cast<bool>(create) != static_cast<bool>(join))
    fail(ErrorCode::InvalidArgument, where + ": create_thread and join_thread must be set together (only " +
                                         (create ? "create_thread" : "join_thread") + " is set)");
}

void check_count(int n, const char* what, const std::string& where) {
  if (n < 0)
    fail(ErrorCode::InvalidArgument,
         where + ": " + what + " must be 0 (one per physical core) or more, got " + std::to_string(n));
}

}  // namespace

void prepare_operator_schemas() { build_schemas(); }

Environment::Environment(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Environment::~Environment() = default;

std::shared_ptr<Environment> Environment::create(const ThreadingOptions& options) {
  const std::string where = "environment thread options";
  check_count(options.intra_op_num_threads, "intra_op_num_threads", where);
  check_count(options.inter_op_num_threads, "inter_op_num_threads", where);
  if (options.dynamic_block_base < 0)
    fail(ErrorCode::InvalidArgument,
         where + ": dynamic_block_base must be 0 or more, got " + std::to_string(options.dynamic_block_base));
  check_thread_functions(options.create_thread, options.join_thread, where);
  prepare_operator_schemas();
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  ThreadingOptions& o = impl->options;
  if (o.intra_op_num_threads == 0) o.intra_op_num_threads = physical_core_count();
  if (o.inter_op_num_threads == 0) o.inter_op_num_threads = physical_core_count();
  ThreadPoolOptions p;
  p.allow_spinning = o.allow_spinning;
  p.create_thread = o.create_thread;
  p.join_thread = o.join_thread;
  if (o.intra_op_num_threads > 1) {
    p.num_threads = o.intra_op_num_threads;
    p.dynamic_block_base = o.dynamic_block_base;
    impl->intra = std::make_unique<ThreadPool>(p);
  }
  if (o.inter_op_num_threads > 1) {
    p.num_threads = o.inter_op_num_threads;
    p.dynamic_block_base = 0;  // its loops are one scheduler per thread
    impl->inter = std::make_unique<ThreadPool>(p);
  }
  return std::shared_ptr<Environment>(new Environment(std::move(impl)));
}

int Environment::intra_op_num_threads() const { return impl_->options.intra_op_num_threads; }
int Environment::inter_op_num_threads() const { return impl_->options.inter_op_num_threads; }

int dynamic_block_base_from(const SessionOptions& options, const std::string& model_name) {
  auto it = options.config.find(kBlockBaseKey);
  if (it == options.config.end()) return 0;
  const std::string& v = it->second;
  bool digits = !v.empty() && v.size() <= 9;
  for (char c : v) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (!digits)
    fail(ErrorCode::InvalidArgument, "model '" + model_name + "': session config '" + kBlockBaseKey +
                                         "' must be an integer of 0 or more (0: equal chunks), got '" + v + "'");
  return std::stoi(v);
}

namespace {

// A "0" / "1" session config entry; `absent` when it is not set.
bool config_flag(const SessionOptions& options, const std::string& key, bool absent, const std::string& where) {
  auto it = options.config.find(key);
  if (it == options.config.end()) return absent;
  if (it->second != "0" && it->second != "1")
    fail(ErrorCode::InvalidArgument, where + ": " + key + " must be \"0\" or \"1\", got \"" + it->second + "\"");
  return it->second == "1";
}

}  // namespace

SessionThreads make_session_threads(const SessionOptions& options, const std::string& model_name,
                                    bool openmp_kernels) {
  const std::string where = "model '" + model_name + "': session options";
  const int block_base = dynamic_block_base_from(options, model_name);
  const bool parallel = options.execution_mode == ExecutionMode::Parallel;
  SessionThreads t;
  if (!options.use_per_session_threads) {
    if (!options.environment)
      fail(ErrorCode::InvalidArgument,
           where + ": use_per_session_threads = false needs an environment (SessionOptions::environment, an "
                   "onyx::Environment whose thread pools the session uses)");
    t.environment = options.environment;
    const Environment::Impl& env = t.environment->impl();
    t.intra = env.intra.get();
    if (parallel) t.inter = env.inter.get();
    if (options.config.count(kBlockBaseKey) && block_base != env.options.dynamic_block_base)
      log_message(options, LogLevel::Warning,
                  where + ": '" + kBlockBaseKey + "' is ignored: the session uses the environment's intra-op pool (" +
                      "block base " + std::to_string(env.options.dynamic_block_base) +
                      "); set ThreadingOptions::dynamic_block_base instead");
    return t;
  }
  check_count(options.intra_op_num_threads, "intra_op_num_threads", where);
  check_count(options.inter_op_num_threads, "inter_op_num_threads", where);
  check_thread_functions(options.create_thread, options.join_thread, where);
  ThreadPoolOptions p;
  // onnxruntime's spelling of the same switch, as a config entry. Unless it
  // says otherwise, a pool of its own beside oneDNN's OpenMP threads doesn't
  // spin: two spinning runtimes on two cores trade the cores at every switch
  // (SqueezeNet, 2 threads: median 3.5 -> 3.1 ms with the pool not spinning).
  p.allow_spinning =
      config_flag(options, "session.intra_op.allow_spinning", options.allow_spinning && !openmp_kernels, where);
  p.use_openmp_team = config_flag(options, "session.intra_op.openmp_team", openmp_kernels, where);
  p.create_thread = options.create_thread;
  p.join_thread = options.join_thread;
  p.num_threads = options.intra_op_num_threads > 0 ? options.intra_op_num_threads : physical_core_count();
  p.dynamic_block_base = block_base;
  if (p.num_threads > 1) {
    t.own_intra = std::make_unique<ThreadPool>(p);
    t.intra = t.own_intra.get();
  }
  if (parallel) {
    p.num_threads = options.inter_op_num_threads > 0 ? options.inter_op_num_threads : physical_core_count();
    p.dynamic_block_base = 0;
    if (p.num_threads > 1) {
      t.own_inter = std::make_unique<ThreadPool>(p);
      t.inter = t.own_inter.get();
    }
  }
  return t;
}

std::shared_ptr<BufferPool> environment_arena(const SessionOptions& options, const std::string& model_name) {
  auto it = options.config.find("session.use_env_allocators");
  if (it == options.config.end() || it->second == "0") return nullptr;
  auto bad = [&](const std::string& why) {
    fail(ErrorCode::InvalidArgument, "model '" + model_name + "': session.use_env_allocators: " + why);
  };
  if (it->second != "1") bad("expected \"0\" or \"1\", got \"" + it->second + "\"");
  if (!options.environment) bad("\"1\" needs SessionOptions::environment, whose arena the sessions share");
  if (!options.enable_cpu_mem_arena) bad("\"1\" contradicts enable_cpu_mem_arena = false");
  return options.environment->impl().arena;
}

}  // namespace onyx
