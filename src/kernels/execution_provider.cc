#include "kernels/execution_provider.h"

#include <cstring>

namespace onyx {

Tensor ExecutionProvider::to_device(const Tensor& host) {
  if (host.device() == device()) return host;
  Tensor d = make_tensor(host.dtype(), host.shape());
  copy_to_device(host, d);
  return d;
}

Tensor ExecutionProvider::to_host(const Tensor& t) {
  if (t.device().type == DeviceType::CPU) return t;
  Tensor h(t.dtype(), t.shape());
  copy_to_host(t, h);
  return h;
}

namespace {

class CpuProvider final : public ExecutionProvider {
 public:
  explicit CpuProvider(const KernelRegistry& r) : registry_(r) {}
  const std::string& name() const override { return name_; }
  Device device() const override { return {}; }
  const KernelRegistry& registry() const override { return registry_; }
  Tensor make_tensor(DataType dtype, const Shape& shape) override { return Tensor(dtype, shape); }
  void copy_to_device(const Tensor& src, Tensor& dst) override { copy(src, dst); }
  void copy_to_host(const Tensor& src, Tensor& dst) override { copy(src, dst); }

 private:
  static void copy(const Tensor& src, Tensor& dst) {
    if (src.nbytes() != dst.nbytes()) fail(ErrorCode::RuntimeException, "CPU copy: sizes differ");
    if (src.dtype() == DataType::String) {
      for (int64_t i = 0; i < src.numel(); ++i) dst.data<std::string>()[i] = src.data<std::string>()[i];
    } else if (src.nbytes()) {
      std::memcpy(dst.raw(), src.raw(), src.nbytes());
    }
  }
  std::string name_ = "CPU";
  const KernelRegistry& registry_;
};

}  // namespace

std::shared_ptr<ExecutionProvider> make_cpu_provider(const KernelRegistry& registry) {
  return std::make_shared<CpuProvider>(registry);
}

std::unique_ptr<Kernel> make_copy_kernel(ExecutionProvider* provider, bool to_device) {
  return std::make_unique<LambdaKernel>([provider, to_device](KernelContext& ctx) {
    const Value& v = ctx.input_value(0);
    if (!v.is_tensor()) {
      ctx.set_output(0, v);
      return;
    }
    const Tensor& t = v.tensor();
    if (to_device) {
      if (t.device() == provider->device()) return ctx.set_output(0, v);
      if (t.device().type != DeviceType::CPU)
        kernel_fail("copy to " + provider->name() + ": the input is on another device");
      Tensor& out = ctx.allocate_output(0, t.dtype(), t.shape());  // the copy node's allocator: the device
      provider->copy_to_device(t, out);
    } else {
      if (t.device().type == DeviceType::CPU) return ctx.set_output(0, v);
      Tensor out(t.dtype(), t.shape());
      provider->copy_to_host(t, out);
      ctx.set_output(0, Value(std::move(out)));
    }
  });
}

// ---- Provider options ----

namespace {

[[noreturn]] void bad_option(const std::string& key, const std::string& value, const std::string& expected) {
  fail(ErrorCode::InvalidArgument, "provider 'CUDAExecutionProvider': option '" + key + "' has an invalid value '" + value +
                                       "' (expected " + expected + ")");
}

int64_t parse_int(const std::string& key, const std::string& value, int64_t lo, const std::string& expected) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    bad_option(key, value, expected);
  }
  if (used != value.size() || v < lo) bad_option(key, value, expected);
  return v;
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true" || value == "True") return true;
  if (value == "0" || value == "false" || value == "False") return false;
  bad_option(key, value, "0, 1, true or false");
}

}  // namespace

CudaProviderOptions parse_cuda_provider_options(const ProviderOptions& options) {
  CudaProviderOptions o;
  static const char* known =
      "device_id, gpu_mem_limit, arena_extend_strategy, cudnn_conv_algo_search, cudnn_conv_use_max_workspace, "
      "cudnn_conv1d_pad_to_nc1d, do_copy_in_default_stream, enable_cuda_graph, use_tf32, conv_algo_cache_file";
  for (auto& [key, value] : options) {
    if (key == "device_id") {
      o.device_id = static_cast<int>(parse_int(key, value, 0, "a device index >= 0"));
    } else if (key == "gpu_mem_limit") {
      int64_t v = parse_int(key, value, 1, "a positive number of bytes");
      o.gpu_mem_limit = static_cast<size_t>(v);
    } else if (key == "arena_extend_strategy") {
      if (value == "kNextPowerOfTwo" || value == "0") o.arena_extend_strategy = ArenaExtendStrategy::kNextPowerOfTwo;
      else if (value == "kSameAsRequested" || value == "1") o.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
      else bad_option(key, value, "kNextPowerOfTwo or kSameAsRequested");
    } else if (key == "cudnn_conv_algo_search") {
      if (value == "EXHAUSTIVE") o.cudnn_conv_algo_search = ConvAlgoSearch::Exhaustive;
      else if (value == "HEURISTIC") o.cudnn_conv_algo_search = ConvAlgoSearch::Heuristic;
      else if (value == "DEFAULT") o.cudnn_conv_algo_search = ConvAlgoSearch::Default;
      else bad_option(key, value, "EXHAUSTIVE, HEURISTIC or DEFAULT");
    } else if (key == "cudnn_conv_use_max_workspace") {
      o.cudnn_conv_use_max_workspace = parse_bool(key, value);
    } else if (key == "cudnn_conv1d_pad_to_nc1d") {
      o.cudnn_conv1d_pad_to_nc1d = parse_bool(key, value);
    } else if (key == "do_copy_in_default_stream") {
      o.do_copy_in_default_stream = parse_bool(key, value);
    } else if (key == "enable_cuda_graph") {
      o.enable_cuda_graph = parse_bool(key, value);
    } else if (key == "use_tf32") {
      o.use_tf32 = parse_bool(key, value);
    } else if (key == "conv_algo_cache_file") {
      if (value.empty()) bad_option(key, value, "a file path");
      o.conv_algo_cache_file = value;
    } else {
      fail(ErrorCode::InvalidArgument, "provider 'CUDAExecutionProvider': unknown option '" + key + "' (value '" + value +
                                           "'); known options: " + known);
    }
  }
  return o;
}

}  // namespace onyx
