// Shape-manipulating ops: Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size,
// Expand, Identity, Dropout (inference), ConstantOfShape. The pure views share
// their input's data.
#include <algorithm>
#include <random>

#include "cpu/cpu_provider.h"
#include "cpu/shape_copy.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

using shape_detail::ints_to_string;
using shape_detail::reshape_target;

std::vector<int64_t> int_list(const Tensor& t, const char* what) {
  if (!dtype_is_int(t.dtype()))
    kernel_fail(std::string(what) + " must be an integer tensor, got " + dtype_name(t.dtype()));
  if (t.rank() > 1) kernel_fail(std::string(what) + " must be 1-D, got shape " + shape_to_string(t.shape()));
  return t.to_int64_vector();
}

// ---- Reshape ----

KernelFactory reshape_factory() {
  return lambda_factory([](const KernelInitContext& init) {
    bool from_attr = init.opset() < 5;
    std::vector<int64_t> attr_shape = from_attr ? init.get_ints("shape", {}) : std::vector<int64_t>{};
    bool allowzero = init.opset() >= 14 && init.get_int("allowzero", 0) != 0;
    return [from_attr, attr_shape, allowzero](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      std::vector<int64_t> req = from_attr ? attr_shape : int_list(ctx.input(1), "Reshape: shape");
      ctx.set_output(0, Value(x.reshaped(reshape_target(x.shape(), req, allowzero))));
    };
  });
}

// ---- Flatten ----

KernelFactory flatten_factory() {
  return lambda_factory([](const KernelInitContext& init) {
    int64_t axis = init.get_int("axis", 1);
    return [axis](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      int64_t r = x.rank();
      int64_t a = axis;
      if (a < -r || a > r)
        kernel_fail("Flatten: axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
      if (a < 0) a += r;
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < r; ++i) (i < a ? outer : inner) *= x.shape()[i];
      ctx.set_output(0, Value(x.reshaped({outer, inner})));
    };
  });
}

// ---- Squeeze / Unsqueeze ----

KernelFactory squeeze_factory() {
  return lambda_factory([](const KernelInitContext& init) {
    bool from_attr = init.opset() < 13;
    bool has_attr = from_attr && init.has("axes");
    std::vector<int64_t> attr_axes = has_attr ? init.get_ints("axes") : std::vector<int64_t>{};
    return [from_attr, has_attr, attr_axes](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      int64_t r = x.rank();
      bool have = from_attr ? has_attr : ctx.has_input(1);
      std::vector<int64_t> axes = from_attr ? attr_axes : (have ? int_list(ctx.input(1), "Squeeze: axes") : std::vector<int64_t>{});
      std::vector<bool> drop(r, false);
      if (!have || axes.empty()) {  // no axes (or an empty list): drop every size-1 dim
        for (int64_t i = 0; i < r; ++i) drop[i] = x.shape()[i] == 1;
      } else {
        for (int64_t a : axes) {
          if (a < -r || a >= r)
            kernel_fail("Squeeze: axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
          int64_t n = a < 0 ? a + r : a;
          if (x.shape()[n] != 1)
            kernel_fail("Squeeze: dimension " + std::to_string(n) + " of shape " + shape_to_string(x.shape()) +
                        " is not 1");
          drop[n] = true;
        }
      }
      Shape out;
      for (int64_t i = 0; i < r; ++i)
        if (!drop[i]) out.push_back(x.shape()[i]);
      ctx.set_output(0, Value(x.reshaped(out)));
    };
  });
}

KernelFactory unsqueeze_factory() {
  return lambda_factory([](const KernelInitContext& init) {
    bool from_attr = init.opset() < 13;
    std::vector<int64_t> attr_axes = from_attr ? init.get_ints("axes", {}) : std::vector<int64_t>{};
    return [from_attr, attr_axes](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      std::vector<int64_t> axes = from_attr ? attr_axes : int_list(ctx.input(1), "Unsqueeze: axes");
      int64_t r = x.rank() + static_cast<int64_t>(axes.size());
      std::vector<bool> ins(r, false);
      for (int64_t a : axes) {
        if (a < -r || a >= r)
          kernel_fail("Unsqueeze: axis " + std::to_string(a) + " is out of range for output rank " + std::to_string(r));
        int64_t n = a < 0 ? a + r : a;
        if (ins[n]) kernel_fail("Unsqueeze: axis " + std::to_string(a) + " is repeated in " + ints_to_string(axes));
        ins[n] = true;
      }
      Shape out(r);
      size_t k = 0;
      for (int64_t i = 0; i < r; ++i) out[i] = ins[i] ? 1 : x.shape()[k++];
      ctx.set_output(0, Value(x.reshaped(out)));
    };
  });
}

// ---- Shape / Size ----

KernelFactory shape_factory() {
  return lambda_factory([](const KernelInitContext& init) {
    bool has_start = init.opset() >= 15 && init.has("start");
    bool has_end = init.opset() >= 15 && init.has("end");
    int64_t start = has_start ? init.get_int("start") : 0;
    int64_t end = has_end ? init.get_int("end") : 0;
    return [has_start, has_end, start, end](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      int64_t r = x.rank();
      auto clampi = [r](int64_t v) {
        if (v < 0) v += r;
        return std::clamp<int64_t>(v, 0, r);
      };
      int64_t s = has_start ? clampi(start) : 0;
      int64_t e = has_end ? clampi(end) : r;
      int64_t n = std::max<int64_t>(e - s, 0);
      Tensor& out = ctx.allocate_output(0, DataType::Int64, {n});
      for (int64_t i = 0; i < n; ++i) out.data<int64_t>()[i] = x.shape()[s + i];
    };
  });
}

void size_run(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.allocate_output(0, DataType::Int64, {});
  out.data<int64_t>()[0] = x.numel();
}

// ---- Expand ----

void expand_run(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> req = int_list(ctx.input(1), "Expand: shape");
  for (int64_t d : req)
    if (d < 0) kernel_fail("Expand: negative dimension in shape " + ints_to_string(req));
  Shape out_shape = broadcast_shapes({x.shape(), req});
  if (out_shape == x.shape()) {
    ctx.set_output(0, Value(x));
    return;
  }
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  shape_detail::strided_copy_tensor(x, 0, broadcast_strides(x.shape(), out_shape), out);
}

// ---- Identity ----

void identity_run(KernelContext& ctx) { ctx.set_output(0, ctx.input_value(0)); }

// ---- Dropout ----

Tensor all_true_mask(DataType dtype, const Shape& shape) {
  Tensor m(dtype, shape);
  dispatch_numeric_bool(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T one = static_cast<T>(1.0f);
    if constexpr (std::is_same_v<T, bool>) one = true;
    T* p = m.data<T>();
    for (int64_t i = 0; i < m.numel(); ++i) p[i] = one;
  });
  return m;
}

KernelFactory dropout_factory() {
  return lambda_factory([](const KernelInitContext& init) {
    int64_t opset = init.opset();
    bool has_seed = init.has("seed");
    int64_t seed = has_seed ? init.get_int("seed") : 0;
    return [opset, has_seed, seed](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      bool training = false;
      float ratio = 0.5f;
      if (opset >= 12) {
        if (ctx.has_input(1)) {
          const Tensor& rt = ctx.input(1);
          if (rt.numel() != 1) kernel_fail("Dropout: ratio must be a scalar, got shape " + shape_to_string(rt.shape()));
          ratio = static_cast<float>(rt.float_at(0));
        }
        if (ctx.has_input(2)) {
          const Tensor& tm = ctx.input(2);
          if (tm.numel() != 1)
            kernel_fail("Dropout: training_mode must be a scalar, got shape " + shape_to_string(tm.shape()));
          training = tm.int_at(0) != 0;
        }
      }
      // Before opset 12 there is no training switch an inference runtime honours:
      // Dropout is the identity (is_test / ratio only matter for training).
      DataType mask_type = opset >= 10 ? DataType::Bool : x.dtype();
      if (!training || ratio == 0.0f) {
        ctx.set_output(0, Value(x));
        if (ctx.wants_output(1)) ctx.set_output(1, Value(all_true_mask(mask_type, x.shape())));
        return;
      }
      if (ratio < 0.0f || ratio >= 1.0f)
        kernel_fail("Dropout: ratio must be in [0, 1), got " + std::to_string(ratio));
      // MT19937 and 53-bit uniforms as numpy's legacy RandomState draws them, so a
      // seeded Dropout reproduces the ONNX reference (mask = uniform() >= ratio).
      std::mt19937 rng(has_seed ? static_cast<uint32_t>(seed) : std::random_device{}());
      auto uniform = [&rng]() {
        uint32_t a = rng() >> 5, b = rng() >> 6;
        return (a * 67108864.0 + b) / 9007199254740992.0;
      };
      float keep_scale = 1.0f - ratio;
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      Tensor mask(DataType::Bool, x.shape());
      dispatch_float(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* xp = x.data<T>();
        T* yp = y.data<T>();
        bool* mp = mask.data<bool>();
        for (int64_t i = 0; i < x.numel(); ++i) {
          mp[i] = uniform() >= ratio;
          yp[i] = mp[i] ? static_cast<T>(static_cast<float>(xp[i]) / keep_scale) : static_cast<T>(0.0f);
        }
      });
      if (ctx.wants_output(1)) ctx.set_output(1, Value(mask));
    };
  });
}

// ---- ConstantOfShape ----

KernelFactory constant_of_shape_factory() {
  return lambda_factory([](const KernelInitContext& init) {
    Tensor value;
    if (init.has("value")) {
      value = init.get_tensor("value");
      if (value.numel() != 1)
        kernel_fail("ConstantOfShape: value must hold exactly one element, got shape " +
                    shape_to_string(value.shape()));
    } else {
      value = Tensor::scalar<float>(0.0f);
    }
    return [value](KernelContext& ctx) {
      std::vector<int64_t> req = int_list(ctx.input(0), "ConstantOfShape: input");
      for (int64_t d : req)
        if (d < 0) kernel_fail("ConstantOfShape: negative dimension in shape " + ints_to_string(req));
      Tensor& out = ctx.allocate_output(0, value.dtype(), req);
      dispatch_by_size(value.dtype(), [&](auto tag) {  // any type, the narrow ones included
        using T = typename decltype(tag)::type;
        const T v = value.data<T>()[0];
        T* p = out.data<T>();
        // Big fills (a detector's [rois, 256, 7, 7] of zeros: 50 MB) in chunks across the pool.
        constexpr int64_t kChunk = int64_t{1} << 18;
        const int64_t n = out.numel(), chunks = (n + kChunk - 1) / kChunk;
        parallel_for(chunks > 1 ? ctx.thread_pool() : nullptr, chunks, [&](int64_t c0, int64_t c1) {
          std::fill(p + c0 * kChunk, p + std::min(n, c1 * kChunk), v);
        });
      });
    };
  });
}

}  // namespace

void register_shape_ops(KernelRegistry& r) {
  r.add("Reshape", 1, kMaxOpset, reshape_factory());
  r.add("Flatten", 1, kMaxOpset, flatten_factory());
  r.add("Squeeze", 1, kMaxOpset, squeeze_factory());
  r.add("Unsqueeze", 1, kMaxOpset, unsqueeze_factory());
  r.add("Shape", 1, kMaxOpset, shape_factory());
  r.add("Size", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) { return size_run; }));
  r.add("Expand", 8, kMaxOpset, lambda_factory([](const KernelInitContext&) { return expand_run; }));
  r.add("Identity", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) { return identity_run; }));
  r.add("Dropout", 1, kMaxOpset, dropout_factory());
  r.add("ConstantOfShape", 9, kMaxOpset, constant_of_shape_factory());
}

}  // namespace onyx
