// Constant: the tensor is decoded once at load and shared by every run.
#include "cpu/cpu_provider.h"

namespace onyx {

namespace {

Tensor constant_value(const KernelInitContext& ctx) {
  if (ctx.has("value")) return ctx.get_tensor("value");
  if (ctx.has("sparse_value")) return ctx.get_tensor("sparse_value");  // densified by the loader
  if (ctx.has("value_float")) return Tensor::scalar<float>(ctx.get_float("value_float", 0));
  if (ctx.has("value_int")) return Tensor::scalar<int64_t>(ctx.get_int("value_int"));
  if (ctx.has("value_floats")) {
    auto v = ctx.get_floats("value_floats");
    return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
  }
  if (ctx.has("value_ints")) {
    auto v = ctx.get_ints("value_ints");
    return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
  }
  if (ctx.has("value_string")) {
    Tensor t(DataType::String, {});
    t.data<std::string>()[0] = ctx.get_string("value_string", "");
    return t;
  }
  if (ctx.has("value_strings")) {
    auto v = ctx.get_strings("value_strings");
    Tensor t(DataType::String, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
    return t;
  }
  kernel_fail("Constant needs one of the attributes value, sparse_value, value_float(s), value_int(s), value_string(s)");
}

}  // namespace

void register_constant(KernelRegistry& r) {
  r.add("Constant", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ctx) {
          Tensor value = constant_value(ctx);
          return [value](KernelContext& k) { k.set_output(0, Value(value)); };
        }));
}

}  // namespace onyx
