// Binary elementwise ops with NumPy broadcasting (Add Sub Mul Div Pow Max Min
// PRelu, comparisons with a bool output) and Where. float and float16.
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

namespace {

enum class BinOp { Add, Sub, Mul, Div, Pow, Max, Min, PRelu, Equal, Less, Greater, LessOrEqual, GreaterOrEqual };

template <BinOp op>
__device__ __forceinline__ float apply(float a, float b) {
  if constexpr (op == BinOp::Add) return a + b;
  else if constexpr (op == BinOp::Sub) return a - b;
  else if constexpr (op == BinOp::Mul) return a * b;
  else if constexpr (op == BinOp::Div) return a / b;
  else if constexpr (op == BinOp::Pow) return powf(a, b);
  else if constexpr (op == BinOp::Max) return fmaxf(a, b);
  else if constexpr (op == BinOp::Min) return fminf(a, b);
  else if constexpr (op == BinOp::PRelu) return a < 0.f ? a * b : a;
  else if constexpr (op == BinOp::Equal) return a == b;
  else if constexpr (op == BinOp::Less) return a < b;
  else if constexpr (op == BinOp::Greater) return a > b;
  else if constexpr (op == BinOp::LessOrEqual) return a <= b;
  else return a >= b;
}

constexpr bool is_compare(BinOp op) { return op >= BinOp::Equal; }

template <class T, class Out, BinOp op>
__global__ void binary_same(const T* a, const T* b, Out* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    float r = apply<op>(to_f(a[i]), to_f(b[i]));
    if constexpr (is_compare(op)) y[i] = r != 0.f;
    else y[i] = from_f<T>(r);
  }
}

template <class T, class Out, BinOp op>
__global__ void binary_scalar_b(const T* a, const T* b, Out* y, int64_t n) {
  const float bv = to_f(b[0]);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    float r = apply<op>(to_f(a[i]), bv);
    if constexpr (is_compare(op)) y[i] = r != 0.f;
    else y[i] = from_f<T>(r);
  }
}

// a [rows, cols] with b [cols] (bias-like) or b [rows, 1] handled by the general path.
template <class T, class Out, BinOp op>
__global__ void binary_row_b(const T* a, const T* b, Out* y, int64_t n, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    float r = apply<op>(to_f(a[i]), to_f(b[i % cols]));
    if constexpr (is_compare(op)) y[i] = r != 0.f;
    else y[i] = from_f<T>(r);
  }
}

template <class T, class Out, BinOp op>
__global__ void binary_bcast(const T* a, const T* b, Out* y, int64_t n, Strides st) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    int64_t off[2];
    offsets(st, i, off, 2);
    float r = apply<op>(to_f(a[off[0]]), to_f(b[off[1]]));
    if constexpr (is_compare(op)) y[i] = r != 0.f;
    else y[i] = from_f<T>(r);
  }
}

template <class T>
__global__ void where_bcast(const bool* c, const T* x, const T* yv, T* out, int64_t n, Strides st) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    int64_t off[3];
    offsets(st, i, off, 3);
    out[i] = c[off[0]] ? x[off[1]] : yv[off[2]];
  }
}

template <BinOp op>
class Binary final : public CudaKernel {
 public:
  explicit Binary(const KernelInitContext& ctx) : CudaKernel(ctx) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != b.dtype()) kernel_fail("CUDA: input types differ");
    Shape out_shape = broadcast_shapes({a.shape(), b.shape()});
    DataType out_type = is_compare(op) ? DataType::Bool : a.dtype();
    Tensor& y = ctx.allocate_output(0, out_type, out_shape);
    const int64_t n = y.numel();
    if (n == 0) return;
    dispatch_fp(a.dtype(), "binary op", [&](auto tag) {
      using T = decltype(tag);
      using Out = std::conditional_t<is_compare(op), bool, T>;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      Out* py = static_cast<Out*>(y.raw());
      const unsigned g = grid_for(n);
      if (a.shape() == b.shape()) {
        binary_same<T, Out, op><<<g, 256, 0, stream()>>>(pa, pb, py, n);
      } else if (b.numel() == 1 && a.numel() == n) {
        binary_scalar_b<T, Out, op><<<g, 256, 0, stream()>>>(pa, pb, py, n);
      } else if (a.numel() == n && b.rank() >= 1 && a.rank() >= 1 && b.numel() == b.shape().back() &&
                 b.shape().back() == a.shape().back()) {
        binary_row_b<T, Out, op><<<g, 256, 0, stream()>>>(pa, pb, py, n, b.shape().back());
      } else {
        binary_bcast<T, Out, op><<<g, 256, 0, stream()>>>(pa, pb, py, n, make_strides(out_shape, {a.shape(), b.shape()}));
      }
      ONYX_CUDA_LAUNCHED();
    });
  }
};

class Where final : public CudaKernel {
 public:
  explicit Where(const KernelInitContext& ctx) : CudaKernel(ctx) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& c = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& yv = ctx.input(2);
    if (c.dtype() != DataType::Bool) kernel_fail("CUDA Where: the condition must be bool");
    Shape out_shape = broadcast_shapes({c.shape(), x.shape(), yv.shape()});
    Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    const int64_t n = out.numel();
    if (n == 0) return;
    Strides st = make_strides(out_shape, {c.shape(), x.shape(), yv.shape()});
    dispatch_fp(x.dtype(), "Where", [&](auto tag) {
      using T = decltype(tag);
      where_bcast<T><<<grid_for(n), 256, 0, stream()>>>(c.data<bool>(), x.data<T>(), yv.data<T>(), out.data<T>(), n, st);
      ONYX_CUDA_LAUNCHED();
    });
  }
};

template <BinOp op>
void add_binary(KernelRegistry& r, const char* name, int64_t since) {
  KernelDef d = cuda_def<Binary<op>>(name, since);
  d.supports_types = float_inputs(2);
  d.supports = [](const Node& n) { return n.inputs.size() == 2; };  // Max/Min: two inputs only
  r.add(std::move(d));
}

}  // namespace

}  // namespace cuda

void register_cuda_elementwise(KernelRegistry& r) {
  using namespace cuda;
  add_binary<BinOp::Add>(r, "Add", 7);
  add_binary<BinOp::Sub>(r, "Sub", 7);
  add_binary<BinOp::Mul>(r, "Mul", 7);
  add_binary<BinOp::Div>(r, "Div", 7);
  add_binary<BinOp::Pow>(r, "Pow", 7);
  add_binary<BinOp::Max>(r, "Max", 8);
  add_binary<BinOp::Min>(r, "Min", 8);
  add_binary<BinOp::PRelu>(r, "PRelu", 7);
  add_binary<BinOp::Equal>(r, "Equal", 7);
  add_binary<BinOp::Less>(r, "Less", 7);
  add_binary<BinOp::Greater>(r, "Greater", 7);
  add_binary<BinOp::LessOrEqual>(r, "LessOrEqual", 12);
  add_binary<BinOp::GreaterOrEqual>(r, "GreaterOrEqual", 12);
  KernelDef w = cuda_def<Where>("Where", 9);
  w.supports_types = [](const std::vector<DataType>& t) {
    return t.size() == 3 && t[0] == DataType::Bool && is_fp(t[1]) && t[1] == t[2];
  };
  r.add(std::move(w));
}

}  // namespace onyx
