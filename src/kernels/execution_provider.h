// The execution-provider interface: what the session and the partitioner need
// from a provider (CPU, CUDA). A provider has a name, a device, a kernel
// registry through which it claims nodes, memory for the tensors its kernels
// make, and copies between the host and its device.
//
// Provider options arrive as key/value strings (as in ONNX Runtime); the CUDA
// provider's are parsed and validated here so that a build without CUDA
// validates them the same way.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/arena.h"
#include "kernels/registry.h"
#include "onyx/tensor.h"

namespace onyx {

using ProviderOptions = std::map<std::string, std::string>;

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;
  virtual const std::string& name() const = 0;  // "CPU", "CUDA"
  std::string full_name() const { return name() + "ExecutionProvider"; }
  virtual Device device() const = 0;
  virtual const KernelRegistry& registry() const = 0;
  // Uninitialized storage on the provider's device; the tensor keeps its
  // memory (and the provider's allocator) alive.
  virtual Tensor make_tensor(DataType dtype, const Shape& shape) = 0;
  // Copies between tensors of the same type and size; `dst` is allocated. The
  // copy to the host is complete when the call returns; the copy to the device
  // is ordered before any later work of the provider.
  virtual void copy_to_device(const Tensor& host_src, Tensor& dst) = 0;
  virtual void copy_to_host(const Tensor& device_src, Tensor& host_dst) = 0;
  // Waits for all work queued by the provider.
  virtual void synchronize() {}

  // Kernel timing for the profiler (device providers): a token before the
  // kernel runs; the elapsed device time in ms after it (waits for the kernel).
  virtual int timing_begin() { return -1; }
  virtual double timing_end(int token) { return -1; }

  // Device-to-device copy of same-sized tensors, ordered on the provider's stream.
  virtual void copy_on_device(const Tensor& src, Tensor& dst) { copy_to_device(to_host(src), dst); }

  // Graph capture (CUDA graphs). Tensors made while capturing keep their
  // memory until the captured graph is dropped.
  virtual bool graph_capture_enabled() const { return false; }
  virtual void begin_capture() { fail(ErrorCode::NotImplemented, name() + ": graph capture is not supported"); }
  virtual void end_capture() {}
  virtual void replay() {}

  Tensor to_device(const Tensor& host);  // no copy when already there
  Tensor to_host(const Tensor& t);       // no copy when already on the host
};

// The CPU provider over the CPU kernel registry (src/cpu).
std::shared_ptr<ExecutionProvider> make_cpu_provider(const KernelRegistry& registry);

// A kernel that moves its one input to the host (to_device false) or to
// `provider`'s device; values already there, and non-tensors, pass through.
std::unique_ptr<Kernel> make_copy_kernel(ExecutionProvider* provider, bool to_device);

// ---- Provider options ----

enum class ConvAlgoSearch { Exhaustive, Heuristic, Default };

struct CudaProviderOptions {
  int device_id = 0;
  size_t gpu_mem_limit = SIZE_MAX;
  ArenaExtendStrategy arena_extend_strategy = ArenaExtendStrategy::kNextPowerOfTwo;
  ConvAlgoSearch cudnn_conv_algo_search = ConvAlgoSearch::Exhaustive;
  bool cudnn_conv_use_max_workspace = true;
  bool cudnn_conv1d_pad_to_nc1d = false;
  bool do_copy_in_default_stream = true;
  bool enable_cuda_graph = false;
  bool use_tf32 = false;  // float32 MatMul / Conv on TF32 tensor cores (10-bit mantissa inputs)
  std::string conv_algo_cache_file;  // Onyx: the chosen conv algorithms, persisted
};

// Throws an InvalidArgument Error naming the provider, the key and the value
// for an unknown key or a bad value.
CudaProviderOptions parse_cuda_provider_options(const ProviderOptions& options);

}  // namespace onyx
