// An Environment owns thread pools that several sessions share: create one,
// then give it to each session with use_per_session_threads = false.
//
//   onyx::ThreadingOptions t;
//   t.intra_op_num_threads = 2;
//   auto env = onyx::Environment::create(t);
//   onyx::SessionOptions o;
//   o.environment = env;
//   o.use_per_session_threads = false;   // the session starts no threads of its own
//   auto a = onyx::Session::from_file("a.onnx", o), b = onyx::Session::from_file("b.onnx", o);
//
// Sessions keep their environment alive. Kernels of sessions that run at the
// same time take turns on the shared intra-op pool.
//
// The environment also owns an arena for intermediate tensors: sessions whose
// config has "session.use_env_allocators" = "1" take their buffers from it
// (one allocator for all of them) instead of keeping one arena each.
#pragma once
#include <functional>
#include <memory>

namespace onyx {

// The application's thread functions, for every worker thread a pool starts:
// create_thread must start a thread that runs `body` and return a handle for
// it (any value; Onyx only passes it back); join_thread receives each handle
// once, when the pool shuts down, and must wait until that thread has ended.
using CreateThreadFn = std::function<void*(std::function<void()> body)>;
using JoinThreadFn = std::function<void(void* handle)>;

struct ThreadingOptions {
  // Threads per pool, the calling thread included (a pool of N starts N - 1
  // workers); 0: the number of physical cores. The inter-op pool runs
  // independent nodes of sessions in ExecutionMode::Parallel; 1: none.
  int intra_op_num_threads = 0;
  int inter_op_num_threads = 0;
  // As SessionOptions::allow_spinning.
  bool allow_spinning = true;
  // As the session config entry "session.dynamic_block_base", for the
  // shared intra-op pool: 0 splits parallel loops in equal chunks; B > 0 in
  // chunks of max(1, remaining / (B x threads)) items, large first.
  int dynamic_block_base = 0;
  // Both or neither; unset: std::thread.
  CreateThreadFn create_thread;
  JoinThreadFn join_thread;
};

// Builds the ONNX operator schemas the graph optimizer looks up: a few
// milliseconds, once per process, that the first session's load otherwise
// pays. Environment::create calls it, as onnxruntime registers its schemas
// when its environment is created; `import onyx` does too. Later calls
// return at once.
void prepare_operator_schemas();

class Environment {
 public:
  // Starts the pools' threads. Throws onyx::Error (InvalidArgument) on a
  // negative count or block base, or when only one of the thread functions is set.
  static std::shared_ptr<Environment> create(const ThreadingOptions& options = {});
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  int intra_op_num_threads() const;  // as resolved (0 replaced by the core count)
  int inter_op_num_threads() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Environment(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
