// Transpose, Concat, Split, Slice, Gather and Expand for every fixed-size
// element type (moved as 1/2/4/8-byte words).
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

namespace {

bool known_fixed_types(const std::vector<DataType>& t) {
  if (t.empty() || t[0] == DataType::Undefined || t[0] == DataType::String) return false;
  return dtype_size(t[0]) == 1 || dtype_size(t[0]) == 2 || dtype_size(t[0]) == 4 || dtype_size(t[0]) == 8;
}

// y[i] = x[base + sum(coord_d * stride_d)] for the strides in st.in[0].
template <class U>
__global__ void strided_gather(const U* x, U* y, int64_t n, Strides st, int64_t base) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    int64_t off[1];
    offsets(st, i, off, 1);
    y[i] = x[base + off[0]];
  }
}

template <class U>
void launch_strided(const void* x, void* y, int64_t n, const Strides& st, int64_t base, cudaStream_t s) {
  if (n == 0) return;
  strided_gather<U><<<grid_for(n), 256, 0, s>>>(static_cast<const U*>(x), static_cast<U*>(y), n, st, base);
  ONYX_CUDA_LAUNCHED();
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

class Transpose final : public CudaKernel {
 public:
  explicit Transpose(const KernelInitContext& ctx) : CudaKernel(ctx), perm_(ctx.get_ints("perm")) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int r = x.rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (int i = r - 1; i >= 0; --i) perm.push_back(i);
    if (static_cast<int>(perm.size()) != r) kernel_fail("Transpose: perm has the wrong length");
    if (r > kMaxDims) kernel_fail("CUDA Transpose: at most 8 dimensions");
    Shape out(r);
    Shape in_st = contiguous_strides(x.shape());
    Strides st;
    st.rank = r;
    for (int i = 0; i < r; ++i) {
      int64_t p = perm[i] < 0 ? perm[i] + r : perm[i];
      if (p < 0 || p >= r) kernel_fail("Transpose: bad perm");
      out[i] = x.dim(static_cast<int>(p));
      st.out[i] = out[i];
      st.in[0][i] = in_st[p];
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    dispatch_size(x.dtype(), "Transpose", [&](auto tag) {
      launch_strided<decltype(tag)>(x.raw(), y.raw(), y.numel(), st, 0, stream());
    });
  }

 private:
  std::vector<int64_t> perm_;
};

class Concat final : public CudaKernel {
 public:
  explicit Concat(const KernelInitContext& ctx) : CudaKernel(ctx), axis_(ctx.get_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    std::vector<const Tensor*> ins;
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i)) ins.push_back(&ctx.input(i));
    if (ins.empty()) kernel_fail("Concat needs inputs");
    const Tensor& first = *ins[0];
    const int64_t axis = normalize_axis(axis_, first.rank());
    Shape out = first.shape();
    out[axis] = 0;
    for (auto* t : ins) {
      if (t->rank() != first.rank() || t->dtype() != first.dtype()) kernel_fail("Concat: inputs differ in rank or type");
      for (int d = 0; d < first.rank(); ++d)
        if (d != axis && t->dim(d) != first.dim(d)) kernel_fail("Concat: input shapes differ off the axis");
      out[axis] += t->dim(static_cast<int>(axis));
    }
    Tensor& y = ctx.allocate_output(0, first.dtype(), out);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= out[d];
    for (int d = static_cast<int>(axis) + 1; d < first.rank(); ++d) inner *= out[d];
    const size_t es = dtype_size(first.dtype());
    const size_t dpitch = static_cast<size_t>(out[axis] * inner) * es;
    size_t offset = 0;
    for (auto* t : ins) {
      const size_t width = static_cast<size_t>(t->dim(static_cast<int>(axis)) * inner) * es;
      if (width && outer)
        ONYX_CUDA(cudaMemcpy2DAsync(static_cast<char*>(y.raw()) + offset, dpitch, t->raw(), width, width,
                                    static_cast<size_t>(outer), cudaMemcpyDeviceToDevice, stream()));
      offset += width;
    }
  }

 private:
  int64_t axis_;
};

class Split final : public CudaKernel {
 public:
  explicit Split(const KernelInitContext& ctx)
      : CudaKernel(ctx), axis_(ctx.get_int("axis", 0)), split_attr_(ctx.get_ints("split")),
        num_outputs_attr_(ctx.get_int("num_outputs", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t axis = normalize_axis(axis_, x.rank());
    const int64_t len = x.dim(static_cast<int>(axis));
    const int64_t n_out = static_cast<int64_t>(ctx.num_outputs());
    std::vector<int64_t> split = split_attr_;
    if (ctx.has_input(1)) split = ctx.input(1).to_int64_vector();  // host-side input
    if (split.empty()) {
      const int64_t parts = num_outputs_attr_ > 0 ? num_outputs_attr_ : n_out;
      const int64_t each = (len + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i) split.push_back(std::max<int64_t>(0, std::min(each, len - i * each)));
    }
    if (static_cast<int64_t>(split.size()) != n_out) kernel_fail("Split: split sizes do not match the outputs");
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.dim(d);
    const size_t es = dtype_size(x.dtype());
    const size_t spitch = static_cast<size_t>(len * inner) * es;
    size_t offset = 0;
    for (int64_t k = 0; k < n_out; ++k) {
      Shape s = x.shape();
      s[axis] = split[k];
      const size_t width = static_cast<size_t>(split[k] * inner) * es;
      if (ctx.wants_output(k)) {
        Tensor& y = ctx.allocate_output(k, x.dtype(), s);
        if (width && outer)
          ONYX_CUDA(cudaMemcpy2DAsync(y.raw(), width, static_cast<const char*>(x.raw()) + offset, spitch, width,
                                      static_cast<size_t>(outer), cudaMemcpyDeviceToDevice, stream()));
      }
      offset += width;
    }
  }

 private:
  int64_t axis_;
  std::vector<int64_t> split_attr_;
  int64_t num_outputs_attr_;
};

class Slice final : public CudaKernel {
 public:
  explicit Slice(const KernelInitContext& ctx)
      : CudaKernel(ctx), from_inputs_(ctx.opset() >= 10), starts_(ctx.get_ints("starts")), ends_(ctx.get_ints("ends")),
        axes_(ctx.get_ints("axes")) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (from_inputs_) {  // host-side inputs
      starts = ctx.input(1).to_int64_vector();
      ends = ctx.input(2).to_int64_vector();
      axes = ctx.has_input(3) ? ctx.input(3).to_int64_vector() : std::vector<int64_t>{};
      if (ctx.has_input(4)) steps = ctx.input(4).to_int64_vector();
    }
    const int r = x.rank();
    if (r > kMaxDims) kernel_fail("CUDA Slice: at most 8 dimensions");
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      kernel_fail("Slice: starts, ends, axes and steps differ in length");
    std::vector<int64_t> b(r, 0), st(r, 1);
    Shape out = x.shape();
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t a = normalize_axis(axes[i], r), dim = x.dim(static_cast<int>(a)), step = steps[i];
      if (step == 0) kernel_fail("Slice: a step is 0");
      int64_t s = starts[i], e = ends[i];
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      if (step > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        out[a] = e > s ? (e - s + step - 1) / step : 0;
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        out[a] = s > e ? (s - e - step - 1) / -step : 0;
      }
      b[a] = s;
      st[a] = step;
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    Shape in_st = contiguous_strides(x.shape());
    Strides g;
    g.rank = r;
    int64_t base = 0;
    for (int d = 0; d < r; ++d) {
      g.out[d] = out[d];
      g.in[0][d] = in_st[d] * st[d];
      base += b[d] * in_st[d];
    }
    dispatch_size(x.dtype(), "Slice", [&](auto tag) {
      launch_strided<decltype(tag)>(x.raw(), y.raw(), y.numel(), g, base, stream());
    });
  }

 private:
  bool from_inputs_;
  std::vector<int64_t> starts_, ends_, axes_;
};

template <class U, class I>
__global__ void gather_kernel(const U* x, const I* idx, U* y, int64_t n, int64_t n_idx, int64_t axis_len, int64_t inner) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t in = i % inner, rest = i / inner, j = rest % n_idx, o = rest / n_idx;
    int64_t k = static_cast<int64_t>(idx[j]);
    if (k < 0) k += axis_len;
    k = k < 0 ? 0 : (k >= axis_len ? axis_len - 1 : k);  // out-of-range indices are clamped
    y[i] = x[(o * axis_len + k) * inner + in];
  }
}

class Gather final : public CudaKernel {
 public:
  explicit Gather(const KernelInitContext& ctx) : CudaKernel(ctx), axis_(ctx.get_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& idx = ctx.input(1);
    const int64_t axis = normalize_axis(axis_, x.rank());
    Shape out(x.shape().begin(), x.shape().begin() + axis);
    out.insert(out.end(), idx.shape().begin(), idx.shape().end());
    out.insert(out.end(), x.shape().begin() + axis + 1, x.shape().end());
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    const int64_t n = y.numel();
    if (n == 0) return;
    int64_t inner = 1;
    for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.dim(d);
    const int64_t axis_len = x.dim(static_cast<int>(axis)), n_idx = idx.numel();
    if (axis_len == 0) kernel_fail("Gather: the gathered axis is empty");
    dispatch_size(x.dtype(), "Gather", [&](auto tag) {
      using U = decltype(tag);
      if (idx.dtype() == DataType::Int64)
        gather_kernel<U, int64_t><<<grid_for(n), 256, 0, stream()>>>(x.data<U>(), idx.data<int64_t>(), y.data<U>(), n, n_idx,
                                                                     axis_len, inner);
      else if (idx.dtype() == DataType::Int32)
        gather_kernel<U, int32_t><<<grid_for(n), 256, 0, stream()>>>(x.data<U>(), idx.data<int32_t>(), y.data<U>(), n, n_idx,
                                                                     axis_len, inner);
      else kernel_fail("Gather: indices must be int32 or int64");
      ONYX_CUDA_LAUNCHED();
    });
  }

 private:
  int64_t axis_;
};

class Expand final : public CudaKernel {
 public:
  explicit Expand(const KernelInitContext& ctx) : CudaKernel(ctx) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape target = ctx.input(1).to_int64_vector();  // host-side input
    Shape out = broadcast_shapes({x.shape(), target});
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    Strides st = make_strides(out, {x.shape()});
    dispatch_size(x.dtype(), "Expand", [&](auto tag) { launch_strided<decltype(tag)>(x.raw(), y.raw(), y.numel(), st, 0, stream()); });
  }
};

}  // namespace
}  // namespace cuda

void register_cuda_data_movement(KernelRegistry& r) {
  using namespace cuda;
  auto add = [&](KernelDef d, std::vector<int> host = {}) {
    d.supports_types = known_fixed_types;
    d.host_inputs = std::move(host);
    r.add(std::move(d));
  };
  add(cuda_def<Transpose>("Transpose", 1));
  add(cuda_def<Concat>("Concat", 4));
  KernelDef split = cuda_def<Split>("Split", 2);
  add(std::move(split), {1});
  add(cuda_def<Slice>("Slice", 1), {1, 2, 3, 4});
  KernelDef g = cuda_def<Gather>("Gather", 1);
  g.supports_types = [](const std::vector<DataType>& t) {
    return known_fixed_types(t) && t.size() == 2 && (t[1] == DataType::Int64 || t[1] == DataType::Int32);
  };
  r.add(std::move(g));
  add(cuda_def<Expand>("Expand", 8), {1});
}

}  // namespace onyx
