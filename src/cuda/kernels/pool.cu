// MaxPool, AveragePool (1-3 spatial dims; pads, ceil_mode, dilations,
// count_include_pad) with a direct kernel, and GlobalAveragePool /
// GlobalMaxPool as row reductions. float and float16.
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

namespace {

struct PoolGeom {
  int k = 0;  // spatial dims (1-3)
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, ks[3] = {1, 1, 1}, st[3] = {1, 1, 1}, pb[3] = {0, 0, 0},
          pe[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
};

template <class T, bool kMax>
__global__ void pool_kernel(const T* x, T* y, int64_t n, PoolGeom g, bool include_pad) {
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < n; idx += int64_t(blockDim.x) * gridDim.x) {
    int64_t rem = idx, o[3] = {0, 0, 0};
    for (int d = g.k - 1; d >= 0; --d) {
      o[d] = rem % g.out[d];
      rem /= g.out[d];
    }
    const int64_t plane = rem;  // n * C + c
    int64_t in_plane = 1;
    for (int d = 0; d < g.k; ++d) in_plane *= g.in[d];
    const T* xp = x + plane * in_plane;
    float acc = kMax ? -INFINITY : 0.f;
    int64_t count = 0, padded_count = 1;
    int64_t s[3], e[3];
    for (int d = 0; d < 3; ++d) {
      s[d] = d < g.k ? o[d] * g.st[d] - g.pb[d] : 0;
      e[d] = d < g.k ? s[d] + (g.ks[d] - 1) * g.dil[d] + 1 : 1;
      if (d < g.k) {
        int64_t pend = e[d] < g.in[d] + g.pe[d] ? e[d] : g.in[d] + g.pe[d];
        padded_count *= (pend - s[d] + g.dil[d] - 1) / g.dil[d];
      }
    }
    for (int64_t a = s[0]; a < e[0]; a += (g.k > 0 ? g.dil[0] : 1)) {
      if (g.k > 0 && (a < 0 || a >= g.in[0])) continue;
      for (int64_t b = s[1]; b < e[1]; b += (g.k > 1 ? g.dil[1] : 1)) {
        if (g.k > 1 && (b < 0 || b >= g.in[1])) continue;
        for (int64_t c = s[2]; c < e[2]; c += (g.k > 2 ? g.dil[2] : 1)) {
          if (g.k > 2 && (c < 0 || c >= g.in[2])) continue;
          int64_t off = g.k == 1 ? a : g.k == 2 ? a * g.in[1] + b : (a * g.in[1] + b) * g.in[2] + c;
          float v = to_f(xp[off]);
          acc = kMax ? fmaxf(acc, v) : acc + v;
          ++count;
        }
      }
    }
    if (!kMax) acc = acc / static_cast<float>(include_pad ? padded_count : (count ? count : 1));
    y[idx] = from_f<T>(acc);
  }
}

class Pool final : public CudaKernel {
 public:
  Pool(const KernelInitContext& ctx, bool is_max) : CudaKernel(ctx), max_(is_max) {
    auto_pad_ = ctx.get_string("auto_pad", "NOTSET");
    ceil_ = ctx.get_int("ceil_mode", 0) != 0;
    include_pad_ = ctx.get_int("count_include_pad", 0) != 0;
    dil_ = ctx.get_ints("dilations");
    ks_ = ctx.get_ints("kernel_shape");
    pads_ = ctx.get_ints("pads");
    st_ = ctx.get_ints("strides");
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int k = x.rank() - 2;
    if (k < 1 || k > 3 || static_cast<int>(ks_.size()) != k)
      kernel_fail("CUDA pool: expected 1-3 spatial dims matching kernel_shape, got " + shape_to_string(x.shape()));
    PoolGeom g;
    g.k = k;
    Shape out = {x.dim(0), x.dim(1)};
    for (int d = 0; d < k; ++d) {
      g.in[d] = x.dim(2 + d);
      g.ks[d] = ks_[d];
      g.st[d] = st_.empty() ? 1 : st_[d];
      g.dil[d] = dil_.empty() ? 1 : dil_[d];
      const int64_t ek = (g.ks[d] - 1) * g.dil[d] + 1;
      int64_t o;
      if (auto_pad_ == "SAME_UPPER" || auto_pad_ == "SAME_LOWER") {
        o = (g.in[d] + g.st[d] - 1) / g.st[d];
        int64_t total = std::max<int64_t>(0, (o - 1) * g.st[d] + ek - g.in[d]);
        g.pb[d] = auto_pad_ == "SAME_UPPER" ? total / 2 : total - total / 2;
        g.pe[d] = total - g.pb[d];
      } else {
        if (auto_pad_ != "VALID" && !pads_.empty()) {
          g.pb[d] = pads_[d];
          g.pe[d] = pads_[d + k];
        }
        const int64_t span = g.in[d] + g.pb[d] + g.pe[d] - ek;
        o = (ceil_ ? (span + g.st[d] - 1) / g.st[d] : span / g.st[d]) + 1;
        if (ceil_ && (o - 1) * g.st[d] >= g.in[d] + g.pb[d]) --o;  // no window may start in the end padding
      }
      if (o <= 0) kernel_fail("CUDA pool: empty output for input " + shape_to_string(x.shape()));
      g.out[d] = o;
      out.push_back(o);
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    const int64_t n = y.numel();
    if (n == 0) return;
    dispatch_fp(x.dtype(), "pool", [&](auto tag) {
      using T = decltype(tag);
      if (max_) pool_kernel<T, true><<<grid_for(n), 256, 0, stream()>>>(x.data<T>(), y.data<T>(), n, g, false);
      else pool_kernel<T, false><<<grid_for(n), 256, 0, stream()>>>(x.data<T>(), y.data<T>(), n, g, include_pad_);
      ONYX_CUDA_LAUNCHED();
    });
  }

 private:
  bool max_, ceil_ = false, include_pad_ = false;
  std::string auto_pad_;
  std::vector<int64_t> dil_, ks_, pads_, st_;
};

class GlobalPool final : public CudaKernel {
 public:
  GlobalPool(const KernelInitContext& ctx, bool is_max) : CudaKernel(ctx), max_(is_max) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 3) kernel_fail("CUDA global pool: expected rank >= 3");
    Shape out = x.shape();
    for (int d = 2; d < x.rank(); ++d) out[d] = 1;
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    const int64_t rows = x.dim(0) * x.dim(1), len = rows ? x.numel() / rows : 0;
    if (rows == 0) return;
    dispatch_fp(x.dtype(), "global pool", [&](auto tag) {
      using T = decltype(tag);
      if (max_) launch_reduce_rows<T, RowOp::Max>(x.data<T>(), y.data<T>(), rows, len, 1, stream());
      else launch_reduce_rows<T, RowOp::Mean>(x.data<T>(), y.data<T>(), rows, len, 1, stream());
    });
  }

 private:
  bool max_;
};

template <class K>
void add_pool(KernelRegistry& r, const char* name, int64_t since, bool is_max) {
  KernelDef d;
  d.op_type = name;
  d.since_version = since;
  d.factory = [is_max](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> { return std::make_unique<K>(ctx, is_max); };
  d.supports_types = float_inputs(1);
  if (std::string(name) == "MaxPool")  // no Indices output; storage_order irrelevant then
    d.supports = [](const Node& n) { return n.outputs.size() < 2 || n.outputs[1].empty(); };
  r.add(std::move(d));
}

}  // namespace
}  // namespace cuda

void register_cuda_pool(KernelRegistry& r) {
  using namespace cuda;
  add_pool<Pool>(r, "MaxPool", 1, true);
  add_pool<Pool>(r, "AveragePool", 1, false);
  add_pool<GlobalPool>(r, "GlobalAveragePool", 1, false);
  add_pool<GlobalPool>(r, "GlobalMaxPool", 1, true);
}

}  // namespace onyx
