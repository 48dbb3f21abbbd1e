// What the CUDA provider's sources share: error checks, the provider class
// its kernels reach through KernelInitContext::provider(), launch helpers.
#pragma once
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/arena.h"
#include "cuda/conv_algo_cache.h"
#include "cuda/cuda_provider.h"
#include "kernels/execution_provider.h"
#include "kernels/registry.h"

namespace onyx {

[[noreturn]] void cuda_fail(const char* what, const std::string& err, const char* file, int line);

#define ONYX_CUDA(expr)                                                                  \
  do {                                                                                   \
    cudaError_t onyx_e_ = (expr);                                                        \
    if (onyx_e_ != cudaSuccess) ::onyx::cuda_fail(#expr, cudaGetErrorString(onyx_e_), __FILE__, __LINE__); \
  } while (0)
#define ONYX_CUBLAS(expr)                                                                          \
  do {                                                                                             \
    cublasStatus_t onyx_s_ = (expr);                                                               \
    if (onyx_s_ != CUBLAS_STATUS_SUCCESS)                                                          \
      ::onyx::cuda_fail(#expr, std::string("cuBLAS status ") + std::to_string(static_cast<int>(onyx_s_)), __FILE__, __LINE__); \
  } while (0)
#define ONYX_CUDNN(expr)                                                                            \
  do {                                                                                              \
    cudnnStatus_t onyx_s_ = (expr);                                                                 \
    if (onyx_s_ != CUDNN_STATUS_SUCCESS) ::onyx::cuda_fail(#expr, cudnnGetErrorString(onyx_s_), __FILE__, __LINE__); \
  } while (0)
// After a kernel launch: reports launch errors (bad configuration) at once.
#define ONYX_CUDA_LAUNCHED() ONYX_CUDA(cudaGetLastError())

class CudaProvider final : public ExecutionProvider {
 public:
  CudaProvider(const CudaProviderOptions& options, int device_count);
  ~CudaProvider() override;

  const std::string& name() const override { return name_; }
  Device device() const override { return {DeviceType::CUDA, options_.device_id}; }
  const KernelRegistry& registry() const override { return cuda_kernel_registry(); }
  Tensor make_tensor(DataType dtype, const Shape& shape) override;
  void copy_to_device(const Tensor& host_src, Tensor& dst) override;
  void copy_to_host(const Tensor& device_src, Tensor& host_dst) override;
  void copy_on_device(const Tensor& src, Tensor& dst) override;
  void synchronize() override;
  int timing_begin() override;
  double timing_end(int token) override;
  bool graph_capture_enabled() const override { return options_.enable_cuda_graph; }
  void begin_capture() override;
  void end_capture() override;
  void replay() override;

  // For kernels. activate() makes the provider's device current on the calling thread.
  void activate() const;
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  const CudaProviderOptions& options() const { return options_; }
  ConvAlgoCache& conv_cache() { return *conv_cache_; }
  const std::string& device_name() const { return device_name_; }
  size_t free_memory_hint() const;  // for cudnn_conv_use_max_workspace
  const ArenaStats arena_stats() const;

 private:
  struct Memory;
  std::string name_ = "CUDA";
  CudaProviderOptions options_;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::shared_ptr<Memory> memory_;
  std::unique_ptr<ConvAlgoCache> conv_cache_;
  Tensor cublas_workspace_;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> timing_events_;
  int next_timing_ = 0;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
};

// The provider a CUDA kernel was made for (checked).
CudaProvider& cuda_provider_of(const KernelInitContext& ctx);

// Grid size for n elements with `block` threads, capped for grid-stride loops.
inline unsigned grid_for(int64_t n, int block = 256) {
  int64_t g = (n + block - 1) / block;
  if (g < 1) g = 1;
  if (g > 65535 * 8) g = 65535 * 8;
  return static_cast<unsigned>(g);
}

// Kernel families (src/cuda/kernels/<family>.cu), listed in cuda_provider.cc.
void register_cuda_elementwise(KernelRegistry& r);
void register_cuda_generators(KernelRegistry& r);
void register_cuda_activation(KernelRegistry& r);
void register_cuda_matmul(KernelRegistry& r);
void register_cuda_conv(KernelRegistry& r);
void register_cuda_pool(KernelRegistry& r);
void register_cuda_normalization(KernelRegistry& r);
void register_cuda_softmax(KernelRegistry& r);
void register_cuda_data_movement(KernelRegistry& r);
void register_cuda_shape_ops(KernelRegistry& r);
void register_cuda_reduction(KernelRegistry& r);
void register_cuda_cast(KernelRegistry& r);
void register_cuda_attention(KernelRegistry& r);

}  // namespace onyx
