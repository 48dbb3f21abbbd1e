// ReduceMean, ReduceSum, ReduceMax over any axes (each run of adjacent axes
// is one pass of the row reduction). float and float16.
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

namespace {

class Reduce final : public CudaKernel {
 public:
  Reduce(const KernelInitContext& ctx, RowOp op, bool axes_input)
      : CudaKernel(ctx), op_(op), axes_input_(axes_input), axes_(ctx.get_ints("axes")),
        keepdims_(ctx.get_int("keepdims", 1) != 0), noop_(ctx.get_int("noop_with_empty_axes", 0) != 0) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> axes = axes_;
    if (axes_input_ && ctx.has_input(1)) axes = ctx.input(1).to_int64_vector();  // host-side input
    const int r = x.rank();
    std::vector<bool> red(r, false);
    if (axes.empty()) {
      if (noop_) {
        ctx.set_output(0, Value(x));
        return;
      }
      red.assign(r, true);
    }
    for (int64_t a : axes) red[normalize_axis(a, r)] = true;
    Shape out_keep = x.shape(), out;
    for (int d = 0; d < r; ++d) {
      if (red[d]) out_keep[d] = 1;
      if (!red[d] || keepdims_) out.push_back(red[d] ? 1 : x.dim(d));
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    if (x.numel() == 0) kernel_fail("CUDA reduction of an empty tensor is not supported");
    dispatch_fp(x.dtype(), "reduction", [&](auto tag) {
      using T = decltype(tag);
      // Reduce each run of adjacent axes in turn, from the last one.
      Shape cur = x.shape();
      Tensor src = x;
      int d = r - 1;
      std::vector<std::pair<int, int>> runs;  // [begin, end] inclusive
      while (d >= 0) {
        if (!red[d]) {
          --d;
          continue;
        }
        int e = d;
        while (d - 1 >= 0 && red[d - 1]) --d;
        runs.push_back({d, e});
        --d;
      }
      if (runs.empty()) {  // nothing to reduce (all axes of size... none): copy
        ONYX_CUDA(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, stream()));
        return;
      }
      for (size_t k = 0; k < runs.size(); ++k) {
        auto [b, e] = runs[k];
        int64_t outer = 1, len = 1, inner = 1;
        for (int i = 0; i < static_cast<int>(cur.size()); ++i) {
          if (i < b) outer *= cur[i];
          else if (i <= e) len *= cur[i];
          else inner *= cur[i];
        }
        Shape next = cur;
        for (int i = b; i <= e; ++i) next[i] = 1;
        const bool last = k + 1 == runs.size();
        Tensor dst = last ? y : p_->make_tensor(x.dtype(), next);
        if (op_ == RowOp::Sum) launch_reduce_rows<T, RowOp::Sum>(src.data<T>(), dst.data<T>(), outer, len, inner, stream());
        else if (op_ == RowOp::Mean) launch_reduce_rows<T, RowOp::Mean>(src.data<T>(), dst.data<T>(), outer, len, inner, stream());
        else launch_reduce_rows<T, RowOp::Max>(src.data<T>(), dst.data<T>(), outer, len, inner, stream());
        src = dst;
        cur = next;
      }
    });
  }

 private:
  RowOp op_;
  bool axes_input_;
  std::vector<int64_t> axes_;
  bool keepdims_, noop_;
};

void add_reduce(KernelRegistry& r, const char* name, RowOp op, int64_t axes_input_since) {
  for (int with_input = 0; with_input < 2; ++with_input) {
    KernelDef d;
    d.op_type = name;
    d.since_version = with_input ? axes_input_since : 1;
    d.until_version = with_input ? kMaxOpset : axes_input_since - 1;
    d.factory = [op, with_input](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> {
      return std::make_unique<Reduce>(ctx, op, with_input != 0);
    };
    d.supports_types = float_inputs(1);
    if (with_input) d.host_inputs = {1};
    r.add(std::move(d));
  }
}

}  // namespace
}  // namespace cuda

void register_cuda_reduction(KernelRegistry& r) {
  using namespace cuda;
  add_reduce(r, "ReduceMean", RowOp::Mean, 18);
  add_reduce(r, "ReduceSum", RowOp::Sum, 13);
  add_reduce(r, "ReduceMax", RowOp::Max, 18);
}

}  // namespace onyx
