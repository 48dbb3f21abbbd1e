// com.onyx Attention (see docs/fused_ops.md): QKV = X W + b in one GEMM, then
// per batch a strided-batched GEMM over the heads for Q K^T, a masked softmax
// per row, and a second batched GEMM for the context. float and float16.
#include "cuda/kernels/act.cuh"
#include "cuda/kernels/blas.cuh"

namespace onyx {
namespace cuda {

namespace {

// One block per score row (b, h, i): row = softmax(row + mask).
template <class T>
__global__ void masked_softmax(T* scores, const T* mask, Strides mst, int64_t S, int64_t heads) {
  const int64_t row = blockIdx.x;  // ((b * heads) + h) * S + i
  T* r = scores + row * S;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
    float v = to_f(r[j]);
    if (mask) {
      int64_t off[1];
      offsets(mst, row * S + j, off, 1);
      v += to_f(mask[off[0]]);
    }
    m = fmaxf(m, v);
  }
  m = block_reduce<true>(m);
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
    float v = to_f(r[j]);
    if (mask) {
      int64_t off[1];
      offsets(mst, row * S + j, off, 1);
      v += to_f(mask[off[0]]);
    }
    s += expf(v - m);
  }
  s = block_reduce<false>(s);
  const float inv = 1.f / s;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
    float v = to_f(r[j]);
    if (mask) {
      int64_t off[1];
      offsets(mst, row * S + j, off, 1);
      v += to_f(mask[off[0]]);
    }
    r[j] = from_f<T>(expf(v - m) * inv);
  }
}

class Attention final : public CudaKernel {
 public:
  explicit Attention(const KernelInitContext& ctx)
      : CudaKernel(ctx), heads_(ctx.get_int("num_heads")), scale_(ctx.get_float("scale", 0.f)) {
    if (heads_ <= 0) kernel_fail("Attention needs num_heads > 0");
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& bias = ctx.input(2);
    const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (x.rank() != 3 || w.rank() != 2 || w.dim(0) != x.dim(2) || w.dim(1) % 3 || bias.numel() != w.dim(1))
      kernel_fail("Attention: expected X [B,S,Hin], W [Hin,3H], b [3H]; got " + shape_to_string(x.shape()) + ", " +
                  shape_to_string(w.shape()) + ", " + shape_to_string(bias.shape()));
    const int64_t B = x.dim(0), S = x.dim(1), Hin = x.dim(2), H = w.dim(1) / 3;
    if (H % heads_) kernel_fail("Attention: hidden size is not a multiple of num_heads");
    const int64_t D = H / heads_;
    const float scale = scale_ != 0.f ? scale_ : 1.f / std::sqrt(static_cast<float>(D));
    if (mask && (mask->dtype() != x.dtype() || mask->rank() > 4))
      kernel_fail("Attention: the mask must have X's type and rank <= 4");
    Tensor& y = ctx.allocate_output(0, x.dtype(), {B, S, H});
    if (y.numel() == 0) return;
    dispatch_fp(x.dtype(), "Attention", [&](auto tag) {
      using T = decltype(tag);
      cublasHandle_t h = p_->cublas();
      Tensor qkv = p_->make_tensor(x.dtype(), {B, S, 3 * H});
      gemm_rm<T>(h, false, false, B * S, 3 * H, Hin, 1.f, x.data<T>(), Hin, 0, w.data<T>(), 3 * H, 0, 0.f, qkv.data<T>(),
                 3 * H, 0, 1);
      bias_act<T>(qkv.data<T>(), bias.data<T>(), nullptr, qkv.data<T>(), qkv.numel(), 1, 3 * H, ActParams{}, stream());
      Tensor scores = p_->make_tensor(x.dtype(), {B, heads_, S, S});
      const T* q = qkv.data<T>();
      T* sc = scores.data<T>();
      for (int64_t b = 0; b < B; ++b) {
        const T* qb = q + b * S * 3 * H;
        // scores[b, h] = scale * Q_bh K_bh^T   (Q_bh: S x D rows 3H apart; K at +H)
        gemm_rm<T>(h, false, true, S, S, D, scale, qb, 3 * H, D, qb + H, 3 * H, D, 0.f, sc + b * heads_ * S * S, S, S * S,
                   heads_);
      }
      Strides mst;
      if (mask) mst = make_strides({B, heads_, S, S}, {mask->shape()});
      masked_softmax<T><<<static_cast<unsigned>(B * heads_ * S), row_block(S), 0, stream()>>>(
          sc, mask ? mask->data<T>() : nullptr, mst, S, heads_);
      ONYX_CUDA_LAUNCHED();
      for (int64_t b = 0; b < B; ++b) {
        const T* vb = q + b * S * 3 * H + 2 * H;
        // y[b, :, h*D:(h+1)*D] = P_bh V_bh
        gemm_rm<T>(h, false, false, S, D, S, 1.f, sc + b * heads_ * S * S, S, S * S, vb, 3 * H, D, 0.f,
                   y.data<T>() + b * S * H, H, D, heads_);
      }
    });
  }

 private:
  int64_t heads_;
  float scale_;
};

}  // namespace
}  // namespace cuda

void register_cuda_attention(KernelRegistry& r) {
  using namespace cuda;
  KernelDef d = cuda_def<Attention>("Attention", 1, kMaxOpset, "com.onyx");
  d.supports_types = float_inputs(3);
  r.add(std::move(d));
}

}  // namespace onyx
