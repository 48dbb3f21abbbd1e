// Unary elementwise ops and activations (float, float16): Relu Sigmoid Tanh
// Erf Sqrt Exp Log Neg Abs Reciprocal Floor Ceil Softplus Elu LeakyRelu
// HardSigmoid HardSwish Selu Sin Cos Clip, ONNX Gelu (opset 20) and com.onyx Gelu.
#include "cuda/kernels/act.cuh"

namespace onyx {
namespace cuda {

namespace {

template <class T>
__global__ void unary_kernel(const T* x, T* y, int64_t n, ActParams p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    y[i] = from_f<T>(act_apply(p, to_f(x[i])));
}

class Unary final : public CudaKernel {
 public:
  Unary(const KernelInitContext& ctx, Act act) : CudaKernel(ctx) {
    p_params_.act = act;
    const std::string& op = ctx.node().op_type;
    if (act == Act::Elu) p_params_.a = ctx.get_float("alpha", 1.f);
    if (act == Act::LeakyRelu) p_params_.a = ctx.get_float("alpha", 0.01f);
    if (act == Act::HardSigmoid) {
      p_params_.a = ctx.get_float("alpha", 0.2f);
      p_params_.b = ctx.get_float("beta", 0.5f);
    }
    if (act == Act::HardSwish) {  // ONNX's HardSwish: x * clip(x / 6 + 1/2, 0, 1)
      p_params_.a = 1.f / 6.f;
      p_params_.b = 0.5f;
    }
    if (act == Act::Selu) {
      p_params_.a = ctx.get_float("alpha", 1.67326319217681884765625f);
      p_params_.b = ctx.get_float("gamma", 1.05070102214813232421875f);
    }
    if (act == Act::Gelu && ctx.get_string("approximate", "none") == "tanh") p_params_.act = Act::GeluTanh;
    if (act == Act::Clip) {
      clip_inputs_ = ctx.opset() >= 11;
      p_params_.a = ctx.get_float("min", -INFINITY);
      p_params_.b = ctx.get_float("max", INFINITY);
    }
    (void)op;
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ActParams p = p_params_;
    if (clip_inputs_) {  // min / max are host-side inputs (see host_inputs)
      if (ctx.has_input(1) && ctx.input(1).numel() > 0) p.a = static_cast<float>(ctx.input(1).float_at(0));
      if (ctx.has_input(2) && ctx.input(2).numel() > 0) p.b = static_cast<float>(ctx.input(2).float_at(0));
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    const int64_t n = x.numel();
    if (n == 0) return;
    dispatch_fp(x.dtype(), "unary op", [&](auto tag) {
      using T = decltype(tag);
      unary_kernel<T><<<grid_for(n), 256, 0, stream()>>>(x.data<T>(), y.data<T>(), n, p);
      ONYX_CUDA_LAUNCHED();
    });
  }

 private:
  ActParams p_params_;
  bool clip_inputs_ = false;
};

void add_unary(KernelRegistry& r, const char* name, int64_t since, Act act, const std::string& domain = "") {
  KernelDef d;
  d.domain = domain;
  d.op_type = name;
  d.since_version = since;
  d.factory = [act](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> { return std::make_unique<Unary>(ctx, act); };
  d.supports_types = float_inputs(1);
  if (act == Act::Clip) d.host_inputs = {1, 2};
  r.add(std::move(d));
}

}  // namespace
}  // namespace cuda

void register_cuda_activation(KernelRegistry& r) {
  using cuda::Act;
  using cuda::add_unary;
  add_unary(r, "Relu", 6, Act::Relu);
  add_unary(r, "Sigmoid", 6, Act::Sigmoid);
  add_unary(r, "Tanh", 6, Act::Tanh);
  add_unary(r, "Erf", 9, Act::Erf);
  add_unary(r, "Sqrt", 6, Act::Sqrt);
  add_unary(r, "Exp", 6, Act::Exp);
  add_unary(r, "Log", 6, Act::Log);
  add_unary(r, "Neg", 6, Act::Neg);
  add_unary(r, "Abs", 6, Act::Abs);
  add_unary(r, "Reciprocal", 6, Act::Reciprocal);
  add_unary(r, "Floor", 6, Act::Floor);
  add_unary(r, "Ceil", 6, Act::Ceil);
  add_unary(r, "Softplus", 1, Act::Softplus);
  add_unary(r, "Elu", 6, Act::Elu);
  add_unary(r, "LeakyRelu", 6, Act::LeakyRelu);
  add_unary(r, "HardSigmoid", 6, Act::HardSigmoid);
  add_unary(r, "HardSwish", 14, Act::HardSwish);
  add_unary(r, "Selu", 6, Act::Selu);
  add_unary(r, "Sin", 7, Act::Sin);
  add_unary(r, "Cos", 7, Act::Cos);
  add_unary(r, "Clip", 6, Act::Clip);
  add_unary(r, "Gelu", 20, Act::Gelu);
  add_unary(r, "Gelu", 1, Act::Gelu, "com.onyx");
}

}  // namespace onyx
