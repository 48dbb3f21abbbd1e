// Softmax and LogSoftmax (opset < 13: over the flattened trailing dims from
// `axis`; opset 13+: over one axis). float and float16, float math.
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

namespace {

// One block per row of `len` contiguous elements.
template <class T, bool kLog>
__global__ void softmax_rows(const T* x, T* y, int64_t len) {
  const T* xr = x + blockIdx.x * len;
  T* yr = y + blockIdx.x * len;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) m = fmaxf(m, to_f(xr[j]));
  m = block_reduce<true>(m);
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) s += expf(to_f(xr[j]) - m);
  s = block_reduce<false>(s);
  const float log_s = logf(s), inv = 1.f / s;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    float v = to_f(xr[j]) - m;
    yr[j] = from_f<T>(kLog ? v - log_s : expf(v) * inv);
  }
}

// One thread per (outer, inner) column of `len` elements spaced `inner` apart.
template <class T, bool kLog>
__global__ void softmax_cols(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < n; c += int64_t(blockDim.x) * gridDim.x) {
    const int64_t o = c / inner, i = c % inner;
    const T* xc = x + o * len * inner + i;
    T* yc = y + o * len * inner + i;
    float m = -INFINITY;
    for (int64_t j = 0; j < len; ++j) m = fmaxf(m, to_f(xc[j * inner]));
    float s = 0.f;
    for (int64_t j = 0; j < len; ++j) s += expf(to_f(xc[j * inner]) - m);
    const float log_s = logf(s);
    for (int64_t j = 0; j < len; ++j) {
      float v = to_f(xc[j * inner]) - m;
      yc[j * inner] = from_f<T>(kLog ? v - log_s : expf(v) / s);
    }
  }
}

class Softmax final : public CudaKernel {
 public:
  Softmax(const KernelInitContext& ctx, bool log)
      : CudaKernel(ctx), log_(log), old_(ctx.opset() < 13), axis_(ctx.get_int("axis", ctx.opset() < 13 ? 1 : -1)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (x.numel() == 0) return;
    const int64_t axis = normalize_axis(axis_, x.rank());
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.dim(d);
      else if (d == axis || old_) len *= x.dim(d);
      else inner *= x.dim(d);
    }
    dispatch_fp(x.dtype(), "Softmax", [&](auto tag) {
      using T = decltype(tag);
      if (inner == 1) {
        if (log_) softmax_rows<T, true><<<static_cast<unsigned>(outer), row_block(len), 0, stream()>>>(x.data<T>(), y.data<T>(), len);
        else softmax_rows<T, false><<<static_cast<unsigned>(outer), row_block(len), 0, stream()>>>(x.data<T>(), y.data<T>(), len);
      } else {
        const unsigned g = grid_for(outer * inner);
        if (log_) softmax_cols<T, true><<<g, 256, 0, stream()>>>(x.data<T>(), y.data<T>(), outer, len, inner);
        else softmax_cols<T, false><<<g, 256, 0, stream()>>>(x.data<T>(), y.data<T>(), outer, len, inner);
      }
      ONYX_CUDA_LAUNCHED();
    });
  }

 private:
  bool log_, old_;
  int64_t axis_;
};

}  // namespace
}  // namespace cuda

void register_cuda_softmax(KernelRegistry& r) {
  using namespace cuda;
  for (int log = 0; log < 2; ++log) {
    KernelDef d;
    d.op_type = log ? "LogSoftmax" : "Softmax";
    d.since_version = 1;
    d.factory = [log](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> { return std::make_unique<Softmax>(ctx, log != 0); };
    d.supports_types = float_inputs(1);
    r.add(std::move(d));
  }
}

}  // namespace onyx
