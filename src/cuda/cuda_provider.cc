#include "cuda/cuda_provider.h"

#include <cstring>

#include "cuda/cublas_loader.h"
#include "cuda/cuda_common.h"

namespace onyx {

void cuda_fail(const char* what, const std::string& err, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  fail(ErrorCode::RuntimeException,
       std::string("CUDA error: ") + err + " (" + what + " at " + (base ? base + 1 : file) + ":" + std::to_string(line) + ")");
}

namespace {

KernelRegistry build_cuda_registry() {
  KernelRegistry r;
  register_cuda_activation(r);
  register_cuda_attention(r);
  register_cuda_cast(r);
  register_cuda_conv(r);
  register_cuda_data_movement(r);
  register_cuda_elementwise(r);
  register_cuda_generators(r);
  register_cuda_matmul(r);
  register_cuda_normalization(r);
  register_cuda_pool(r);
  register_cuda_reduction(r);
  register_cuda_shape_ops(r);
  register_cuda_softmax(r);
  return r;
}

class CudaBacking final : public BackingAllocator {
 public:
  explicit CudaBacking(int device) : device_(device) {}
  void* alloc(size_t bytes, std::string* why) override {
    cudaSetDevice(device_);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error state
      if (why) *why = cudaGetErrorString(e);
      return nullptr;
    }
    return p;
  }
  void free(void* p) override {
    cudaSetDevice(device_);
    cudaFree(p);
  }

 private:
  int device_;
};

thread_local int t_current_device = -1;

}  // namespace

const KernelRegistry& cuda_kernel_registry() {
  static const KernelRegistry registry = build_cuda_registry();
  return registry;
}

bool cuda_device_available(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    cudaGetLastError();
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device found";
    return false;
  }
  return true;
}

std::shared_ptr<ExecutionProvider> create_cuda_provider(const CudaProviderOptions& options, std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device found";
    cudaGetLastError();
    return nullptr;
  }
  if (options.device_id >= n)
    fail(ErrorCode::InvalidArgument, "provider 'CUDAExecutionProvider': option 'device_id' has an invalid value '" +
                                         std::to_string(options.device_id) + "' (this machine has " + std::to_string(n) +
                                         " CUDA device" + (n == 1 ? "" : "s") + ")");
  if (!load_cublas(why)) return nullptr;  // *why names the library and the loader's reason
  return std::make_shared<CudaProvider>(options, n);
}

// Device memory: the arena over cudaMalloc, shared by the tensors it hands
// out (they may outlive the session). Blocks made while a CUDA graph is
// captured are pinned: the graph reuses their addresses at every replay.
struct CudaProvider::Memory {
  CudaBacking backing;
  Arena arena;
  std::mutex mutex;
  bool capturing = false;
  std::vector<void*> pinned;
  Memory(int device, ArenaOptions o) : backing(device), arena(backing, std::move(o)) {}
  ~Memory() {
    for (void* p : pinned) try {
        arena.release(p);
      } catch (...) {
      }
  }
};

CudaProvider::CudaProvider(const CudaProviderOptions& options, int device_count) : options_(options) {
  activate();
  cudaDeviceProp prop{};
  ONYX_CUDA(cudaGetDeviceProperties(&prop, options_.device_id));
  device_name_ = prop.name;
  ONYX_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ONYX_CUBLAS(cublasCreate(&cublas_));
  ONYX_CUBLAS(cublasSetStream(cublas_, stream_));
  if (options_.use_tf32) ONYX_CUBLAS(cublasSetMathMode(cublas_, CUBLAS_TF32_TENSOR_OP_MATH));
  ONYX_CUDNN(cudnnCreate(&cudnn_));
  ONYX_CUDNN(cudnnSetStream(cudnn_, stream_));
  ArenaOptions ao;
  ao.name = "CUDA device " + std::to_string(options_.device_id) + " arena";
  ao.limit = options_.gpu_mem_limit;
  ao.extend = options_.arena_extend_strategy;
  memory_ = std::make_shared<Memory>(options_.device_id, ao);
  // cuBLAS gets a fixed workspace so that it allocates nothing itself (which
  // CUDA graph capture would not allow).
  cublas_workspace_ = make_tensor(DataType::UInt8, {32 << 20});
  ONYX_CUBLAS(cublasSetWorkspace(cublas_, cublas_workspace_.raw(), cublas_workspace_.nbytes()));
  std::string cache_file = options_.conv_algo_cache_file;
  conv_cache_ = std::make_unique<ConvAlgoCache>(cache_file);
}

CudaProvider::~CudaProvider() {
  cudaSetDevice(options_.device_id);
  if (stream_) cudaStreamSynchronize(stream_);
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (graph_) cudaGraphDestroy(graph_);
  for (auto& [a, b] : timing_events_) {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  if (cublas_) cublasDestroy(cublas_);
  if (cudnn_) cudnnDestroy(cudnn_);
  cublas_workspace_ = Tensor();
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaProvider::activate() const {
  if (t_current_device != options_.device_id) {
    ONYX_CUDA(cudaSetDevice(options_.device_id));
    t_current_device = options_.device_id;
  }
}

Tensor CudaProvider::make_tensor(DataType dtype, const Shape& shape) {
  if (dtype == DataType::String) fail(ErrorCode::NotImplemented, "CUDA: string tensors cannot live on the device");
  for (int64_t d : shape)
    if (d < 0) fail(ErrorCode::InvalidArgument, "negative dimension in tensor shape " + shape_to_string(shape));
  size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  activate();
  std::shared_ptr<Memory> mem = memory_;
  void* p = mem->arena.allocate(bytes);
  bool pin;
  {
    std::lock_guard<std::mutex> lock(mem->mutex);
    pin = mem->capturing;
    if (pin) mem->pinned.push_back(p);
  }
  // Deleters must not throw: a failed release is dropped (the arena keeps the block).
  std::shared_ptr<void> holder = pin ? std::shared_ptr<void>(p, [mem](void*) {})
                                     : std::shared_ptr<void>(p, [mem](void* q) {
                                         try {
                                           mem->arena.release(q);
                                         } catch (...) {
                                         }
                                       });
  return Tensor::wrap(dtype, shape, p, std::move(holder), device());
}

void CudaProvider::copy_to_device(const Tensor& src, Tensor& dst) {
  if (src.nbytes() != dst.nbytes()) fail(ErrorCode::RuntimeException, "CUDA copy to device: sizes differ");
  if (src.dtype() == DataType::String) fail(ErrorCode::NotImplemented, "CUDA: string tensors cannot live on the device");
  activate();
  if (src.nbytes()) ONYX_CUDA(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyHostToDevice, stream_));
}

void CudaProvider::copy_to_host(const Tensor& src, Tensor& dst) {
  if (src.nbytes() != dst.nbytes()) fail(ErrorCode::RuntimeException, "CUDA copy to host: sizes differ");
  activate();
  if (src.nbytes()) ONYX_CUDA(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDeviceToHost, stream_));
  ONYX_CUDA(cudaStreamSynchronize(stream_));
}

void CudaProvider::copy_on_device(const Tensor& src, Tensor& dst) {
  if (src.nbytes() != dst.nbytes()) fail(ErrorCode::RuntimeException, "CUDA copy on device: sizes differ");
  activate();
  if (src.nbytes()) ONYX_CUDA(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDeviceToDevice, stream_));
}

void CudaProvider::synchronize() {
  activate();
  ONYX_CUDA(cudaStreamSynchronize(stream_));
  ONYX_CUDA(cudaGetLastError());
}

int CudaProvider::timing_begin() {
  activate();
  if (next_timing_ >= static_cast<int>(timing_events_.size())) {
    cudaEvent_t a, b;
    ONYX_CUDA(cudaEventCreate(&a));
    ONYX_CUDA(cudaEventCreate(&b));
    timing_events_.push_back({a, b});
  }
  int token = next_timing_;
  ONYX_CUDA(cudaEventRecord(timing_events_[token].first, stream_));
  return token;
}

double CudaProvider::timing_end(int token) {
  if (token < 0 || token >= static_cast<int>(timing_events_.size())) return -1;
  auto [a, b] = timing_events_[token];
  ONYX_CUDA(cudaEventRecord(b, stream_));
  ONYX_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  ONYX_CUDA(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

void CudaProvider::begin_capture() {
  activate();
  ONYX_CUDA(cudaStreamSynchronize(stream_));
  {
    std::lock_guard<std::mutex> lock(memory_->mutex);
    memory_->capturing = true;
  }
  ONYX_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
}

void CudaProvider::end_capture() {
  {
    std::lock_guard<std::mutex> lock(memory_->mutex);
    memory_->capturing = false;
  }
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(stream_, &g);
  if (e != cudaSuccess)
    fail(ErrorCode::RuntimeException, std::string("enable_cuda_graph: capturing the CUDA graph failed: ") + cudaGetErrorString(e) +
                                          " (a kernel synchronized or allocated device memory during capture)");
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (graph_) cudaGraphDestroy(graph_);
  graph_ = g;
  ONYX_CUDA(cudaGraphInstantiate(&graph_exec_, graph_, 0));
}

void CudaProvider::replay() {
  if (!graph_exec_) fail(ErrorCode::RuntimeException, "enable_cuda_graph: no captured graph to replay");
  activate();
  ONYX_CUDA(cudaGraphLaunch(graph_exec_, stream_));
}

size_t CudaProvider::free_memory_hint() const {
  size_t free_b = 0, total = 0;
  if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) return 0;
  return free_b;
}

const ArenaStats CudaProvider::arena_stats() const { return memory_->arena.stats(); }

CudaProvider& cuda_provider_of(const KernelInitContext& ctx) {
  auto* p = dynamic_cast<CudaProvider*>(ctx.provider());
  if (!p) fail(ErrorCode::RuntimeException, "a CUDA kernel was created outside a CUDA session (no CUDA provider)");
  return *p;
}

}  // namespace onyx
