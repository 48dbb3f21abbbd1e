// Ops that make a tensor from host-side scalars: ConstantOfShape and Range.
// Their arguments are host inputs, so a transformer's position ids and mask of
// ones are made on the device with no copy (and a CUDA graph can hold them).
#include "cuda/kernels/common.cuh"
#include "kernels/range_count.h"

namespace onyx {
namespace cuda {

namespace {

template <class U>
__global__ void fill_kernel(U* y, int64_t n, U v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) y[i] = v;
}

template <class T>
__global__ void range_kernel(T* y, int64_t n, T start, T delta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    y[i] = start + static_cast<T>(i) * delta;  // as the CPU kernel computes it, in T
}

class ConstantOfShape final : public CudaKernel {
 public:
  explicit ConstantOfShape(const KernelInitContext& ctx) : CudaKernel(ctx) {
    value_ = ctx.has("value") ? ctx.get_tensor("value") : Tensor::scalar<float>(0.0f);
    if (value_.numel() != 1)
      kernel_fail("ConstantOfShape: value must hold exactly one element, got shape " + shape_to_string(value_.shape()));
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& shape = ctx.input(0);  // host-side input
    if (!dtype_is_int(shape.dtype()) || shape.rank() > 1)
      kernel_fail("ConstantOfShape: input must be a 1-D integer tensor, got " + dtype_name(shape.dtype()) + " " +
                  shape_to_string(shape.shape()));
    Shape out = shape.to_int64_vector();
    for (int64_t d : out)
      if (d < 0) kernel_fail("ConstantOfShape: negative dimension in shape " + shape_to_string(out));
    Tensor& y = ctx.allocate_output(0, value_.dtype(), out);
    const int64_t n = y.numel();
    if (n == 0) return;
    dispatch_size(value_.dtype(), "ConstantOfShape", [&](auto tag) {
      using U = decltype(tag);
      fill_kernel<U><<<grid_for(n), 256, 0, stream()>>>(static_cast<U*>(y.raw()), n, static_cast<const U*>(value_.raw())[0]);
      ONYX_CUDA_LAUNCHED();
    });
  }

 private:
  Tensor value_;
};

class Range final : public CudaKernel {
 public:
  explicit Range(const KernelInitContext& ctx) : CudaKernel(ctx) {}
  void compute(KernelContext& ctx) const override {
    const Tensor &s = ctx.input(0), &l = ctx.input(1), &d = ctx.input(2);  // host-side inputs
    check_range_inputs(s, l, d);
    dispatch_range_type(s.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T start = s.data<T>()[0], delta = d.data<T>()[0];
      const int64_t n = range_count(start, l.data<T>()[0], delta);
      Tensor& y = ctx.allocate_output(0, s.dtype(), {n});
      if (n == 0) return;
      range_kernel<T><<<grid_for(n), 256, 0, stream()>>>(y.data<T>(), n, start, delta);
      ONYX_CUDA_LAUNCHED();
    });
  }

  static bool supported(DataType t) {
    return t == DataType::Float || t == DataType::Double || t == DataType::Int32 || t == DataType::Int64;
  }

 private:
  template <class F>
  static void dispatch_range_type(DataType t, F&& f) {
    switch (t) {
      case DataType::Float: return f(float{});
      case DataType::Double: return f(double{});
      case DataType::Int32: return f(int32_t{});
      case DataType::Int64: return f(int64_t{});
      default: cuda_unsupported_type("Range", t);
    }
  }
};

}  // namespace
}  // namespace cuda

void register_cuda_generators(KernelRegistry& r) {
  using namespace cuda;
  KernelDef c = cuda_def<ConstantOfShape>("ConstantOfShape", 9);
  c.supports_types = any_inputs();
  c.supports = [](const Node& n) {  // the value's type decides the output's: strings stay on the CPU
    const Attribute* a = n.attr("value");
    return !a || a->t.dtype() != DataType::String;
  };
  c.host_inputs = {0};
  r.add(std::move(c));
  KernelDef g = cuda_def<Range>("Range", 11);
  g.supports_types = [](const std::vector<DataType>& t) { return t.size() == 3 && Range::supported(t[0]); };
  g.host_inputs = {0, 1, 2};
  r.add(std::move(g));
}

}  // namespace onyx
