// The thread pools a session runs on: its own (SessionOptions' thread counts
// and thread functions) or, with use_per_session_threads = false, those of
// its Environment.
#pragma once
#include <memory>
#include <string>

#include "base/thread_pool.h"
#include "onyx/environment.h"
#include "onyx/session.h"
#include "runtime/execution_plan.h"

namespace onyx {

struct Environment::Impl {
  ThreadingOptions options;  // counts resolved
  std::unique_ptr<ThreadPool> intra, inter;  // null for one thread
  // The arena of intermediate tensors shared by the sessions whose config says
  // "session.use_env_allocators" = "1".
  std::shared_ptr<BufferPool> arena = std::make_shared<BufferPool>();
};

struct SessionThreads {
  std::shared_ptr<Environment> environment;  // keeps shared pools alive
  std::unique_ptr<ThreadPool> own_intra, own_inter;
  ThreadPool* intra = nullptr;  // kernels' pool; null: one thread
  ThreadPool* inter = nullptr;  // set only in parallel mode with more than one inter-op thread
};

// Parses the config entry "session.dynamic_block_base" (0 when absent);
// throws onyx::Error (InvalidArgument) naming the model unless it is an
// integer of 0 or more.
int dynamic_block_base_from(const SessionOptions& options, const std::string& model_name);

// Creates (or borrows) the pools for a session; throws onyx::Error
// (InvalidArgument) naming the model on inconsistent options.
// openmp_kernels: the plan runs kernels on OpenMP (oneDNN); the session's own
// intra-op pool then runs on the OpenMP team too, unless the application
// creates the threads or the config entry "session.intra_op.openmp_team" is
// "0" (and a pool with threads of its own then doesn't spin unless
// "session.intra_op.allow_spinning" is "1").
SessionThreads make_session_threads(const SessionOptions& options, const std::string& model_name,
                                    bool openmp_kernels = false);

// The environment's shared arena when the config entry
// "session.use_env_allocators" is "1" (null when absent or "0"; an error
// naming the model without an environment, with enable_cpu_mem_arena off, or
// for another value).
std::shared_ptr<BufferPool> environment_arena(const SessionOptions& options, const std::string& model_name);

}  // namespace onyx
