// Helpers shared by the quantized contrib-op kernels (contrib_quantization*.cc).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "cpu/cpu_provider.h"
#include "cpu/quant_round.h"
#include "kernels/dispatch.h"

namespace onyx::contrib_q {

inline const char* kMicrosoft = "com.microsoft";

// Clamp to Q's range, then round half to even. NaN gives Q's lowest value,
// as ORT's SIMD conversion does.
template <class Q>
Q saturate(float v) {
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return static_cast<Q>(round_half_even(v));
}

// float32 fused multiply-add a * b + c with a single rounding, for a small
// integer a: the product is exact in double, so only the sum rounds twice,
// which (rarely) matters only at a float midpoint. ORT's AVX2 kernels use FMA.
inline float fma_small_int(float a, float b, float c) {
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b) + static_cast<double>(c));
}

template <class F>
decltype(auto) dispatch_q8(DataType t, const std::string& what, F&& f) {
  switch (t) {
    case DataType::UInt8: return f(TypeTag<uint8_t>{});
    case DataType::Int8: return f(TypeTag<int8_t>{});
    default: kernel_fail(what + " must be uint8 or int8, got " + dtype_name(t));
  }
}

// A per-tensor scale (float scalar) and zero point (scalar of the quantized
// type, 0 when omitted).
struct QParam {
  float scale = 1.f;
  int32_t zero = 0;
};

inline QParam read_qparam(const KernelContext& ctx, size_t scale_idx, size_t zp_idx, DataType qtype, const std::string& name) {
  const Tensor& s = ctx.input(scale_idx);
  if (s.dtype() != DataType::Float) kernel_fail(name + "_scale must be float, got " + dtype_name(s.dtype()));
  if (s.numel() != 1) kernel_fail(name + "_scale must be a scalar, got shape " + shape_to_string(s.shape()));
  QParam p;
  p.scale = s.data<float>()[0];
  if (ctx.has_input(zp_idx)) {
    const Tensor& z = ctx.input(zp_idx);
    if (z.numel() != 1) kernel_fail(name + "_zero_point must be a scalar, got shape " + shape_to_string(z.shape()));
    if (z.dtype() != qtype)
      kernel_fail(name + "_zero_point type " + dtype_name(z.dtype()) + " differs from the quantized type " + dtype_name(qtype));
    p.zero = static_cast<int32_t>(z.int_at(0));
  }
  return p;
}

void register_contrib_quantization_pool(KernelRegistry& r);

}  // namespace onyx::contrib_q
