#include "cpu/half_via_float.h"

#include "cpu/half_convert.h"
#include "runtime/node_evaluator.h"

namespace onyx {
namespace {

bool is_half(DataType t) { return t == DataType::Float16 || t == DataType::BFloat16; }

Tensor widen(const Tensor& half) {
  Tensor out(DataType::Float, half.shape());
  const int64_t n = half.numel();
  if (half.dtype() == DataType::Float16) {
    halves_to_floats(half.data<uint16_t>(), out.data<float>(), n);
  } else {
    const BFloat16* in = half.data<BFloat16>();
    float* o = out.data<float>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(in[i]);
  }
  return out;
}

void narrow(const Tensor& wide, Tensor& half) {
  const int64_t n = wide.numel();
  if (half.dtype() == DataType::Float16) {
    floats_to_halves(wide.data<float>(), half.data<uint16_t>(), n);
  } else {
    const float* in = wide.data<float>();
    BFloat16* o = half.data<BFloat16>();
    for (int64_t i = 0; i < n; ++i) o[i] = BFloat16(in[i]);
  }
}

class HalfViaFloatKernel final : public Kernel {
 public:
  HalfViaFloatKernel(const KernelInitContext& ic, const KernelFactory& float_kernel, std::set<size_t> float_outputs)
      : float_outputs_(std::move(float_outputs)) {
    // Half constants widen once; the float kernel sees (and may pack) the wide
    // copies, and the half originals are never read again.
    wide_constants_.resize(ic.num_inputs());
    std::vector<const Tensor*> constants(ic.num_inputs(), nullptr);
    for (size_t i = 0; i < ic.num_inputs(); ++i) {
      const Tensor* c = ic.constant_input(i);
      if (c && is_half(c->dtype())) {
        wide_constants_[i] = widen(*c);
        constants[i] = &wide_constants_[i];
        ic.packed_constant(i);
      } else {
        constants[i] = c;
      }
    }
    KernelInitContext inner(ic.node(), ic.opset(), constants, nullptr);
    inner.set_provider(ic.provider());
    kernel_ = float_kernel(inner);
    for (size_t i = 0; i < constants.size(); ++i)
      if (constants[i] == ic.constant_input(i) && inner.constant_was_packed(i)) ic.packed_constant(i);
  }

  void run(KernelContext& ctx) const override {
    DataType half = DataType::Undefined;
    for (size_t i = 0; i < ctx.num_inputs() && half == DataType::Undefined; ++i)
      if (ctx.has_input(i) && ctx.input_value(i).is_tensor() && is_half(ctx.input(i).dtype())) half = ctx.input(i).dtype();
    if (half == DataType::Undefined) {
      kernel_->run(ctx);
      return;
    }
    std::vector<Value> inputs(ctx.num_inputs());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!ctx.has_input(i)) continue;
      if (wide_constants_[i].dtype() == DataType::Float)
        inputs[i] = Value(wide_constants_[i]);
      else if (ctx.input_value(i).is_tensor() && is_half(ctx.input(i).dtype()))
        inputs[i] = Value(widen(ctx.input(i)));
      else
        inputs[i] = ctx.input_value(i);
    }
    SingleNodeContext wide(ctx.node(), inputs, ctx.thread_pool());
    kernel_->run(wide);
    for (size_t o = 0; o < wide.outputs().size(); ++o) {
      Value& v = wide.outputs()[o];
      if (!ctx.wants_output(o) || v.is_none()) continue;
      if (v.is_tensor() && v.tensor().dtype() == DataType::Float && !float_outputs_.count(o))
        narrow(v.tensor(), ctx.allocate_output(o, half, v.tensor().shape()));
      else
        ctx.set_output(o, std::move(v));
    }
  }

 private:
  std::set<size_t> float_outputs_;
  std::vector<Tensor> wide_constants_;
  std::unique_ptr<Kernel> kernel_;
};

}  // namespace

KernelFactory half_via_float(KernelFactory float_kernel, std::set<size_t> float_outputs) {
  return [float_kernel = std::move(float_kernel), float_outputs = std::move(float_outputs)](
             const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
    return std::make_unique<HalfViaFloatKernel>(ic, float_kernel, float_outputs);
  };
}

}  // namespace onyx
