// Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (opset 12 and 13; 13 only widened the types). Both are ONNX functions whose
// expansion needs known input types, so they get real kernels here.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {


enum class Reduction { None, Sum, Mean };

Reduction parse_reduction(const std::string& s) {
  if (s == "none") return Reduction::None;
  if (s == "sum") return Reduction::Sum;
  if (s == "mean") return Reduction::Mean;
  kernel_fail("reduction must be 'none', 'sum' or 'mean', got '" + s + "'");
}

struct LossAttrs {
  Reduction reduction = Reduction::Mean;
  std::optional<int64_t> ignore_index;
};

LossAttrs read_attrs(const KernelInitContext& ctx) {
  LossAttrs a;
  a.reduction = parse_reduction(ctx.get_string("reduction", "mean"));
  if (ctx.has("ignore_index")) a.ignore_index = ctx.get_int("ignore_index");
  return a;
}

// Negative log-likelihood over log-probabilities `logp` laid out as (N, C, D)
// with D the product of the trailing dims; `target` is (N, D). Writes the loss
// (N*D values for 'none', else a scalar) through `emit`.
template <class T>
void nll_core(const LossAttrs& a, const T* logp, const Shape& in_shape, const Tensor& target, const Tensor* weight,
              KernelContext& ctx, size_t out_index) {
  const int64_t N = in_shape[0], C = in_shape[1];
  int64_t D = 1;
  for (size_t i = 2; i < in_shape.size(); ++i) D *= in_shape[i];
  Shape expect_target(in_shape.begin(), in_shape.end());
  expect_target.erase(expect_target.begin() + 1);
  if (target.shape() != expect_target)
    kernel_fail("target shape " + shape_to_string(target.shape()) + " does not match input shape " +
                shape_to_string(in_shape) + " (expected " + shape_to_string(expect_target) + ")");
  if (target.dtype() != DataType::Int32 && target.dtype() != DataType::Int64)
    kernel_fail("target must be int32 or int64, got " + dtype_name(target.dtype()));
  if (weight) {
    if (weight->rank() != 1 || weight->dim(0) != C)
      kernel_fail("weight must have shape [" + std::to_string(C) + "], got " + shape_to_string(weight->shape()));
  }
  std::vector<double> loss(static_cast<size_t>(N * D));
  double wsum = 0, lsum = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      int64_t idx = n * D + d;
      int64_t t = target.int_at(idx);
      double l = 0, w = 0;
      if (!(a.ignore_index && t == *a.ignore_index)) {
        if (t < 0 || t >= C)
          kernel_fail("target value " + std::to_string(t) + " at index " + std::to_string(idx) +
                      " is out of range [0, " + std::to_string(C) + ")");
        w = weight ? weight->float_at(t) : 1.0;
        l = -to_d(logp[(n * C + t) * D + d]) * w;
      }
      loss[static_cast<size_t>(idx)] = l;
      wsum += w;
      lsum += l;
    }
  }
  if (a.reduction == Reduction::None) {
    Tensor& out = ctx.allocate_output(out_index, DataTypeOf<T>::value, expect_target);
    T* o = out.data<T>();
    for (size_t i = 0; i < loss.size(); ++i) o[i] = from_d<T>(loss[i]);
  } else {
    double v = a.reduction == Reduction::Sum ? lsum : lsum / wsum;
    Tensor& out = ctx.allocate_output(out_index, DataTypeOf<T>::value, {});
    out.data<T>()[0] = from_d<T>(v);
  }
}

void check_input(const Tensor& x) {
  if (x.rank() < 2) kernel_fail("input must have rank >= 2 (N, C, ...), got " + shape_to_string(x.shape()));
}

KernelFactory nll_factory() {
  return lambda_factory([](const KernelInitContext& ictx) {
    LossAttrs a = read_attrs(ictx);
    return [a](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const Tensor& target = ctx.input(1);
      const Tensor* weight = ctx.has_input(2) ? &ctx.input(2) : nullptr;
      check_input(x);
      dispatch_float(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        nll_core<T>(a, x.data<T>(), x.shape(), target, weight, ctx, 0);
      });
    };
  });
}

KernelFactory sce_factory() {
  return lambda_factory([](const KernelInitContext& ictx) {
    LossAttrs a = read_attrs(ictx);
    return [a](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const Tensor& target = ctx.input(1);
      const Tensor* weight = ctx.has_input(2) ? &ctx.input(2) : nullptr;
      check_input(x);
      dispatch_float(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t N = x.dim(0), C = x.dim(1);
        int64_t D = 1;
        for (int i = 2; i < x.rank(); ++i) D *= x.dim(i);
        // log_softmax over axis 1, computed in double
        Tensor logp_t;
        if (ctx.wants_output(1)) {
          logp_t = ctx.allocate_output(1, x.dtype(), x.shape());
        } else {
          logp_t = Tensor(x.dtype(), x.shape());
        }
        const T* in = x.data<T>();
        T* lp = logp_t.data<T>();
        std::vector<double> tmp(static_cast<size_t>(C));
        for (int64_t n = 0; n < N; ++n) {
          for (int64_t d = 0; d < D; ++d) {
            double mx = -INFINITY;
            for (int64_t c = 0; c < C; ++c) {
              tmp[c] = to_d(in[(n * C + c) * D + d]);
              if (tmp[c] > mx) mx = tmp[c];
            }
            double s = 0;
            for (int64_t c = 0; c < C; ++c) s += std::exp(tmp[c] - mx);
            double lse = mx + std::log(s);
            for (int64_t c = 0; c < C; ++c) {
              lp[(n * C + c) * D + d] = from_d<T>(tmp[c] - lse);
            }
          }
        }
        nll_core<T>(a, lp, x.shape(), target, weight, ctx, 0);
      });
    };
  });
}

}  // namespace

void register_loss(KernelRegistry& r) {
  r.add("NegativeLogLikelihoodLoss", 12, kMaxOpset, nll_factory());
  r.add("SoftmaxCrossEntropyLoss", 12, kMaxOpset, sce_factory());
}

}  // namespace onyx
