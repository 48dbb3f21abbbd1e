// Metadata-only ops: the output shares the input's device memory with a new
// shape. Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (inference).
// Shape arguments (Reshape's shape, the axes inputs) are host-side inputs.
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

namespace {

enum class ShapeOp { Reshape, Flatten, Squeeze, Unsqueeze, Identity };

class Alias final : public CudaKernel {
 public:
  Alias(const KernelInitContext& ctx, ShapeOp op) : CudaKernel(ctx), op_(op) {
    allowzero_ = ctx.get_int("allowzero", 0) != 0;
    axis_ = ctx.get_int("axis", 1);
    axes_ = ctx.get_ints("axes");
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape out;
    switch (op_) {
      case ShapeOp::Identity: out = x.shape(); break;
      case ShapeOp::Reshape: {
        std::vector<int64_t> req = ctx.input(1).to_int64_vector();
        int64_t known = 1, infer = -1;
        for (size_t i = 0; i < req.size(); ++i) {
          int64_t d = req[i];
          if (d == 0 && !allowzero_) {
            if (i >= static_cast<size_t>(x.rank())) kernel_fail("Reshape: 0 refers past the input's rank");
            d = x.dim(static_cast<int>(i));
          }
          if (d == -1) {
            if (infer >= 0) kernel_fail("Reshape: more than one -1");
            infer = static_cast<int64_t>(i);
            d = 1;
          } else if (d < 0) {
            kernel_fail("Reshape: negative dimension");
          } else {
            known *= d;
          }
          out.push_back(d);
        }
        if (infer >= 0) {
          if (known == 0 || x.numel() % known) kernel_fail("Reshape: cannot infer -1 for " + shape_to_string(x.shape()));
          out[infer] = x.numel() / known;
        }
        break;
      }
      case ShapeOp::Flatten: {
        int64_t a = axis_ < 0 ? axis_ + x.rank() : axis_;
        if (a < 0 || a > x.rank()) kernel_fail("Flatten: axis out of range");
        int64_t outer = 1;
        for (int d = 0; d < a; ++d) outer *= x.dim(d);
        out = {outer, outer ? x.numel() / outer : 0};
        if (outer == 0) {
          int64_t inner = 1;
          for (int d = static_cast<int>(a); d < x.rank(); ++d) inner *= x.dim(d);
          out[1] = inner;
        }
        break;
      }
      case ShapeOp::Squeeze: {
        std::vector<int64_t> axes = ctx.has_input(1) ? ctx.input(1).to_int64_vector() : axes_;
        std::vector<bool> drop(x.rank(), false);
        if (axes.empty())
          for (int d = 0; d < x.rank(); ++d) drop[d] = x.dim(d) == 1;
        for (int64_t a : axes) {
          int64_t n = normalize_axis(a, x.rank());
          if (x.dim(static_cast<int>(n)) != 1) kernel_fail("Squeeze: dimension " + std::to_string(n) + " is not 1");
          drop[n] = true;
        }
        for (int d = 0; d < x.rank(); ++d)
          if (!drop[d]) out.push_back(x.dim(d));
        break;
      }
      case ShapeOp::Unsqueeze: {
        std::vector<int64_t> axes = ctx.has_input(1) ? ctx.input(1).to_int64_vector() : axes_;
        const int64_t r = x.rank() + static_cast<int64_t>(axes.size());
        std::vector<bool> ins(r, false);
        for (int64_t a : axes) {
          int64_t n = a < 0 ? a + r : a;
          if (n < 0 || n >= r || ins[n]) kernel_fail("Unsqueeze: bad axes");
          ins[n] = true;
        }
        int src = 0;
        for (int64_t d = 0; d < r; ++d) out.push_back(ins[d] ? 1 : x.dim(src++));
        break;
      }
    }
    ctx.set_output(0, Value(x.reshaped(out)));
  }

 private:
  ShapeOp op_;
  bool allowzero_ = false;
  int64_t axis_ = 1;
  std::vector<int64_t> axes_;
};

bool tensor_types(const std::vector<DataType>& t) {
  return !t.empty() && t[0] != DataType::Undefined && t[0] != DataType::String;
}

void add_alias(KernelRegistry& r, const char* name, int64_t since, ShapeOp op, std::vector<int> host = {}) {
  KernelDef d;
  d.op_type = name;
  d.since_version = since;
  d.factory = [op](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> { return std::make_unique<Alias>(ctx, op); };
  d.supports_types = tensor_types;
  d.host_inputs = std::move(host);
  if (std::string(name) == "Dropout")  // inference only: no mask output, training_mode absent
    d.supports = [](const Node& n) {
      return (n.outputs.size() < 2 || n.outputs[1].empty()) && (n.inputs.size() < 3 || n.inputs[2].empty());
    };
  r.add(std::move(d));
}

}  // namespace
}  // namespace cuda

void register_cuda_shape_ops(KernelRegistry& r) {
  using namespace cuda;
  add_alias(r, "Reshape", 5, ShapeOp::Reshape, {1});
  add_alias(r, "Flatten", 1, ShapeOp::Flatten);
  add_alias(r, "Squeeze", 1, ShapeOp::Squeeze, {1});
  add_alias(r, "Unsqueeze", 1, ShapeOp::Unsqueeze, {1});
  add_alias(r, "Identity", 1, ShapeOp::Identity);
  add_alias(r, "Dropout", 1, ShapeOp::Identity, {1, 2});
}

}  // namespace onyx
