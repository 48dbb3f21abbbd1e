// Random-number ops: RandomNormal, RandomUniform, their *Like forms, and
// Multinomial. With a `seed` attribute every run draws the same numbers;
// without one each run draws fresh ones.
#include <cmath>
#include <random>

#include "cpu/cpu_provider.h"
#include "kernels/dispatch.h"

namespace onyx {

namespace {

struct RandomSpec {
  bool seeded = false;
  float seed = 0;
  DataType dtype = DataType::Float;
  bool dtype_given = false;
};

RandomSpec read_spec(const KernelInitContext& ctx) {
  RandomSpec s;
  s.seeded = ctx.has("seed");
  s.seed = ctx.get_float("seed", 0.0f);
  s.dtype_given = ctx.has("dtype");
  s.dtype = static_cast<DataType>(ctx.get_int("dtype", static_cast<int64_t>(DataType::Float)));
  return s;
}

std::mt19937_64 make_engine(const RandomSpec& s) {
  if (s.seeded) return std::mt19937_64(static_cast<uint64_t>(static_cast<int64_t>(s.seed * 1000003.0f)));
  std::random_device rd;
  return std::mt19937_64((static_cast<uint64_t>(rd()) << 32) ^ rd());
}

template <class Dist>
void fill(Tensor& t, Dist dist, std::mt19937_64& engine) {
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = T(static_cast<float>(dist(engine)));
  });
}

// `normal`: mean/scale; otherwise low/high.
KernelFactory random_factory(bool normal, bool like) {
  return lambda_factory([normal, like](const KernelInitContext& ctx) {
    RandomSpec spec = read_spec(ctx);
    double a = normal ? ctx.get_float("mean", 0.0f) : ctx.get_float("low", 0.0f);
    double b = normal ? ctx.get_float("scale", 1.0f) : ctx.get_float("high", 1.0f);
    Shape shape;
    if (!like) {
      shape = ctx.get_ints("shape");
      ONYX_KERNEL_CHECK(ctx.has("shape"), "the shape attribute is required");
    }
    return [=](KernelContext& k) {
      Shape s = shape;
      DataType dt = spec.dtype;
      if (like) {
        s = k.input(0).shape();
        if (!spec.dtype_given) dt = k.input(0).dtype();
      }
      ONYX_KERNEL_CHECK(dtype_is_float(dt), "random ops produce float types, not " + dtype_name(dt));
      Tensor& out = k.allocate_output(0, dt, s);
      std::mt19937_64 engine = make_engine(spec);
      if (normal) fill(out, std::normal_distribution<double>(a, b), engine);
      else fill(out, std::uniform_real_distribution<double>(a, b), engine);
    };
  });
}

KernelFactory multinomial_factory() {
  return lambda_factory([](const KernelInitContext& ctx) {
    RandomSpec spec = read_spec(ctx);
    int64_t samples = ctx.get_int("sample_size", 1);
    DataType out_type = spec.dtype_given ? spec.dtype : DataType::Int32;
    return [=](KernelContext& k) {
      const Tensor& x = k.input(0);
      ONYX_KERNEL_CHECK(x.rank() == 2, "Multinomial input must be [batch, classes], got " + shape_to_string(x.shape()));
      ONYX_KERNEL_CHECK(out_type == DataType::Int32 || out_type == DataType::Int64, "Multinomial dtype must be int32 or int64");
      int64_t batch = x.dim(0), classes = x.dim(1);
      Tensor& out = k.allocate_output(0, out_type, {batch, samples});
      std::mt19937_64 engine = make_engine(spec);
      std::vector<double> weights(classes);
      for (int64_t b = 0; b < batch; ++b) {
        double mx = -INFINITY;
        for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, x.float_at(b * classes + c));
        for (int64_t c = 0; c < classes; ++c) weights[c] = std::exp(x.float_at(b * classes + c) - mx);
        std::discrete_distribution<int64_t> dist(weights.begin(), weights.end());
        for (int64_t s = 0; s < samples; ++s) {
          int64_t v = dist(engine);
          if (out_type == DataType::Int32) out.data<int32_t>()[b * samples + s] = static_cast<int32_t>(v);
          else out.data<int64_t>()[b * samples + s] = v;
        }
      }
    };
  });
}

}  // namespace

void register_random(KernelRegistry& r) {
  r.add("RandomNormal", 1, kMaxOpset, random_factory(true, false));
  r.add("RandomUniform", 1, kMaxOpset, random_factory(false, false));
  r.add("RandomNormalLike", 1, kMaxOpset, random_factory(true, true));
  r.add("RandomUniformLike", 1, kMaxOpset, random_factory(false, true));
  r.add("Multinomial", 7, kMaxOpset, multinomial_factory());
}

}  // namespace onyx
