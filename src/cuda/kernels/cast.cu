// Cast between float, float16, double, int32, int64, int8, uint8 and bool.
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

namespace {

template <class A, class B>
__device__ __forceinline__ B convert(A v) {
  if constexpr (std::is_same_v<A, half>) return convert<float, B>(__half2float(v));
  else if constexpr (std::is_same_v<B, half>) return __float2half(static_cast<float>(v));
  else if constexpr (std::is_same_v<B, bool>) return v != A(0);
  else return static_cast<B>(v);
}

template <class A, class B>
__global__ void cast_kernel(const A* x, B* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    y[i] = convert<A, B>(x[i]);
}

template <class F>
bool dispatch_cast_type(DataType t, F&& f) {
  switch (t) {
    case DataType::Float: f(float{}); return true;
    case DataType::Float16: f(half{}); return true;
    case DataType::Double: f(double{}); return true;
    case DataType::Int32: f(int32_t{}); return true;
    case DataType::Int64: f(int64_t{}); return true;
    case DataType::Int8: f(int8_t{}); return true;
    case DataType::UInt8: f(uint8_t{}); return true;
    case DataType::Bool: f(bool{}); return true;
    default: return false;
  }
}

bool castable(DataType t) {
  return dispatch_cast_type(t, [](auto) {});
}

class Cast final : public CudaKernel {
 public:
  explicit Cast(const KernelInitContext& ctx) : CudaKernel(ctx), to_(static_cast<DataType>(ctx.get_int("to"))) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == to_) {
      ctx.set_output(0, Value(x));
      return;
    }
    Tensor& y = ctx.allocate_output(0, to_, x.shape());
    const int64_t n = x.numel();
    if (n == 0) return;
    bool ok = dispatch_cast_type(x.dtype(), [&](auto a) {
      using A = decltype(a);
      bool ok2 = dispatch_cast_type(to_, [&](auto b) {
        using B = decltype(b);
        cast_kernel<A, B><<<grid_for(n), 256, 0, stream()>>>(x.data<A>(), y.data<B>(), n);
        ONYX_CUDA_LAUNCHED();
      });
      if (!ok2) cuda_unsupported_type("Cast", to_);
    });
    if (!ok) cuda_unsupported_type("Cast", x.dtype());
  }

 private:
  DataType to_;
};

}  // namespace
}  // namespace cuda

void register_cuda_cast(KernelRegistry& r) {
  using namespace cuda;
  KernelDef d = cuda_def<Cast>("Cast", 6);
  d.supports_types = [](const std::vector<DataType>& t) { return !t.empty() && castable(t[0]); };
  d.supports = [](const Node& n) {
    const Attribute* to = n.attr("to");
    return to && castable(static_cast<DataType>(to->i));
  };
  r.add(std::move(d));
}

}  // namespace onyx
