// Linear quantization: QuantizeLinear, DequantizeLinear (per-tensor, per-axis
// and blocked scales), DynamicQuantizeLinear and QLinearConv.
#include <algorithm>
#include <cfenv>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cpu/conv_geometry.h"
#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"
#include "cpu/int8_conv.h"
#include "cpu/quant_round.h"
#include "cpu/quantize_8bit.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

// Round half to even (the ONNX rule), then clamp to Q's range.
template <class Q>
Q saturate_round(float v) {
  float r = round_half_even(v);
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  if (std::isnan(r)) return Q(0);
  if (r <= lo) return std::numeric_limits<Q>::lowest();
  if (r >= hi) return std::numeric_limits<Q>::max();
  return static_cast<Q>(r);
}

// Quantized integer types the linear (de)quantizers accept.
template <class F>
decltype(auto) dispatch_quant(DataType t, F&& f) {
  switch (t) {
    case DataType::Int8: return f(TypeTag<int8_t>{});
    case DataType::UInt8: return f(TypeTag<uint8_t>{});
    case DataType::Int16: return f(TypeTag<int16_t>{});
    case DataType::UInt16: return f(TypeTag<uint16_t>{});
    case DataType::Int32: return f(TypeTag<int32_t>{});
    default: unsupported_type(t, "a quantized integer type (int8, uint8, int16, uint16, int32)");
  }
}

// Maps each element of x (viewed as outer x A x inner around `axis`) to its
// scale / zero-point element, for per-tensor, per-axis or blocked scales.
struct ScaleMap {
  enum Kind { Tensor_, Axis, Block } kind = Tensor_;
  int64_t outer = 1, A = 1, inner = 1, block = 0, nblocks = 1;

  static ScaleMap make(const Shape& x, const Shape& scale, int64_t axis_attr, int64_t block_size) {
    ScaleMap m;
    int64_t ns = shape_numel(scale);
    if (block_size > 0) {
      if (x.empty()) kernel_fail("blocked quantization needs an input of rank >= 1");
      int64_t axis = normalize_axis(axis_attr, static_cast<int64_t>(x.size()));
      if (scale.size() != x.size())
        kernel_fail("blocked quantization: scale shape " + shape_to_string(scale) + " must have the rank of input " +
                    shape_to_string(x));
      m.kind = Block;
      m.block = block_size;
      for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
        if (i < axis) m.outer *= x[i];
        if (i > axis) m.inner *= x[i];
        if (i == axis) continue;
        if (scale[i] != x[i])
          kernel_fail("blocked quantization: scale shape " + shape_to_string(scale) + " does not match input " +
                      shape_to_string(x) + " outside axis " + std::to_string(axis));
      }
      m.A = x[axis];
      m.nblocks = scale[axis];
      if (m.nblocks != (m.A + block_size - 1) / block_size)
        kernel_fail("blocked quantization: scale dim " + std::to_string(m.nblocks) + " on axis " +
                    std::to_string(axis) + " should be ceil(" + std::to_string(m.A) + " / " +
                    std::to_string(block_size) + ")");
      return m;
    }
    if (scale.empty() || (ns == 1 && scale.size() <= 1)) return m;  // per-tensor
    if (scale.size() != 1)
      kernel_fail("scale must be a scalar or a 1-D tensor, got shape " + shape_to_string(scale));
    if (x.empty()) kernel_fail("per-axis scale needs an input of rank >= 1");
    int64_t axis = normalize_axis(axis_attr, static_cast<int64_t>(x.size()));
    if (scale[0] != x[axis])
      kernel_fail("per-axis scale has " + std::to_string(scale[0]) + " values but input dim " + std::to_string(axis) +
                  " of " + shape_to_string(x) + " is " + std::to_string(x[axis]));
    m.kind = Axis;
    for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
      if (i < axis) m.outer *= x[i];
      if (i > axis) m.inner *= x[i];
    }
    m.A = x[axis];
    return m;
  }

  // Calls fn(begin, end, scale_index) over contiguous runs of x sharing one scale.
  template <class F>
  void for_runs(int64_t n, F&& fn) const {
    if (kind == Tensor_) {
      fn(0, n, 0);
      return;
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t a = 0; a < A; ++a) {
        int64_t begin = (o * A + a) * inner;
        int64_t s = kind == Axis ? a : (o * nblocks + a / block) * inner;
        if (kind == Axis) {
          fn(begin, begin + inner, s);
        } else {
          for (int64_t i = 0; i < inner; ++i) fn(begin + i, begin + i + 1, s + i);
        }
      }
  }
};

void check_zero_point_shape(const Tensor& scale, const Tensor& zp) {
  if (zp.shape() != scale.shape() && !(zp.numel() == 1 && scale.numel() == 1))
    kernel_fail("zero point shape " + shape_to_string(zp.shape()) + " does not match scale shape " +
                shape_to_string(scale.shape()));
}

// Rounds a float to the precision of a floating-point type (the precision the
// spec computes x / y_scale or (x - zp) * scale in).
float round_to_precision(DataType t, float v) {
  switch (t) {
    case DataType::Float16: return static_cast<float>(Float16(v));
    case DataType::BFloat16: return static_cast<float>(BFloat16(v));
    default: return v;
  }
}

bool is_standard_quant(DataType t) {
  return t == DataType::Int8 || t == DataType::UInt8 || t == DataType::Int16 || t == DataType::UInt16 ||
         t == DataType::Int32;
}

bool is_quant_type(DataType t) {
  return is_standard_quant(t) || dtype_is_small_int(t) ||
         (dtype_is_small_float(t) && t != DataType::Float8E8M0);
}

// default_precision: the float type x / y_scale is computed in when the
// `precision` attribute is absent (0: the scale's type, as the spec says).
KernelFactory quantize_factory(DataType default_precision = DataType::Undefined) {
  return lambda_factory([=](const KernelInitContext& ic) {
    int64_t axis = ic.get_int("axis", 1);
    int64_t block = ic.get_int("block_size", 0);
    int64_t out_dtype = ic.get_int("output_dtype", 0);
    int64_t precision = ic.get_int("precision", static_cast<int64_t>(default_precision));
    bool saturate = ic.get_int("saturate", 1) != 0;
    return [=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const Tensor& scale = ctx.input(1);
      const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
      if (zp) check_zero_point_shape(scale, *zp);
      DataType qt = zp ? zp->dtype() : (out_dtype ? static_cast<DataType>(out_dtype) : DataType::UInt8);
      if (zp && out_dtype && static_cast<DataType>(out_dtype) != qt)
        kernel_fail("output_dtype " + dtype_name(static_cast<DataType>(out_dtype)) + " differs from the zero point type " +
                    dtype_name(qt));
      if (!is_quant_type(qt) || qt == DataType::Int32)
        kernel_fail("QuantizeLinear cannot quantize to " + dtype_name(qt));
      if (!dtype_is_float(scale.dtype())) kernel_fail("scale must be a float type, got " + dtype_name(scale.dtype()));
      DataType prec = precision ? static_cast<DataType>(precision) : scale.dtype();
      if (!dtype_is_float(prec)) kernel_fail("precision must be a float type, got " + std::to_string(precision));
      ScaleMap m = ScaleMap::make(x.shape(), scale.shape(), axis, block);
      Tensor& y = ctx.allocate_output(0, qt, x.shape());
      std::vector<float> converted;  // x as float when it is not float already
      const float* xf = x.dtype() == DataType::Float ? x.data<float>() : nullptr;
      if (!xf) {
        if (x.dtype() != DataType::Int32 && !dtype_is_float(x.dtype()))
          kernel_fail("QuantizeLinear input must be float, float16, bfloat16 or int32, got " + dtype_name(x.dtype()));
        converted.resize(static_cast<size_t>(x.numel()));
        for (int64_t i = 0; i < x.numel(); ++i)
          converted[i] = x.dtype() == DataType::Int32 ? static_cast<float>(x.data<int32_t>()[i]) : static_cast<float>(x.float_at(i));
        xf = converted.data();
      }
      bool round_div = prec != DataType::Float && prec != DataType::Double;
      auto divide = [&](float v, float sc) { return round_div ? round_to_precision(prec, v / sc) : v / sc; };
      if (is_standard_quant(qt)) {
        dispatch_quant(qt, [&](auto tag) {
          using Q = typename decltype(tag)::type;
          Q* out = y.data<Q>();
          m.for_runs(x.numel(), [&](int64_t b, int64_t e, int64_t s) {
            float sc = static_cast<float>(scale.float_at(s));
            float z = zp ? static_cast<float>(zp->int_at(s)) : 0.f;
            if constexpr (sizeof(Q) == 1) {
              if (!round_div) {
                // Large runs (a whole image per tensor) in pieces over the threads.
                constexpr int64_t kPiece = 1 << 14;
                const int64_t pieces = (e - b + kPiece - 1) / kPiece;
                parallel_for(pieces >= 4 ? ctx.thread_pool() : nullptr, pieces, [&](int64_t p0, int64_t p1) {
                  const int64_t i0 = b + p0 * kPiece, i1 = std::min(e, b + p1 * kPiece);
                  quantize_8bit(xf + i0, i1 - i0, sc, z, std::is_signed_v<Q>, reinterpret_cast<uint8_t*>(out + i0));
                });
                return;
              }
            }
            for (int64_t i = b; i < e; ++i) out[i] = saturate_round<Q>(std::nearbyint(divide(xf[i], sc)) + z);
          });
        });
        return;
      }
      uint8_t* out = static_cast<uint8_t*>(y.raw());
      m.for_runs(x.numel(), [&](int64_t b, int64_t e, int64_t s) {
        float sc = static_cast<float>(scale.float_at(s));
        float z = zp ? static_cast<float>(zp->float_at(s)) : 0.f;
        for (int64_t i = b; i < e; ++i) {
          if (dtype_is_small_float(qt)) {
            out[i] = float_to_small_float(qt, divide(xf[i], sc) + z, saturate);
          } else {
            float r = round_half_even(divide(xf[i], sc)) + z;
            float lo = static_cast<float>(small_int_min(qt)), hi = static_cast<float>(small_int_max(qt));
            r = std::isnan(r) ? 0.f : std::min(std::max(r, lo), hi);
            out[i] = static_cast<uint8_t>(static_cast<int8_t>(r));
          }
        }
      });
    };
  });
}

KernelFactory dequantize_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    int64_t axis = ic.get_int("axis", 1);
    int64_t block = ic.get_int("block_size", 0);
    int64_t out_dtype = ic.get_int("output_dtype", 0);
    return [=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const Tensor& scale = ctx.input(1);
      const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
      if (zp) {
        check_zero_point_shape(scale, *zp);
        if (zp->dtype() != x.dtype())
          kernel_fail("zero point type " + dtype_name(zp->dtype()) + " differs from input type " + dtype_name(x.dtype()));
      }
      if (!is_quant_type(x.dtype())) kernel_fail("DequantizeLinear cannot dequantize " + dtype_name(x.dtype()));
      if (!dtype_is_float(scale.dtype()) && scale.dtype() != DataType::Float8E8M0)
        kernel_fail("scale must be a float type, got " + dtype_name(scale.dtype()));
      DataType yt = out_dtype ? static_cast<DataType>(out_dtype) : scale.dtype();
      if (!dtype_is_float(yt) || yt == DataType::Double)
        kernel_fail("DequantizeLinear output type must be float, float16 or bfloat16, got " + dtype_name(yt) +
                    (out_dtype ? "" : " (set output_dtype)"));
      ScaleMap m = ScaleMap::make(x.shape(), scale.shape(), axis, block);
      Tensor& y = ctx.allocate_output(0, yt, x.shape());
      dispatch_float(yt, [&](auto ftag) {
        using F = typename decltype(ftag)::type;
        F* out = y.data<F>();
        if (is_standard_quant(x.dtype())) {
          dispatch_quant(x.dtype(), [&](auto qtag) {
            using Q = typename decltype(qtag)::type;
            const Q* in = x.data<Q>();
            m.for_runs(x.numel(), [&](int64_t b, int64_t e, int64_t s) {
              float sc = static_cast<float>(scale.float_at(s));
              float z = zp ? static_cast<float>(zp->int_at(s)) : 0.f;
              if constexpr (sizeof(Q) == 1 && std::is_same_v<F, float>)
                return dequantize_8bit(reinterpret_cast<const uint8_t*>(in + b), e - b, std::is_signed_v<Q>, z, sc, out + b);
              for (int64_t i = b; i < e; ++i) out[i] = static_cast<F>((static_cast<float>(in[i]) - z) * sc);
            });
          });
          return;
        }
        m.for_runs(x.numel(), [&](int64_t b, int64_t e, int64_t s) {
          float sc = static_cast<float>(scale.float_at(s));
          float z = zp ? static_cast<float>(zp->float_at(s)) : 0.f;
          for (int64_t i = b; i < e; ++i) out[i] = static_cast<F>((static_cast<float>(x.float_at(i)) - z) * sc);
        });
      });
    };
  });
}

KernelFactory dynamic_quantize_factory() {
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      if (x.dtype() != DataType::Float) kernel_fail("DynamicQuantizeLinear input must be float, got " + dtype_name(x.dtype()));
      const float* in = x.data<float>();
      int64_t n = x.numel();
      float mn = 0.f, mx = 0.f;
      min_max_with_zero(in, n, mn, mx);
      float scale = (mx - mn) / 255.f;
      uint8_t zp = scale == 0.f ? 0 : saturate_round<uint8_t>(0.f - mn / scale);
      Tensor& y = ctx.allocate_output(0, DataType::UInt8, x.shape());
      uint8_t* out = y.data<uint8_t>();
      if (scale == 0.f) std::fill(out, out + n, zp);
      else quantize_8bit(in, n, scale, static_cast<float>(zp), false, out);
      if (ctx.wants_output(1)) ctx.allocate_output(1, DataType::Float, {}).data<float>()[0] = scale;
      if (ctx.wants_output(2)) ctx.allocate_output(2, DataType::UInt8, {}).data<uint8_t>()[0] = zp;
    };
  });
}

bool is_8bit(DataType t) { return t == DataType::UInt8 || t == DataType::Int8; }

// Adds the bias and requantizes the int32 sums of the fast convolution into
// the 8-bit output: NCHW (transposing blocks that come pixel by pixel) or,
// when channels_last, NHWC (transposing blocks that come channel by channel).
// GEMM convolutions requantize in the GEMM (rq must outlive the sink).
Int8ConvSink requantize_sink(uint8_t* out, int64_t M, int64_t P, const Int8Requant& rq, bool channels_last) {
  Int8ConvSink sink;
  sink.requant = &rq;
  if (channels_last) sink.channels_last_out = out;
  else
    sink.bytes = [=](int64_t n, int64_t p0, int64_t count, const uint8_t* rows) {
      transpose_8bit(rows, count, M, M, out + n * M * P + p0, P);
    };
  const int32_t* bias = rq.bias;
  const float* mult = rq.mult;
  const float zero = rq.zero;
  const bool is_signed = rq.is_signed;
  sink.fn = [=](int64_t n, int64_t m0, int64_t m1, int64_t p0, int64_t count, int32_t* acc, int64_t ms, int64_t ps) {
    const int64_t mc = m1 - m0;
    const bool contiguous_rows = channels_last ? ms == 1 : ps == 1;
    if (contiguous_rows && !channels_last) {
      for (int64_t m = m0; m < m1; ++m)
        requantize_8bit(acc + (m - m0) * ms, count, bias ? bias + m : nullptr, &mult[m], false, zero, is_signed,
                        out + (n * M + m) * P + p0);
      return;
    }
    if (contiguous_rows) {
      requantize_rows_8bit(acc, count, mc, ps, bias ? bias + m0 : nullptr, mult + m0, zero, is_signed,
                           out + (n * P + p0) * M + m0, M);
      return;
    }
    if (channels_last) {
      std::vector<uint8_t> planes(static_cast<size_t>(count * mc));
      for (int64_t m = m0; m < m1; ++m)
        requantize_8bit(acc + (m - m0) * ms, count, bias ? bias + m : nullptr, &mult[m], false, zero, is_signed,
                        planes.data() + (m - m0) * count);
      transpose_8bit(planes.data(), mc, count, count, out + (n * P + p0) * M + m0, M);
      return;
    }
    std::vector<uint8_t> rows(static_cast<size_t>(count * mc));
    requantize_rows_8bit(acc, count, mc, ps, bias ? bias + m0 : nullptr, mult + m0, zero, is_signed, rows.data(), mc);
    transpose_8bit(rows.data(), count, mc, mc, out + (n * M + m0) * P + p0, P);
  };
  return sink;
}

// What the fast QLinearConv needs from the scales and zero points (inputs 1,
// 2 and 4-7): read once at load when they are constants, else every run.
struct QConvScales {
  std::vector<int32_t> w_zero;  // 1 or M values
  std::vector<float> mult;      // x_scale * w_scale[m] / y_scale, M values
  int32_t x_zero = 0, y_zero = 0;
};

QConvScales read_qconv_scales(const Tensor& xs, const Tensor& xz, const Tensor& ws, const Tensor& wz, const Tensor& ys,
                              const Tensor& yz, int64_t M) {
  QConvScales q;
  const int64_t wz_count = wz.numel(), ws_count = ws.numel();
  q.w_zero.resize(static_cast<size_t>(wz_count));
  for (int64_t m = 0; m < wz_count; ++m) q.w_zero[m] = static_cast<int32_t>(wz.int_at(m));
  q.mult.resize(static_cast<size_t>(M));
  const float xsv = static_cast<float>(xs.float_at(0)), ysv = static_cast<float>(ys.float_at(0));
  for (int64_t m = 0; m < M; ++m) q.mult[m] = xsv * static_cast<float>(ws.float_at(ws_count == 1 ? 0 : m)) / ysv;
  q.x_zero = static_cast<int32_t>(xz.int_at(0));
  q.y_zero = static_cast<int32_t>(yz.int_at(0));
  return q;
}

// The scales read at load, when inputs 1-7 are constants of the sizes a run checks for.
std::shared_ptr<const QConvScales> constant_qconv_scales(const KernelInitContext& ic) {
  const Tensor *xs = ic.constant_input(1), *xz = ic.constant_input(2), *w = ic.constant_input(3);
  const Tensor *ws = ic.constant_input(4), *wz = ic.constant_input(5), *ys = ic.constant_input(6);
  const Tensor* yz = ic.constant_input(7);
  if (!xs || !xz || !w || !ws || !wz || !ys || !yz || w->rank() < 1) return nullptr;
  const int64_t M = w->dim(0);
  const bool scalars = xs->numel() == 1 && xz->numel() == 1 && ys->numel() == 1 && yz->numel() == 1;
  const bool per_channel = (ws->numel() == 1 || ws->numel() == M) && (wz->numel() == 1 || wz->numel() == M);
  if (!scalars || !per_channel) return nullptr;
  return std::make_shared<const QConvScales>(read_qconv_scales(*xs, *xz, *ws, *wz, *ys, *yz, M));
}

// QLinearConv: integer convolution of (x - x_zp) and (w - w_zp) accumulated in
// int32, plus the int32 bias, requantized with x_scale * w_scale / y_scale.
// ORT's com.microsoft version adds channels_last: x [N, spatial..., C] and y
// [N, spatial..., M] (what the int8 layout pass and ORT's NHWC transformer write).
KernelFactory qlinear_conv_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    SpatialAttrs sa = SpatialAttrs::read(ic);
    int64_t group = ic.get_int("group", 1);
    const bool channels_last = ic.get_int("channels_last", 0) != 0;
    std::shared_ptr<const Int8ConvWeights> packed =
        prepare_int8_conv_weights(ic.constant_input(3), group, ic.constant_input(5));
    std::shared_ptr<const QConvScales> constant_scales = constant_qconv_scales(ic);
    return [=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const Tensor& xs = ctx.input(1);
      const Tensor& xz = ctx.input(2);
      const Tensor& w = ctx.input(3);
      const Tensor& ws = ctx.input(4);
      const Tensor& wz = ctx.input(5);
      const Tensor& ys = ctx.input(6);
      const Tensor& yz = ctx.input(7);
      const Tensor* bias = ctx.has_input(8) ? &ctx.input(8) : nullptr;
      if (x.rank() < 3) kernel_fail("QLinearConv input must have rank >= 3, got " + shape_to_string(x.shape()));
      if (w.rank() != x.rank())
        kernel_fail("weight shape " + shape_to_string(w.shape()) + " does not match input rank of " + shape_to_string(x.shape()));
      if (xs.numel() != 1 || xz.numel() != 1 || ys.numel() != 1 || yz.numel() != 1)
        kernel_fail("x/y scales and zero points must be scalars");
      if (xz.dtype() != x.dtype() || wz.dtype() != w.dtype())
        kernel_fail("zero points must have their tensor's type: x " + dtype_name(x.dtype()) + " with x_zero_point " +
                    dtype_name(xz.dtype()) + ", w " + dtype_name(w.dtype()) + " with w_zero_point " +
                    dtype_name(wz.dtype()));
      if (group <= 0) kernel_fail("group must be positive");
      const int64_t N = x.dim(0), C = channels_last ? x.dim(x.rank() - 1) : x.dim(1), M = w.dim(0), Cg = w.dim(1);
      if (C != Cg * group || M % group != 0)
        kernel_fail("input channels " + std::to_string(C) + " / weight " + shape_to_string(w.shape()) +
                    " do not match group " + std::to_string(group));
      if (ws.numel() != 1 && ws.numel() != M) kernel_fail("w_scale must have 1 or M=" + std::to_string(M) + " values");
      if (wz.numel() != 1 && wz.numel() != M) kernel_fail("w_zero_point must have 1 or M=" + std::to_string(M) + " values");
      if (bias && bias->numel() != M) kernel_fail("bias must have M=" + std::to_string(M) + " values");
      if (bias && bias->dtype() != DataType::Int32) kernel_fail("bias must be int32");
      std::vector<int64_t> in_sp(x.shape().begin() + (channels_last ? 1 : 2), x.shape().end() - (channels_last ? 1 : 0));
      std::vector<int64_t> ksp(w.shape().begin() + 2, w.shape().end());
      if (!sa.kernel.empty() && sa.kernel != ksp) kernel_fail("kernel_shape does not match the weight shape");
      SpatialGeometry g = compute_geometry(in_sp, sa, ksp);
      Shape yshape = {N};
      if (!channels_last) yshape.push_back(M);
      for (auto o : g.out) yshape.push_back(o);
      if (channels_last) yshape.push_back(M);
      const bool fast = is_8bit(x.dtype()) && is_8bit(w.dtype()) && is_8bit(yz.dtype()) && int8_conv_supported(g, M, group) && Cg > 0;
      if (channels_last && !fast)
        kernel_fail("QLinearConv with channels_last runs 8-bit 1-D and 2-D convolutions only, got input " +
                    shape_to_string(x.shape()) + " and weight " + shape_to_string(w.shape()));
      Tensor& y = ctx.allocate_output(0, yz.dtype(), yshape);
      if (fast) {
        std::shared_ptr<const Int8ConvWeights> wp = packed ? packed : prepare_int8_conv_weights(&w, group);
        QConvScales read;
        if (!constant_scales) read = read_qconv_scales(xs, xz, ws, wz, ys, yz, M);
        const QConvScales& sc = constant_scales ? *constant_scales : read;
        const int32_t* bp = bias ? bias->data<int32_t>() : nullptr;
        Int8ConvInput in{x.raw(), x.dtype() == DataType::Int8, sc.x_zero, N, C, channels_last};
        const Int8Requant rq{bp, sc.mult.data(), static_cast<float>(sc.y_zero), yz.dtype() == DataType::Int8};
        int8_conv(in, g, *wp, sc.w_zero,
                  requantize_sink(static_cast<uint8_t*>(y.raw()), M, g.out_size(), rq, channels_last),
                  ctx.thread_pool());
        return;
      }
      const int nd = g.nd;
      const int64_t in_size = g.in_size(), out_size = g.out_size(), ksize = g.kernel_size();
      const int64_t Mg = M / group;
      // widen x and w (minus their zero points) to int32 once
      std::vector<int32_t> xi(static_cast<size_t>(x.numel())), wi(static_cast<size_t>(w.numel()));
      int32_t xzv = static_cast<int32_t>(xz.int_at(0));
      dispatch_quant(x.dtype(), [&](auto tag) {
        const auto* xv = x.data<typename decltype(tag)::type>();
        for (size_t i = 0; i < xi.size(); ++i) xi[i] = static_cast<int32_t>(xv[i]) - xzv;
      });
      int64_t wper = Cg * ksize;
      dispatch_quant(w.dtype(), [&](auto tag) {
        const auto* wv = w.data<typename decltype(tag)::type>();
        for (int64_t m = 0; m < M; ++m) {
          int32_t z = static_cast<int32_t>(wz.int_at(wz.numel() == 1 ? 0 : m));
          for (int64_t j = 0; j < wper; ++j) wi[m * wper + j] = static_cast<int32_t>(wv[m * wper + j]) - z;
        }
      });
      // per kernel offset and output position, the input offset (-1: padding)
      std::vector<int64_t> offs(static_cast<size_t>(ksize * out_size));
      std::vector<int64_t> oi(nd, 0), ki(nd, 0);
      for (int64_t k = 0; k < ksize; ++k) {
        int64_t r2 = k;
        for (int d = nd - 1; d >= 0; --d) {
          ki[d] = r2 % g.kernel[d];
          r2 /= g.kernel[d];
        }
        std::fill(oi.begin(), oi.end(), 0);
        for (int64_t o = 0; o < out_size; ++o) {
          if (o > 0)  // step the output position like an odometer: no divisions
            for (int d = nd - 1; d >= 0; --d) {
              if (++oi[d] < g.out[d]) break;
              oi[d] = 0;
            }
          int64_t off = 0;
          bool inside = true;
          for (int d = 0; d < nd; ++d) {
            int64_t p = oi[d] * g.strides[d] - g.pad_begin[d] + ki[d] * g.dilations[d];
            if (p < 0 || p >= g.in[d]) {
              inside = false;
              break;
            }
            off = off * g.in[d] + p;
          }
          offs[k * out_size + o] = inside ? off : -1;
        }
      }
      float xsv = static_cast<float>(xs.float_at(0)), ysv = static_cast<float>(ys.float_at(0));
      float yzv = static_cast<float>(yz.int_at(0));
      // The products and their sums are integers, so a float GEMM gives the
      // int32 accumulation exactly while every partial sum stays below 2^24:
      // true for output channel m when max|x - x_zp| * sum_j |w_mj - w_zp|
      // < 2^24 (typical 8-bit weights). Other channels take the int32 loop.
      int64_t xmax = 0;
      for (int32_t v : xi) xmax = std::max<int64_t>(xmax, std::abs(v));
      std::vector<char> exact(static_cast<size_t>(M));
      bool all_exact = true;
      for (int64_t m = 0; m < M; ++m) {
        int64_t wsum = 0;
        for (int64_t j = 0; j < wper; ++j) wsum += std::abs(wi[m * wper + j]);
        exact[m] = xmax * wsum < (int64_t{1} << 24);
        all_exact = all_exact && exact[m];
      }
      // Depthwise-like groups (one output channel, a few taps) gather directly:
      // a GEMM call per group would cost more than its arithmetic.
      const bool direct = Mg == 1 && wper <= 64;
      if (direct) std::fill(exact.begin(), exact.end(), 0);
      all_exact = all_exact && !direct;
      std::vector<float> xf(direct ? 0 : xi.size()), wf(direct ? 0 : wi.size());
      std::copy(xi.begin(), xi.begin() + static_cast<int64_t>(xf.size()), xf.begin());
      std::copy(wi.begin(), wi.begin() + static_cast<int64_t>(wf.size()), wf.begin());
      // im2col per (image, group): cols[Cg * ksize][out_size], then the GEMM
      std::vector<float> colf(direct ? 0 : static_cast<size_t>(wper * out_size));
      std::vector<float> accf(direct ? 0 : static_cast<size_t>(Mg * out_size));
      std::vector<int32_t> cols(all_exact || direct ? 0 : static_cast<size_t>(wper * out_size));
      std::vector<int32_t> acc(static_cast<size_t>(out_size));
      dispatch_quant(yz.dtype(), [&](auto tag) {
        using Q = typename decltype(tag)::type;
        Q* out = y.data<Q>();
        for (int64_t n = 0; n < N; ++n)
          for (int64_t gi = 0; gi < group; ++gi) {
            if (direct) {
              int32_t* a = acc.data();
              std::fill(acc.begin(), acc.end(), bias ? bias->data<int32_t>()[gi] : 0);
              const int32_t* wp = wi.data() + gi * wper;
              for (int64_t c = 0; c < Cg; ++c) {
                const int32_t* xp = xi.data() + (n * C + gi * Cg + c) * in_size;
                for (int64_t k = 0; k < ksize; ++k) {
                  int32_t wv = wp[c * ksize + k];
                  const int64_t* op = offs.data() + k * out_size;
                  for (int64_t o = 0; o < out_size; ++o) a[o] += op[o] >= 0 ? wv * xp[op[o]] : 0;
                }
              }
              float mult = xsv * static_cast<float>(ws.float_at(ws.numel() == 1 ? 0 : gi)) / ysv;
              Q* yp = out + (n * M + gi) * out_size;
              requantize(a, out_size, mult, yzv, yp);
              continue;
            }
            for (int64_t c = 0; c < Cg; ++c) {
              int64_t base = (n * C + gi * Cg + c) * in_size;
              for (int64_t k = 0; k < ksize; ++k) {
                const int64_t* op = offs.data() + k * out_size;
                float* colp = colf.data() + (c * ksize + k) * out_size;
                for (int64_t o = 0; o < out_size; ++o) colp[o] = op[o] >= 0 ? xf[base + op[o]] : 0.f;
                if (all_exact) continue;
                int32_t* col = cols.data() + (c * ksize + k) * out_size;
                for (int64_t o = 0; o < out_size; ++o) col[o] = op[o] >= 0 ? xi[base + op[o]] : 0;
              }
            }
            gemm_f32(false, false, Mg, out_size, wper, 1.f, wf.data() + gi * Mg * wper, wper, colf.data(), out_size,
                     0.f, accf.data(), out_size, ctx.thread_pool());
            for (int64_t m = gi * Mg; m < (gi + 1) * Mg; ++m) {
              int32_t b0 = bias ? bias->data<int32_t>()[m] : 0;
              int32_t* a = acc.data();
              if (exact[m]) {
                const float* af = accf.data() + (m - gi * Mg) * out_size;
                for (int64_t o = 0; o < out_size; ++o) a[o] = b0 + static_cast<int32_t>(af[o]);
              } else {
                for (int64_t o = 0; o < out_size; ++o) a[o] = b0;
                const int32_t* wp = wi.data() + m * wper;
                for (int64_t j = 0; j < wper; ++j) {
                  int32_t wv = wp[j];
                  if (wv == 0) continue;
                  const int32_t* col = cols.data() + j * out_size;
                  for (int64_t o = 0; o < out_size; ++o) a[o] += wv * col[o];
                }
              }
              float mult = xsv * static_cast<float>(ws.float_at(ws.numel() == 1 ? 0 : m)) / ysv;
              Q* yp = out + (n * M + m) * out_size;
              requantize(a, out_size, mult, yzv, yp);
            }
          }
      });
    };
  });
}

}  // namespace

void register_quantization(KernelRegistry& r) {
  // Checked against the spec through opset 28 (float8e8m0 scales in 24, int2 in
  // 25, float6 in 28; `precision` and `output_dtype` attributes).
  r.add("QuantizeLinear", 10, 28, quantize_factory());
  r.add("DequantizeLinear", 10, 28, dequantize_factory());
  // ORT's com.microsoft versions (per-tensor or per-axis; int4 to int16): the
  // same arithmetic as the standard ops, except that ORT divides float16 input
  // in float32.
  r.add("QuantizeLinear", 1, kMaxOpset, quantize_factory(DataType::Float), "com.microsoft");
  r.add("DequantizeLinear", 1, kMaxOpset, dequantize_factory(), "com.microsoft");
  r.add("DynamicQuantizeLinear", 11, kMaxOpset, dynamic_quantize_factory());
  r.add("QLinearConv", 10, kMaxOpset, qlinear_conv_factory());
  r.add("QLinearConv", 1, kMaxOpset, qlinear_conv_factory(), "com.microsoft");
}

}  // namespace onyx
