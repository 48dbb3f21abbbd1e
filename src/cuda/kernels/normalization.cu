// BatchNormalization (inference), LayerNormalization (Y only) and com.onyx
// SkipLayerNormalization. float and float16, float statistics.
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

namespace {

template <class T>
__global__ void batchnorm_kernel(const T* x, const T* scale, const T* bias, const T* mean, const T* var, T* y, int64_t n,
                                 int64_t inner, int64_t channels, float eps) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t c = (i / inner) % channels;
    const float inv = rsqrtf(to_f(var[c]) + eps);
    y[i] = from_f<T>((to_f(x[i]) - to_f(mean[c])) * inv * to_f(scale[c]) + to_f(bias[c]));
  }
}

// One block per row: y = (x + skip - mean) / sqrt(var + eps) * gamma + beta.
// skip may be null or repeat every `skip_period` rows (0: same shape as x).
template <class T>
__global__ void layernorm_kernel(const T* x, const T* skip, int64_t skip_rows, const T* gamma, const T* beta, T* y,
                                 int64_t cols, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  const T* sr = skip ? skip + (skip_rows ? row % skip_rows : row) * cols : nullptr;
  T* yr = y + row * cols;
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += to_f(xr[j]) + (sr ? to_f(sr[j]) : 0.f);
  const float mean = block_reduce<false>(sum) / static_cast<float>(cols);
  float sq = 0.f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float d = to_f(xr[j]) + (sr ? to_f(sr[j]) : 0.f) - mean;
    sq += d * d;
  }
  const float inv = rsqrtf(block_reduce<false>(sq) / static_cast<float>(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float v = (to_f(xr[j]) + (sr ? to_f(sr[j]) : 0.f) - mean) * inv * to_f(gamma[j]);
    if (beta) v += to_f(beta[j]);
    yr[j] = from_f<T>(v);
  }
}

class BatchNorm final : public CudaKernel {
 public:
  explicit BatchNorm(const KernelInitContext& ctx) : CudaKernel(ctx), eps_(ctx.get_float("epsilon", 1e-5f)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) kernel_fail("CUDA BatchNormalization: expected rank >= 2");
    const int64_t C = x.dim(1), inner = C && x.dim(0) ? x.numel() / (x.dim(0) * C) : 1;
    for (int k = 1; k <= 4; ++k)
      if (ctx.input(k).numel() != C || ctx.input(k).dtype() != x.dtype())
        kernel_fail("CUDA BatchNormalization: parameter " + std::to_string(k) + " must have C elements of X's type");
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    const int64_t n = x.numel();
    if (n == 0) return;
    dispatch_fp(x.dtype(), "BatchNormalization", [&](auto tag) {
      using T = decltype(tag);
      batchnorm_kernel<T><<<grid_for(n), 256, 0, stream()>>>(x.data<T>(), ctx.input(1).data<T>(), ctx.input(2).data<T>(),
                                                             ctx.input(3).data<T>(), ctx.input(4).data<T>(), y.data<T>(),
                                                             n, inner, C, eps_);
      ONYX_CUDA_LAUNCHED();
    });
  }

 private:
  float eps_;
};

class LayerNorm final : public CudaKernel {
 public:
  LayerNorm(const KernelInitContext& ctx, bool skip)
      : CudaKernel(ctx), skip_(skip), axis_(skip ? -1 : ctx.get_int("axis", -1)), eps_(ctx.get_float("epsilon", 1e-5f)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor* s = skip_ ? &ctx.input(1) : nullptr;
    const Tensor& gamma = ctx.input(skip_ ? 2 : 1);
    const int bi = skip_ ? 3 : 2;
    const Tensor* beta = ctx.has_input(bi) ? &ctx.input(bi) : nullptr;
    const int64_t axis = normalize_axis(axis_, x.rank());
    int64_t cols = 1;
    for (int d = static_cast<int>(axis); d < x.rank(); ++d) cols *= x.dim(d);
    const int64_t rows = cols ? x.numel() / cols : 0;
    if (gamma.numel() != cols || (beta && beta->numel() != cols))
      kernel_fail("CUDA layer norm: scale and bias must have " + std::to_string(cols) + " elements");
    if (gamma.dtype() != x.dtype() || (beta && beta->dtype() != x.dtype()))
      kernel_fail("CUDA layer norm: scale and bias must have X's type");
    int64_t skip_rows = 0;
    if (s) {
      if (s->dtype() != x.dtype()) kernel_fail("SkipLayerNormalization: skip must have X's type");
      // Leading 1s aside ([1, S, H] position embeddings), a skip of X's trailing dims repeats
      // over the leading rows.
      Shape trailing(std::find_if(s->shape().begin(), s->shape().end(), [](int64_t d) { return d != 1; }),
                     s->shape().end());
      if (s->shape() == x.shape()) skip_rows = 0;
      else if (s->rank() <= x.rank() && cols > 0 && s->numel() >= cols && s->numel() % cols == 0 && axis == x.rank() - 1 &&
               std::equal(trailing.begin(), trailing.end(), x.shape().end() - trailing.size()))
        skip_rows = s->numel() / cols;
      else kernel_fail("SkipLayerNormalization: skip shape " + shape_to_string(s->shape()) + " does not fit " +
                       shape_to_string(x.shape()));
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (rows == 0 || cols == 0) return;
    dispatch_fp(x.dtype(), "layer norm", [&](auto tag) {
      using T = decltype(tag);
      layernorm_kernel<T><<<static_cast<unsigned>(rows), row_block(cols), 0, stream()>>>(
          x.data<T>(), s ? s->data<T>() : nullptr, skip_rows, gamma.data<T>(), beta ? beta->data<T>() : nullptr,
          y.data<T>(), cols, eps_);
      ONYX_CUDA_LAUNCHED();
    });
  }

 private:
  bool skip_;
  int64_t axis_;
  float eps_;
};

bool only_first_output(const Node& n) {
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return false;
  return true;
}

}  // namespace
}  // namespace cuda

void register_cuda_normalization(KernelRegistry& r) {
  using namespace cuda;
  KernelDef b = cuda_def<BatchNorm>("BatchNormalization", 7);
  b.supports_types = [](const std::vector<DataType>& t) {
    if (t.size() < 5 || !is_fp(t[0])) return false;
    for (size_t i = 1; i < 5; ++i)
      if (t[i] != t[0]) return false;
    return true;
  };
  b.supports = [](const Node& n) { return only_first_output(n) && AttributeReader(n).get_int("training_mode", 0) == 0; };
  r.add(std::move(b));
  for (int skip = 0; skip < 2; ++skip) {
    KernelDef d;
    d.domain = skip ? "com.onyx" : "";
    d.op_type = skip ? "SkipLayerNormalization" : "LayerNormalization";
    d.since_version = skip ? 1 : 17;
    d.factory = [skip](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> {
      return std::make_unique<LayerNorm>(ctx, skip != 0);
    };
    d.supports_types = float_inputs(skip ? 3 : 2);
    d.supports = only_first_output;
    r.add(std::move(d));
  }
}

}  // namespace onyx
