// MatMul (batched, broadcasting batch dims), Gemm and com.onyx FusedMatMul
// through cuBLAS. float and float16.
#include "cuda/kernels/act.cuh"
#include "cuda/kernels/blas.cuh"

namespace onyx {
namespace cuda {

namespace {

template <class T>
__global__ void bcast_copy(const T* src, T* dst, int64_t n, Strides st) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    int64_t off[1];
    offsets(st, i, off, 1);
    dst[i] = src[off[0]];
  }
}

// out = a @ b with NumPy matmul semantics.
template <class T>
void matmul(cublasHandle_t h, cudaStream_t stream, const Tensor& a, const Tensor& b, Tensor& y) {
  Shape as = a.shape(), bs = b.shape();
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Shape ob = broadcast_shapes({ab, bb});
  const int64_t batch = shape_numel(ob);
  const int64_t na = shape_numel(ab), nb = shape_numel(bb);
  const T* A = a.data<T>();
  const T* B = b.data<T>();
  T* C = y.data<T>();
  if (K == 0) {
    ONYX_CUDA(cudaMemsetAsync(C, 0, y.nbytes(), stream));
    return;
  }
  if (nb == 1 && na == batch) {  // B shared: one GEMM over all rows of A
    gemm_rm<T>(h, false, false, batch * M, N, K, 1.f, A, K, 0, B, N, 0, 0.f, C, N, 0, 1);
  } else if (na == batch && nb == batch && ab.size() == bb.size() && ab == bb) {
    gemm_rm<T>(h, false, false, M, N, K, 1.f, A, K, M * K, B, N, K * N, 0.f, C, N, M * N, batch);
  } else if (na == 1) {
    gemm_rm<T>(h, false, false, M, N, K, 1.f, A, K, 0, B, N, K * N, 0.f, C, N, M * N, batch);
  } else if (nb == 1) {
    gemm_rm<T>(h, false, false, M, N, K, 1.f, A, K, M * K, B, N, 0, 0.f, C, N, M * N, batch);
  } else {  // mixed broadcasting: one GEMM per output batch
    const size_t r = ob.size();
    Shape pa(r, 1), pb(r, 1);
    std::copy(ab.begin(), ab.end(), pa.begin() + (r - ab.size()));
    std::copy(bb.begin(), bb.end(), pb.begin() + (r - bb.size()));
    for (int64_t i = 0; i < batch; ++i) {
      int64_t rem = i, ia = 0, ib = 0, sa = 1, sb = 1;
      for (size_t d = r; d-- > 0;) {
        int64_t c = rem % ob[d];
        rem /= ob[d];
        ia += (pa[d] == 1 ? 0 : c) * sa;
        ib += (pb[d] == 1 ? 0 : c) * sb;
        sa *= pa[d];
        sb *= pb[d];
      }
      gemm_rm<T>(h, false, false, M, N, K, 1.f, A + ia * M * K, K, 0, B + ib * K * N, N, 0, 0.f, C + i * M * N, N, 0, 1);
    }
  }
}

Shape matmul_shape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) kernel_fail("MatMul: inputs must have rank >= 1");
  Shape as = a, bs = b;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  if (as.back() != bs[bs.size() - 2])
    kernel_fail("MatMul: inner dimensions differ: " + shape_to_string(a) + " x " + shape_to_string(b));
  Shape out = broadcast_shapes({Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2)});
  if (a.size() > 1) out.push_back(as[as.size() - 2]);
  if (b.size() > 1) out.push_back(bs.back());
  return out;
}

class MatMul final : public CudaKernel {
 public:
  explicit MatMul(const KernelInitContext& ctx) : CudaKernel(ctx) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != b.dtype()) kernel_fail("CUDA MatMul: input types differ");
    Tensor& y = ctx.allocate_output(0, a.dtype(), matmul_shape(a.shape(), b.shape()));
    if (y.numel() == 0) return;
    dispatch_fp(a.dtype(), "MatMul", [&](auto tag) { matmul<decltype(tag)>(p_->cublas(), stream(), a, b, y); });
  }
};

class Gemm final : public CudaKernel {
 public:
  explicit Gemm(const KernelInitContext& ctx)
      : CudaKernel(ctx), alpha_(ctx.get_float("alpha", 1.f)), beta_(ctx.get_float("beta", 1.f)),
        ta_(ctx.get_int("transA", 0) != 0), tb_(ctx.get_int("transB", 0) != 0) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.rank() != 2 || b.rank() != 2) kernel_fail("Gemm: A and B must be 2-D");
    const int64_t M = ta_ ? a.dim(1) : a.dim(0), K = ta_ ? a.dim(0) : a.dim(1);
    const int64_t N = tb_ ? b.dim(0) : b.dim(1), Kb = tb_ ? b.dim(1) : b.dim(0);
    if (K != Kb) kernel_fail("Gemm: inner dimensions differ");
    Tensor& y = ctx.allocate_output(0, a.dtype(), {M, N});
    if (y.numel() == 0) return;
    const bool has_c = ctx.has_input(2) && beta_ != 0.f;
    dispatch_fp(a.dtype(), "Gemm", [&](auto tag) {
      using T = decltype(tag);
      if (has_c) {
        const Tensor& c = ctx.input(2);
        Strides st = make_strides({M, N}, {c.shape()});
        bcast_copy<T><<<grid_for(M * N), 256, 0, stream()>>>(c.data<T>(), y.data<T>(), M * N, st);
        ONYX_CUDA_LAUNCHED();
      }
      gemm_rm<T>(p_->cublas(), ta_, tb_, M, N, K, alpha_, a.data<T>(), ta_ ? M : K, 0, b.data<T>(), tb_ ? K : N, 0,
                 has_c ? beta_ : 0.f, y.data<T>(), N, 0, 1);
    });
  }

 private:
  float alpha_, beta_;
  bool ta_, tb_;
};

// com.onyx FusedMatMul: Y = activation(A @ W + bias), W 2-D.
class FusedMatMul final : public CudaKernel {
 public:
  explicit FusedMatMul(const KernelInitContext& ctx) : CudaKernel(ctx), act_(fused_activation(ctx)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (w.rank() != 2 || a.rank() < 1 || a.shape().back() != w.dim(0))
      kernel_fail("FusedMatMul: expected A [..., K] and W [K, N], got " + shape_to_string(a.shape()) + " and " +
                  shape_to_string(w.shape()));
    const int64_t K = w.dim(0), N = w.dim(1), M = K ? a.numel() / K : 0;
    Shape out = a.shape();
    out.back() = N;
    Tensor& y = ctx.allocate_output(0, a.dtype(), out);
    if (y.numel() == 0) return;
    const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    dispatch_fp(a.dtype(), "FusedMatMul", [&](auto tag) {
      using T = decltype(tag);
      gemm_rm<T>(p_->cublas(), false, false, M, N, K, 1.f, a.data<T>(), K, 0, w.data<T>(), N, 0, 0.f, y.data<T>(), N, 0, 1);
      if (bias || act_.act != Act::None)
        bias_act<T>(y.data<T>(), bias ? bias->data<T>() : nullptr, nullptr, y.data<T>(), y.numel(), 1, N, act_, stream());
    });
  }

 private:
  ActParams act_;
};

}  // namespace
}  // namespace cuda

void register_cuda_matmul(KernelRegistry& r) {
  using namespace cuda;
  KernelDef m = cuda_def<MatMul>("MatMul", 1);
  m.supports_types = float_inputs(2);
  r.add(std::move(m));
  KernelDef g = cuda_def<Gemm>("Gemm", 7);
  g.supports_types = float_inputs(2);
  r.add(std::move(g));
  KernelDef f = cuda_def<FusedMatMul>("FusedMatMul", 1, kMaxOpset, "com.onyx");
  f.supports_types = float_inputs(2);
  f.supports = [](const Node& n) { return fused_activation_supported(n); };
  r.add(std::move(f));
}

}  // namespace onyx
