// Activation functions: Relu and friends, Sigmoid/Tanh, Clip, PRelu, Gelu.
// Float inputs go through plain contiguous loops the compiler vectorizes
// (Sigmoid, Tanh and Gelu use the branch-free approximations of
// cpu/elementwise_loops.h, accurate to a few ulp); other types convert through
// their compute type (float for float16/bfloat16).
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "cpu/cpu_provider.h"
#include "cpu/elementwise_loops.h"
#include "cpu/gemm_vmath.h"
#include "cpu/kernels/vector_unary.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

using ew::Compute;
using ew::map_unary;

// A unary op on float types. `make(init_ctx)` returns a functor generic over
// the compute type (float or double).
template <class Make>
KernelFactory float_act(Make make) {
  return lambda_factory([make](const KernelInitContext& ic) {
    auto f = make(ic);
    return [f](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      map_float(x, ctx.allocate_output(0, x.dtype(), x.shape()), f);
    };
  });
}

// Same, for ops defined on every numeric type (f generic over float, double
// and the integer types; it returns a double or the type itself).
template <class Make>
KernelFactory numeric_act(Make make) {
  return lambda_factory([make](const KernelInitContext& ic) {
    auto f = make(ic);
    return [f](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      dispatch_numeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        map_unary<T, T>(x, y, [f](T v) -> T { return static_cast<T>(f(static_cast<Compute<T>>(v))); },
                        ctx.thread_pool());
      });
    };
  });
}

// Generic functors: F is float or double. Float uses the fast approximations.
template <class F>
F sigmoid(F v) {
  if constexpr (std::is_same_v<F, float>) return ew::fast_sigmoidf(v);
  else return F(1) / (F(1) + std::exp(-v));
}
template <class F>
F tanh_(F v) {
  if constexpr (std::is_same_v<F, float>) return ew::fast_tanhf(v);
  else return std::tanh(v);
}
template <class F>
F erf_(F v) {
  if constexpr (std::is_same_v<F, float>) return ew::fast_erff(v);
  else return std::erf(v);
}
template <class F>
F expm1_(F v) {
  if constexpr (std::is_same_v<F, float>) return ew::fast_expm1f(v);
  else return std::expm1(v);
}
template <class F>
F softplus(F v) {
  return v > F(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

// ---- Clip

template <class T>
void clip_typed(const Tensor& x, Tensor& y, double lo_d, double hi_d, const Tensor* lo_t, const Tensor* hi_t) {
  using C = Compute<T>;
  C lo, hi;
  if constexpr (std::is_floating_point_v<C>) {
    lo = lo_t ? static_cast<C>(lo_t->data<T>()[0]) : static_cast<C>(lo_d);
    hi = hi_t ? static_cast<C>(hi_t->data<T>()[0]) : static_cast<C>(hi_d);
  } else {
    lo = lo_t ? lo_t->data<T>()[0] : std::numeric_limits<T>::lowest();
    hi = hi_t ? hi_t->data<T>()[0] : std::numeric_limits<T>::max();
  }
  map_unary<T, T>(x, y, [lo, hi](T t) -> T {
    C v = static_cast<C>(t);
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    return T(v);
  });
}

KernelFactory clip_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    bool attrs = ic.opset() < 11;
    double lo = attrs ? ic.get_float("min", -std::numeric_limits<float>::max()) : 0.0;
    double hi = attrs ? ic.get_float("max", std::numeric_limits<float>::max()) : 0.0;
    if (attrs && !ic.has("min")) lo = -std::numeric_limits<double>::infinity();
    if (attrs && !ic.has("max")) hi = std::numeric_limits<double>::infinity();
    return [attrs, lo, hi](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const Tensor* lo_t = nullptr;
      const Tensor* hi_t = nullptr;
      if (!attrs) {
        for (int i = 1; i <= 2; ++i) {
          if (!ctx.has_input(i)) continue;
          const Tensor& b = ctx.input(i);
          if (b.numel() != 1)
            kernel_fail("Clip: " + std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " +
                        shape_to_string(b.shape()));
          if (b.dtype() != x.dtype())
            kernel_fail("Clip: bound type " + dtype_name(b.dtype()) + " differs from input type " +
                        dtype_name(x.dtype()));
          (i == 1 ? lo_t : hi_t) = &b;
        }
      }
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      if (attrs) {
        dispatch_float(x.dtype(), [&](auto tag) { clip_typed<typename decltype(tag)::type>(x, y, lo, hi, nullptr, nullptr); });
      } else {
        dispatch_numeric(x.dtype(), [&](auto tag) {
          clip_typed<typename decltype(tag)::type>(x, y, -std::numeric_limits<double>::infinity(),
                                                   std::numeric_limits<double>::infinity(), lo_t, hi_t);
        });
      }
    };
  });
}

// ---- PRelu: slope broadcasts to X (unidirectionally).

KernelFactory prelu_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    bool legacy = ic.opset() < 7;
    return [legacy](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor slope = ctx.input(1);
      if (slope.dtype() != x.dtype())
        kernel_fail("PRelu: slope type " + dtype_name(slope.dtype()) + " differs from input type " +
                    dtype_name(x.dtype()));
      // Before opset 7 a 1-D per-channel slope [C] applied to axis 1.
      if (legacy && slope.rank() == 1 && x.rank() > 2 && slope.dim(0) == x.dim(1)) {
        Shape s(x.rank() - 1, 1);
        s[0] = slope.dim(0);
        slope = slope.reshaped(s);
      }
      Shape os = broadcast_shapes({x.shape(), slope.shape()});
      if (os != x.shape())
        kernel_fail("PRelu: slope shape " + shape_to_string(slope.shape()) + " does not broadcast to input shape " +
                    shape_to_string(x.shape()));
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      dispatch_numeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = Compute<T>;
        ew::map_binary<T, T, T>(x, slope, y, [](T xt, T st) -> T {
          C v = static_cast<C>(xt);
          return v < C(0) ? T(static_cast<C>(v * static_cast<C>(st))) : xt;
        });
      });
    };
  });
}

// ---- Relu (floats and, from opset 14, signed integers)

KernelFactory relu_factory() {
  return numeric_act([](const KernelInitContext&) {
    return [](auto v) { return v < decltype(v)(0) ? decltype(v)(0) : v; };
  });
}

// ---- Gelu

KernelFactory gelu_factory() {
  return vector_act_picked([](const KernelInitContext& ic) {
    std::string approx = ic.get_string("approximate", "none");
    if (approx != "none" && approx != "tanh") kernel_fail("Gelu: approximate must be 'none' or 'tanh', got '" + approx + "'");
    bool use_tanh = approx == "tanh";
    auto scalar = [use_tanh](auto v) {
      using C = decltype(v);
      if (use_tanh) {
        const C k = C(0.7978845608028654);  // sqrt(2/pi)
        return C(0.5) * v * (C(1) + tanh_(k * (v + C(0.044715) * v * v * v)));
      }
      return C(0.5) * v * (C(1) + erf_(v * C(0.7071067811865476)));
    };
    return std::make_pair(use_tanh ? vm::gelu_tanh : vm::gelu_erf, scalar);
  });
}

// An attribute the experimental ops define without a default.
float required_float(const KernelInitContext& ic, const std::string& name) {
  if (!ic.has(name)) kernel_fail("attribute '" + name + "' is required");
  return ic.get_float(name, 0.0f);
}

// Elu, and Selu (Elu scaled by gamma, with its own alpha): float through vm::elu.
KernelFactory elu_factory(bool selu) {
  return vector_act_picked([selu](const KernelInitContext& ic) {
    const float alpha = ic.get_float("alpha", selu ? 1.67326319217681884765625f : 1.0f);
    const float scale = selu ? ic.get_float("gamma", 1.05070102214813232421875f) : 1.0f;
    auto vec = [alpha, scale](const float* x, float* y, int64_t n) { vm::elu(x, y, n, alpha, scale); };
    auto scalar = [alpha, scale](auto v) {
      using F = decltype(v);
      return F(scale) * (v > F(0) ? v : F(alpha) * expm1_(v));
    };
    return std::make_pair(vec, scalar);
  });
}

// HardSigmoid, and HardSwish (x * HardSigmoid(x) with alpha 1/6, beta 1/2): float
// through vm::hard_sigmoid.
KernelFactory hard_sigmoid_factory(bool swish) {
  return vector_act_picked([swish](const KernelInitContext& ic) {
    const float alpha = swish ? 1.0f / 6.0f : ic.get_float("alpha", 0.2f);
    const float beta = swish ? 0.5f : ic.get_float("beta", 0.5f);
    auto vec = [alpha, beta, swish](const float* x, float* y, int64_t n) {
      vm::hard_sigmoid(x, y, n, alpha, beta, swish);
    };
    auto scalar = [alpha, beta, swish](auto v) {
      using F = decltype(v);
      F r = F(alpha) * v + F(beta);
      r = r < F(0) ? F(0) : r;
      r = r > F(1) ? F(1) : r;
      return swish ? v * r : r;
    };
    return std::make_pair(vec, scalar);
  });
}

// The experimental activations of ONNX before opset 10 (removed there), still in
// models exported then, e.g. by CNTK.
void register_experimental_activations(KernelRegistry& r) {
  r.add("Affine", 1, 9, float_act([](const KernelInitContext& ic) {
          float alpha = ic.get_float("alpha", 1.0f), beta = ic.get_float("beta", 0.0f);
          return [alpha, beta](auto v) { return decltype(v)(alpha) * v + decltype(v)(beta); };
        }));
  r.add("Scale", 1, 9, float_act([](const KernelInitContext& ic) {
          float scale = ic.get_float("scale", 1.0f);
          return [scale](auto v) { return decltype(v)(scale) * v; };
        }));
  r.add("ScaledTanh", 1, 9, float_act([](const KernelInitContext& ic) {
          float alpha = required_float(ic, "alpha"), beta = required_float(ic, "beta");
          return [alpha, beta](auto v) { return decltype(v)(alpha) * tanh_(decltype(v)(beta) * v); };
        }));
  r.add("ParametricSoftplus", 1, 9, float_act([](const KernelInitContext& ic) {
          float alpha = required_float(ic, "alpha"), beta = required_float(ic, "beta");
          return [alpha, beta](auto v) { return decltype(v)(alpha) * softplus(decltype(v)(beta) * v); };
        }));
}

}  // namespace

void register_activation(KernelRegistry& r) {
  r.add("Relu", 1, kMaxOpset, relu_factory());
  r.add("LeakyRelu", 1, kMaxOpset, float_act([](const KernelInitContext& ic) {
          float alpha = ic.get_float("alpha", 0.01f);
          return [alpha](auto v) { return v < decltype(v)(0) ? v * decltype(v)(alpha) : v; };
        }));
  r.add("PRelu", 1, kMaxOpset, prelu_factory());
  r.add("Elu", 1, kMaxOpset, elu_factory(false));
  r.add("Selu", 1, kMaxOpset, elu_factory(true));
  r.add("Celu", 12, kMaxOpset, vector_act_picked([](const KernelInitContext& ic) {
          const float alpha = ic.get_float("alpha", 1.0f);
          if (alpha == 0.0f) kernel_fail("Celu: alpha must not be 0");
          auto vec = [alpha](const float* x, float* y, int64_t n) { vm::celu(x, y, n, alpha); };
          auto scalar = [alpha](auto v) {
            using F = decltype(v);
            return v > F(0) ? v : F(alpha) * expm1_(v / F(alpha));
          };
          return std::make_pair(vec, scalar);
        }));
  r.add("Sigmoid", 1, kMaxOpset,
        vector_act(vm::sigmoid, [](const KernelInitContext&) { return [](auto v) { return sigmoid(v); }; }));
  r.add("HardSigmoid", 1, kMaxOpset, hard_sigmoid_factory(false));
  r.add("HardSwish", 14, kMaxOpset, hard_sigmoid_factory(true));
  // Swish-24: x * sigmoid(alpha * x).
  r.add("Swish", 24, kMaxOpset, float_act([](const KernelInitContext& ic) {
          float alpha = ic.get_float("alpha", 1.0f);
          return [alpha](auto v) {
            using F = decltype(v);
            return v / (F(1) + std::exp(-F(alpha) * v));
          };
        }));
  // SwiGLU-28: Swish_alpha(A) * B, A and B of one shape (no broadcasting).
  r.add("SwiGLU", 28, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          float alpha = ic.get_float("alpha", 1.0f);
          return [alpha](KernelContext& ctx) {
            const Tensor& a = ctx.input(0);
            const Tensor& b = ctx.input(1);
            if (a.shape() != b.shape() || a.dtype() != b.dtype())
              kernel_fail("SwiGLU: A " + shape_to_string(a.shape()) + " and B " + shape_to_string(b.shape()) +
                          " must have one shape and type");
            Tensor& y = ctx.allocate_output(0, a.dtype(), a.shape());
            dispatch_float(a.dtype(), [&](auto tag) {
              using T = typename decltype(tag)::type;
              using F = std::conditional_t<std::is_same_v<T, double>, double, float>;
              const T* ap = a.data<T>();
              const T* bp = b.data<T>();
              T* yp = y.data<T>();
              for (int64_t i = 0; i < a.numel(); ++i) {
                F g = static_cast<F>(ap[i]);
                yp[i] = T(g / (F(1) + std::exp(-F(alpha) * g)) * static_cast<F>(bp[i]));
              }
            });
          };
        }));
  r.add("Tanh", 1, kMaxOpset,
        vector_act(vm::tanh, [](const KernelInitContext&) { return [](auto v) { return tanh_(v); }; }));
  r.add("Softplus", 1, kMaxOpset,
        vector_act(vm::softplus, [](const KernelInitContext&) { return [](auto v) { return softplus(v); }; }));
  r.add("Softsign", 1, kMaxOpset, float_act([](const KernelInitContext&) {
          return [](auto v) { return v / (decltype(v)(1) + std::fabs(v)); };
        }));
  r.add("Clip", 1, kMaxOpset, clip_factory());
  // Experimental before opset 10 and the same function since.
  r.add("ThresholdedRelu", 1, kMaxOpset, float_act([](const KernelInitContext& ic) {
          float alpha = ic.get_float("alpha", 1.0f);
          return [alpha](auto v) { return v > decltype(v)(alpha) ? v : decltype(v)(0); };
        }));
  r.add("Shrink", 9, kMaxOpset, numeric_act([](const KernelInitContext& ic) {
          double lambd = ic.get_float("lambd", 0.5f), bias = ic.get_float("bias", 0.0f);
          return [lambd, bias](auto v) -> decltype(v) {
            using F = decltype(v);
            double d = static_cast<double>(v);
            if (d < -lambd) return static_cast<F>(d + bias);
            if (d > lambd) return static_cast<F>(d - bias);
            return F(0);
          };
        }));
  register_experimental_activations(r);
  // Mish (opset 18) and Gelu (opset 20) are registered from 1 so that they are available.
  r.add("Mish", 1, kMaxOpset, vector_act(vm::mish, [](const KernelInitContext&) {
          return [](auto v) { return v * tanh_(softplus(v)); };
        }));
  r.add("Gelu", 1, kMaxOpset, gelu_factory());
}

}  // namespace onyx
