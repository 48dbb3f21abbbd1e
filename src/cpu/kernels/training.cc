// Optimizers of the ai.onnx.preview.training domain: Adagrad, Momentum, Adam
// (all opset 1). Inputs are R (learning rate), T (update count) and then the
// groups of tensors (X..., G..., [V...], [H...]); each output group matches
// its input group. Arithmetic is done in double.
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/cpu_provider.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

const char* kDomain = "ai.onnx.preview.training";

// Reads element i of a float/double tensor.
double rd(const Tensor& t, int64_t i) { return t.float_at(i); }

void wr(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DataType::Double)
    t.data<double>()[i] = v;
  else
    t.data<float>()[i] = static_cast<float>(v);
}

void check_float_tensor(const Tensor& t, const char* what) {
  if (t.dtype() != DataType::Float && t.dtype() != DataType::Double)
    kernel_fail(std::string(what) + " must be float or double, got " + dtype_name(t.dtype()));
}

// Splits the inputs after R and T into `groups` equal groups; checks types and shapes.
int64_t group_count(KernelContext& ctx, int groups) {
  int64_t n = static_cast<int64_t>(ctx.num_inputs()) - 2;
  if (n <= 0 || n % groups != 0)
    kernel_fail("expected R, T and " + std::to_string(groups) + " equal groups of tensors, got " +
                std::to_string(ctx.num_inputs()) + " inputs");
  int64_t k = n / groups;
  if (static_cast<int64_t>(ctx.num_outputs()) > k * (groups - 1))
    kernel_fail("too many outputs: " + std::to_string(ctx.num_outputs()));
  for (int64_t i = 0; i < k; ++i) {
    const Tensor& x = ctx.input(2 + i);
    check_float_tensor(x, "X");
    for (int g = 1; g < groups; ++g) {
      const Tensor& o = ctx.input(2 + g * k + i);
      check_float_tensor(o, "optimizer input");
      if (o.shape() != x.shape())
        kernel_fail("optimizer input " + std::to_string(2 + g * k + i) + " has shape " +
                    shape_to_string(o.shape()) + " but X has shape " + shape_to_string(x.shape()));
    }
  }
  return k;
}

double scalar_of(const Tensor& t, const char* what) {
  if (t.numel() != 1) kernel_fail(std::string(what) + " must be a scalar, got shape " + shape_to_string(t.shape()));
  if (dtype_is_float(t.dtype())) return t.float_at(0);
  return static_cast<double>(t.int_at(0));
}

// Allocates output `i` like input tensor `like`, or a scratch tensor when not wanted.
Tensor out_like(KernelContext& ctx, size_t i, const Tensor& like) {
  if (ctx.wants_output(i)) return ctx.allocate_output(i, like.dtype(), like.shape());
  return Tensor(like.dtype(), like.shape());
}

KernelFactory adagrad_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    double decay = ic.get_float("decay_factor", 0.f), eps = ic.get_float("epsilon", 1e-6f),
           normc = ic.get_float("norm_coefficient", 0.f);
    return [=](KernelContext& ctx) {
      double R = scalar_of(ctx.input(0), "R");
      double T = scalar_of(ctx.input(1), "T");
      int64_t k = group_count(ctx, 3);
      double r = R / (1 + T * decay);
      for (int64_t i = 0; i < k; ++i) {
        const Tensor &X = ctx.input(2 + i), &G = ctx.input(2 + k + i), &H = ctx.input(2 + 2 * k + i);
        Tensor Xn = out_like(ctx, i, X), Hn = out_like(ctx, k + i, H);
        for (int64_t j = 0; j < X.numel(); ++j) {
          double x = rd(X, j);
          double g = normc * x + rd(G, j);
          double h = rd(H, j) + g * g;
          wr(Hn, j, h);
          wr(Xn, j, x - r * g / (std::sqrt(h) + eps));
        }
      }
    };
  });
}

KernelFactory momentum_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    if (!ic.has("alpha") || !ic.has("beta") || !ic.has("norm_coefficient"))
      kernel_fail("Momentum requires attributes alpha, beta and norm_coefficient");
    double alpha = ic.get_float("alpha", 0.f), beta = ic.get_float("beta", 0.f),
           normc = ic.get_float("norm_coefficient", 0.f);
    std::string mode = ic.get_string("mode", "standard");
    if (mode != "standard" && mode != "nesterov")
      kernel_fail("Momentum mode must be 'standard' or 'nesterov', got '" + mode + "'");
    bool nesterov = mode == "nesterov";
    return [=](KernelContext& ctx) {
      double R = scalar_of(ctx.input(0), "R");
      double T = scalar_of(ctx.input(1), "T");
      int64_t k = group_count(ctx, 3);
      double beta_adj = T > 0 ? beta : 1.0;
      for (int64_t i = 0; i < k; ++i) {
        const Tensor &X = ctx.input(2 + i), &G = ctx.input(2 + k + i), &V = ctx.input(2 + 2 * k + i);
        Tensor Xn = out_like(ctx, i, X), Vn = out_like(ctx, k + i, V);
        for (int64_t j = 0; j < X.numel(); ++j) {
          double x = rd(X, j);
          double g = normc * x + rd(G, j);
          double v = alpha * rd(V, j) + beta_adj * g;
          wr(Vn, j, v);
          wr(Xn, j, nesterov ? x - R * (g + alpha * v) : x - R * v);
        }
      }
    };
  });
}

KernelFactory adam_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    double alpha = ic.get_float("alpha", 0.9f), beta = ic.get_float("beta", 0.999f),
           eps = ic.get_float("epsilon", 1e-6f), normc = ic.get_float("norm_coefficient", 0.f),
           normc_post = ic.get_float("norm_coefficient_post", 0.f);
    return [=](KernelContext& ctx) {
      double R = scalar_of(ctx.input(0), "R");
      double T = scalar_of(ctx.input(1), "T");
      int64_t k = group_count(ctx, 4);
      double r_adj = T > 0 ? R * std::sqrt(1 - std::pow(beta, T)) / (1 - std::pow(alpha, T)) : R;
      for (int64_t i = 0; i < k; ++i) {
        const Tensor &X = ctx.input(2 + i), &G = ctx.input(2 + k + i), &V = ctx.input(2 + 2 * k + i),
                     &H = ctx.input(2 + 3 * k + i);
        Tensor Xn = out_like(ctx, i, X), Vn = out_like(ctx, k + i, V), Hn = out_like(ctx, 2 * k + i, H);
        for (int64_t j = 0; j < X.numel(); ++j) {
          double x = rd(X, j);
          double g = normc * x + rd(G, j);
          double v = alpha * rd(V, j) + (1 - alpha) * g;
          double h = beta * rd(H, j) + (1 - beta) * g * g;
          wr(Vn, j, v);
          wr(Hn, j, h);
          double xn = x - r_adj * v / (std::sqrt(h) + eps);
          wr(Xn, j, (1 - normc_post) * xn);
        }
      }
    };
  });
}

}  // namespace

namespace {

// com.onyx SumToShape(g, like): g summed over the axes numpy broadcasting added
// or stretched to reach it from like's shape: the gradient of a broadcast.
// The loader's expansion of ai.onnx.preview.training Gradient emits it.
KernelFactory sum_to_shape_factory() {
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      const Tensor& g = ctx.input(0);
      const Shape& target = ctx.input(1).shape();
      const Shape& gs = g.shape();
      if (target.size() > gs.size())
        kernel_fail("SumToShape: " + shape_to_string(gs) + " cannot be summed to " + shape_to_string(target));
      size_t lead = gs.size() - target.size();
      for (size_t i = 0; i < target.size(); ++i)
        if (target[i] != gs[lead + i] && target[i] != 1)
          kernel_fail("SumToShape: " + shape_to_string(gs) + " cannot be summed to " + shape_to_string(target));
      Tensor& y = ctx.allocate_output(0, g.dtype(), target);
      // The output index of each element of g: broadcast dims collapse to 0.
      std::vector<int64_t> out_strides(gs.size(), 0);
      int64_t stride = 1;
      for (size_t i = target.size(); i-- > 0;) {
        if (target[i] != 1) out_strides[lead + i] = stride;
        stride *= target[i];
      }
      dispatch_float(g.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
        std::vector<A> acc(static_cast<size_t>(y.numel()), A(0));
        std::vector<int64_t> idx(gs.size(), 0);
        const T* in = g.data<T>();
        for (int64_t e = 0; e < g.numel(); ++e) {
          int64_t o = 0;
          for (size_t d = 0; d < gs.size(); ++d) o += idx[d] * out_strides[d];
          acc[o] += static_cast<A>(in[e]);
          for (size_t d = gs.size(); d-- > 0;) {
            if (++idx[d] < gs[d]) break;
            idx[d] = 0;
          }
        }
        T* out = y.data<T>();
        for (int64_t i = 0; i < y.numel(); ++i) out[i] = T(acc[i]);
      });
    };
  });
}

}  // namespace

void register_training(KernelRegistry& r) {
  r.add("SumToShape", 1, kMaxOpset, sum_to_shape_factory(), "com.onyx");
  r.add("Adagrad", 1, kMaxOpset, adagrad_factory(), kDomain);
  r.add("Momentum", 1, kMaxOpset, momentum_factory(), kDomain);
  r.add("Adam", 1, kMaxOpset, adam_factory(), kDomain);
}

}  // namespace onyx
