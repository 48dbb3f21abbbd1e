// Shared by the CUDA kernel families: the kernel base class, type helpers,
// registration helpers and broadcasting.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cuda/cuda_common.h"
#include <functional>

namespace onyx {
namespace cuda {

using half = __half;

template <class T> __device__ __forceinline__ float to_f(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float to_f<half>(half v) { return __half2float(v); }
template <class T> __device__ __forceinline__ T from_f(float v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ half from_f<half>(float v) { return __float2half(v); }

// A CUDA kernel: keeps its provider; run() makes the device current first.
class CudaKernel : public Kernel {
 public:
  explicit CudaKernel(const KernelInitContext& ctx) : p_(&cuda_provider_of(ctx)), node_(ctx.node().describe()) {}
  void run(KernelContext& ctx) const final {
    p_->activate();
    compute(ctx);
  }
  virtual void compute(KernelContext& ctx) const = 0;

 protected:
  cudaStream_t stream() const { return p_->stream(); }
  CudaProvider* p_;
  std::string node_;
};

// Registers a CUDA kernel class K (constructor K(const KernelInitContext&)).
template <class K>
KernelDef cuda_def(const std::string& op, int64_t since, int64_t until = kMaxOpset, const std::string& domain = "") {
  KernelDef d;
  d.domain = domain;
  d.op_type = op;
  d.since_version = since;
  d.until_version = until;
  d.factory = [](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> { return std::make_unique<K>(ctx); };
  return d;
}

inline bool is_fp(DataType t) { return t == DataType::Float || t == DataType::Float16; }
// Type checks for KernelDef::supports_types: the first n inputs are float/float16.
inline std::function<bool(const std::vector<DataType>&)> float_inputs(size_t n = 1) {
  return [n](const std::vector<DataType>& t) {
    for (size_t i = 0; i < n && i < t.size(); ++i)
      if (!is_fp(t[i])) return false;
    return !t.empty();
  };
}
inline std::function<bool(const std::vector<DataType>&)> any_inputs() {
  return [](const std::vector<DataType>&) { return true; };
}

[[noreturn]] inline void cuda_unsupported_type(const char* op, DataType t) {
  kernel_fail(std::string("CUDA ") + op + ": element type " + dtype_name(t) + " is not supported on the CUDA provider");
}

// Calls f(T{}) with T = float or half for the element type.
template <class F>
void dispatch_fp(DataType t, const char* op, F&& f) {
  if (t == DataType::Float) f(float{});
  else if (t == DataType::Float16) f(half{});
  else cuda_unsupported_type(op, t);
}

// Calls f(U{}) with U the unsigned word of the element size (moving bytes, not values).
template <class F>
void dispatch_size(DataType t, const char* op, F&& f) {
  if (t == DataType::String || t == DataType::Undefined)
    kernel_fail(std::string("CUDA ") + op + ": element type " + dtype_name(t) + " is not supported on the CUDA provider");
  switch (dtype_size(t)) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: kernel_fail(std::string("CUDA ") + op + ": unsupported element size");
  }
}

// Broadcast of up to kMaxDims dims: for an output index, the input offsets.
constexpr int kMaxDims = 8;
struct Strides {
  int rank = 0;
  int64_t out[kMaxDims];        // output dims
  int64_t in[3][kMaxDims];      // per input: stride for each output dim (0 where broadcast)
};

// NumPy broadcast of `shapes` to `out_shape`; fills per-input strides.
inline Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[s.size() - 1 - i];
      int64_t& o = out[rank - 1 - i];
      if (d == o || d == 1) continue;
      if (o == 1) o = d;
      else kernel_fail("shapes cannot be broadcast: " + shape_to_string(s) + " against " + shape_to_string(out));
    }
  return out;
}

inline Strides make_strides(const Shape& out, const std::vector<Shape>& ins) {
  if (out.size() > kMaxDims) kernel_fail("CUDA broadcasting supports at most 8 dimensions");
  Strides st;
  st.rank = static_cast<int>(out.size());
  for (int i = 0; i < st.rank; ++i) st.out[i] = out[i];
  for (size_t k = 0; k < ins.size() && k < 3; ++k) {
    const Shape& s = ins[k];
    int64_t stride = 1;
    for (int i = st.rank - 1; i >= 0; --i) {
      int j = static_cast<int>(s.size()) - (st.rank - i);
      int64_t d = j >= 0 ? s[j] : 1;
      st.in[k][i] = d == 1 ? 0 : stride;
      stride *= d;
    }
  }
  return st;
}

__device__ __forceinline__ void offsets(const Strides& st, int64_t idx, int64_t* off, int n_inputs) {
  for (int k = 0; k < n_inputs; ++k) off[k] = 0;
  for (int i = st.rank - 1; i >= 0; --i) {
    int64_t d = st.out[i];
    int64_t c = idx % d;
    idx /= d;
    for (int k = 0; k < n_inputs; ++k) off[k] += c * st.in[k][i];
  }
}

inline int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) kernel_fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace cuda
}  // namespace onyx

namespace onyx {
namespace cuda {

// Sum (or max) over a thread block; every thread gets the result. blockDim.x
// must be a multiple of 32 and at most 1024.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) {
    float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : (kMax ? -INFINITY : 0.f);
  for (int o = 16; o > 0; o >>= 1) {
    float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  return v;
}

// Threads per block for a row of `cols` elements.
inline int row_block(int64_t cols) {
  int b = 32;
  while (b < 1024 && b < cols) b <<= 1;
  return b;
}

// Over rows of `len` elements spaced `inner` apart (outer x len x inner):
// sum, mean or max per (outer, inner) pair.
enum class RowOp { Sum, Mean, Max };
template <class T, RowOp op>
__global__ void reduce_rows(const T* x, T* y, int64_t len, int64_t inner) {
  const int64_t row = blockIdx.x;  // one block per (outer, inner)
  const int64_t o = row / inner, i = row % inner;
  const T* base = x + o * len * inner + i;
  float acc = op == RowOp::Max ? -INFINITY : 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    float v = to_f(base[j * inner]);
    acc = op == RowOp::Max ? fmaxf(acc, v) : acc + v;
  }
  acc = block_reduce<op == RowOp::Max>(acc);
  if (threadIdx.x == 0) y[row] = from_f<T>(op == RowOp::Mean ? acc / static_cast<float>(len) : acc);
}

template <class T, RowOp op>
void launch_reduce_rows(const T* x, T* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  const int64_t rows = outer * inner;
  if (rows == 0) return;
  // rows beyond the grid limit are not expected (2^31 - 1 blocks)
  reduce_rows<T, op><<<static_cast<unsigned>(rows), row_block(len), 0, s>>>(x, y, len, inner);
  ONYX_CUDA_LAUNCHED();
}

}  // namespace cuda
}  // namespace onyx
