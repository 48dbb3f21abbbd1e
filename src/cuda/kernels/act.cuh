// Activation functions shared by the unary kernels and the fused epilogues
// (FusedConv, FusedMatMul): one device function switched on a runtime code.
#pragma once
#include "cuda/kernels/common.cuh"

namespace onyx {
namespace cuda {

enum class Act : int {
  None, Relu, Sigmoid, Tanh, Erf, Sqrt, Exp, Log, Neg, Abs, Reciprocal, Floor, Ceil, Softplus, Elu, LeakyRelu,
  HardSigmoid, HardSwish, Selu, Gelu, GeluTanh, Clip, Sin, Cos, Identity
};

struct ActParams {
  Act act = Act::None;
  float a = 0, b = 0;  // alpha / beta, Clip min / max, Selu alpha / gamma
};

__device__ __forceinline__ float act_apply(const ActParams& p, float x) {
  switch (p.act) {
    case Act::None: case Act::Identity: return x;
    case Act::Relu: return x > 0.f ? x : 0.f;
    case Act::Sigmoid: return 1.f / (1.f + expf(-x));
    case Act::Tanh: return tanhf(x);
    case Act::Erf: return erff(x);
    case Act::Sqrt: return sqrtf(x);
    case Act::Exp: return expf(x);
    case Act::Log: return logf(x);
    case Act::Neg: return -x;
    case Act::Abs: return fabsf(x);
    case Act::Reciprocal: return 1.f / x;
    case Act::Floor: return floorf(x);
    case Act::Ceil: return ceilf(x);
    case Act::Softplus: return x > 20.f ? x : log1pf(expf(x));
    case Act::Elu: return x >= 0.f ? x : p.a * (expf(x) - 1.f);
    case Act::LeakyRelu: return x >= 0.f ? x : p.a * x;
    case Act::HardSigmoid: return fmaxf(0.f, fminf(1.f, p.a * x + p.b));
    case Act::HardSwish: return x * fmaxf(0.f, fminf(1.f, p.a * x + p.b));
    case Act::Selu: return x > 0.f ? p.b * x : p.b * (p.a * expf(x) - p.a);
    case Act::Gelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case Act::GeluTanh: return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case Act::Clip: return fminf(fmaxf(x, p.a), p.b);
    case Act::Sin: return sinf(x);
    case Act::Cos: return cosf(x);
  }
  return x;
}

// y[i] = act(x[i] + bias[(i / inner) % channels] + z[i]); bias and z optional.
template <class T>
__global__ void bias_act_kernel(const T* x, const T* bias, const T* z, T* y, int64_t n, int64_t inner, int64_t channels,
                                ActParams p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    float v = to_f(x[i]);
    if (bias) v += to_f(bias[(i / inner) % channels]);
    if (z) v += to_f(z[i]);
    y[i] = from_f<T>(act_apply(p, v));
  }
}

template <class T>
void bias_act(const T* x, const T* bias, const T* z, T* y, int64_t n, int64_t inner, int64_t channels, ActParams p,
              cudaStream_t s) {
  if (n == 0) return;
  bias_act_kernel<T><<<grid_for(n), 256, 0, s>>>(x, bias, z, y, n, inner, channels, p);
  ONYX_CUDA_LAUNCHED();
}

// The activation of a fused op (FusedConv / FusedMatMul attributes).
inline ActParams fused_activation(const AttributeReader& attrs) {
  ActParams p;
  std::string a = attrs.get_string("activation", "");
  std::vector<float> params = attrs.get_floats("activation_params", {});
  auto param = [&](size_t i, float def) { return i < params.size() ? params[i] : def; };
  if (a.empty()) p.act = Act::None;
  else if (a == "Relu") p.act = Act::Relu;
  else if (a == "Sigmoid") p.act = Act::Sigmoid;
  else if (a == "Tanh") p.act = Act::Tanh;
  else if (a == "LeakyRelu") p = {Act::LeakyRelu, param(0, 0.01f), 0};
  else if (a == "Clip") p = {Act::Clip, param(0, -INFINITY), param(1, INFINITY)};
  else if (a == "HardSigmoid") p = {Act::HardSigmoid, param(0, 0.2f), param(1, 0.5f)};
  else if (a == "HardSwish") p = {Act::HardSwish, param(0, 1.f / 6.f), param(1, 0.5f)};
  else if (a == "Gelu") p.act = attrs.get_string("approximate", "none") == "tanh" ? Act::GeluTanh : Act::Gelu;
  else kernel_fail("CUDA: unsupported fused activation '" + a + "'");
  return p;
}

inline bool fused_activation_supported(const Node& n) {
  const Attribute* a = n.attr("activation");
  if (!a) return true;
  static const char* ok[] = {"", "Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish", "Gelu"};
  for (const char* s : ok)
    if (a->s == s) return true;
  return false;
}

}  // namespace cuda
}  // namespace onyx
