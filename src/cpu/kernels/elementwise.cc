// Elementwise ops: arithmetic and bitwise binary ops with numpy broadcasting
// (and the legacy opset<7 `broadcast`/`axis` attributes), comparisons, logic,
// unary math, the variadic Min/Max/Sum/Mean and Where.
#include <cmath>
#include <cstring>
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
using ew::is_half_v;
using ew::map_binary;
using ew::map_unary;

// ---------------------------------------------------------------------------
// Binary op plumbing

// The run function of a binary op, given both inputs (b already aligned for
// legacy broadcasting) and the output shape.
using BinaryBody = std::function<void(KernelContext&, const Tensor&, const Tensor&, const Shape&)>;

// Opset<7 binary ops: with broadcast=1, B is aligned with A starting at `axis`
// (default: B's dims match A's trailing dims).
Tensor legacy_align(const Tensor& a, const Tensor& b, bool has_axis, int64_t axis) {
  int64_t ra = a.rank(), rb = b.rank();
  if (rb > ra)
    kernel_fail("legacy broadcast: B " + shape_to_string(b.shape()) + " has higher rank than A " +
                shape_to_string(a.shape()));
  int64_t ax = has_axis ? (axis < 0 ? axis + ra : axis) : ra - rb;
  if (ax < 0 || ax + rb > ra)
    kernel_fail("legacy broadcast: axis " + std::to_string(axis) + " does not fit B " + shape_to_string(b.shape()) +
                " into A " + shape_to_string(a.shape()));
  Shape s(ra, 1);
  for (int64_t i = 0; i < rb; ++i) s[ax + i] = b.shape()[i];
  return b.reshaped(s);
}

// Factory for a binary op: `make(init_ctx)` returns a BinaryBody.
template <class Make>
KernelFactory binary_factory(Make make) {
  return [make](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
    BinaryBody body = make(ic);
    bool legacy = ic.opset() < 7 && ic.get_int("broadcast", 0) != 0;
    bool has_axis = ic.has("axis");
    int64_t axis = legacy ? ic.get_int("axis", 0) : 0;
    return std::make_unique<LambdaKernel>([=](KernelContext& ctx) {
      const Tensor& a = ctx.input(0);
      const Tensor& b0 = ctx.input(1);
      if (legacy) {
        Tensor b = legacy_align(a, b0, has_axis, axis);
        body(ctx, a, b, broadcast_shapes({a.shape(), b.shape()}));
      } else {
        body(ctx, a, b0, broadcast_shapes({a.shape(), b0.shape()}));
      }
    });
  };
}

void check_same_type(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    kernel_fail("inputs have different element types " + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
}

// Integer arithmetic that wraps instead of overflowing (no UB).
template <class T>
using Wide = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

enum class Arith { Add, Sub, Mul, Div };

template <Arith OP, class T>
void arith_typed(const Tensor& a, const Tensor& b, Tensor& o, ThreadPool* pool) {
  if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
    using C = Compute<T>;
    auto f = [](T xt, T yt) -> T {
      C x = static_cast<C>(xt), y = static_cast<C>(yt);
      if constexpr (OP == Arith::Add) return T(x + y);
      else if constexpr (OP == Arith::Sub) return T(x - y);
      else if constexpr (OP == Arith::Mul) return T(x * y);
      else return T(x / y);
    };
    map_binary<T, T, T>(a, b, o, f, pool);
  } else {
    using W = Wide<T>;
    if constexpr (OP == Arith::Div) {
      map_binary<T, T, T>(a, b, o, [](T x, T y) -> T {
        if (y == 0) kernel_fail("integer division by zero");
        if constexpr (std::is_signed_v<T>) {
          if (y == -1) return static_cast<T>(W(0) - W(x));
        }
        return static_cast<T>(x / y);
      });
    } else {
      map_binary<T, T, T>(a, b, o, [](T x, T y) -> T {
        if constexpr (OP == Arith::Add) return static_cast<T>(W(x) + W(y));
        else if constexpr (OP == Arith::Sub) return static_cast<T>(W(x) - W(y));
        else return static_cast<T>(W(x) * W(y));
      }, pool);
    }
  }
}

template <Arith OP>
KernelFactory arith_factory() {
  return binary_factory([](const KernelInitContext&) -> BinaryBody {
    return [](KernelContext& ctx, const Tensor& a, const Tensor& b, const Shape& os) {
      check_same_type(a, b);
      Tensor& o = ctx.allocate_output(0, a.dtype(), os);
      dispatch_numeric(a.dtype(), [&](auto tag) {
        arith_typed<OP, typename decltype(tag)::type>(a, b, o, ctx.thread_pool());
      });
    };
  });
}

// ---- Pow: any numeric base with any numeric exponent; output has the base type.

template <class T>
T int_pow(T base, int64_t e) {
  using W = Wide<T>;
  if (e < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (e % 2 == 0) ? T(1) : T(-1);
    }
    if (base == 0) kernel_fail("Pow: integer zero raised to a negative power");
    return 0;
  }
  W r = 1, b = static_cast<W>(base);
  uint64_t n = static_cast<uint64_t>(e);
  while (n) {
    if (n & 1) r = static_cast<W>(r * b);
    b = static_cast<W>(b * b);
    n >>= 1;
  }
  return static_cast<T>(r);
}

// double -> integer without UB: NaN -> 0, saturating at the type's range.
template <class T>
T saturate_cast(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

template <class T, class E>
void pow_typed(const Tensor& a, const Tensor& b, Tensor& o) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<E, float>) {
    map_binary<T, E, T>(a, b, o, [](float x, float y) {
      if (y == 2.0f) return x * x;
      return std::pow(x, y);
    });
  } else if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
    using C = Compute<T>;
    map_binary<T, E, T>(a, b, o, [](T x, E y) -> T {
      return T(static_cast<C>(std::pow(static_cast<C>(x), static_cast<C>(static_cast<Compute<E>>(y)))));
    });
  } else if constexpr (std::is_floating_point_v<E> || is_half_v<E>) {
    map_binary<T, E, T>(a, b, o, [](T x, E y) -> T {
      return saturate_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(static_cast<Compute<E>>(y))));
    });
  } else {
    map_binary<T, E, T>(a, b, o, [](T x, E y) -> T {
      if constexpr (std::is_unsigned_v<E>) {
        if (y > static_cast<E>(std::numeric_limits<int64_t>::max())) return int_pow<T>(x, std::numeric_limits<int64_t>::max());
      }
      return int_pow<T>(x, static_cast<int64_t>(y));
    });
  }
}

KernelFactory pow_factory() {
  return binary_factory([](const KernelInitContext&) -> BinaryBody {
    return [](KernelContext& ctx, const Tensor& a, const Tensor& b, const Shape& os) {
      Tensor& o = ctx.allocate_output(0, a.dtype(), os);
      dispatch_numeric(a.dtype(), [&](auto ta) {
        using T = typename decltype(ta)::type;
        dispatch_numeric(b.dtype(), [&](auto tb) { pow_typed<T, typename decltype(tb)::type>(a, b, o); });
      });
    };
  });
}

// ---- Mod

template <class T>
void mod_typed(const Tensor& a, const Tensor& b, Tensor& o, bool fmod) {
  if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
    using C = Compute<T>;
    if (fmod) {
      map_binary<T, T, T>(a, b, o, [](T x, T y) { return T(std::fmod(static_cast<C>(x), static_cast<C>(y))); });
    } else {
      map_binary<T, T, T>(a, b, o, [](T xt, T yt) {
        C x = static_cast<C>(xt), y = static_cast<C>(yt);
        C r = std::fmod(x, y);
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        if (r == 0) r = std::copysign(C(0), y);  // Mod-28: a zero result takes the sign of y
        return T(r);
      });
    }
  } else {
    map_binary<T, T, T>(a, b, o, [fmod](T x, T y) -> T {
      if (y == 0) kernel_fail("Mod: integer division by zero");
      if constexpr (std::is_signed_v<T>) {
        if (y == -1) return 0;
        T r = static_cast<T>(x % y);
        if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
        return r;
      } else {
        return static_cast<T>(x % y);
      }
    });
  }
}

KernelFactory mod_factory() {
  return binary_factory([](const KernelInitContext& ic) -> BinaryBody {
    bool fmod = ic.get_int("fmod", 0) != 0;
    return [fmod](KernelContext& ctx, const Tensor& a, const Tensor& b, const Shape& os) {
      check_same_type(a, b);
      Tensor& o = ctx.allocate_output(0, a.dtype(), os);
      dispatch_numeric(a.dtype(), [&](auto tag) { mod_typed<typename decltype(tag)::type>(a, b, o, fmod); });
    };
  });
}

// ---- BitShift and bitwise ops (integers)

KernelFactory bitshift_factory() {
  return binary_factory([](const KernelInitContext& ic) -> BinaryBody {
    std::string dir = ic.get_string("direction", "");
    if (dir != "LEFT" && dir != "RIGHT") kernel_fail("BitShift: direction must be LEFT or RIGHT, got '" + dir + "'");
    bool left = dir == "LEFT";
    return [left](KernelContext& ctx, const Tensor& a, const Tensor& b, const Shape& os) {
      check_same_type(a, b);
      Tensor& o = ctx.allocate_output(0, a.dtype(), os);
      dispatch_int(a.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using U = std::make_unsigned_t<T>;
        constexpr U bits = sizeof(T) * 8;
        if (left)
          map_binary<T, T, T>(a, b, o, [](T x, T y) -> T {
            U s = static_cast<U>(y);
            return s >= bits ? T(0) : static_cast<T>(static_cast<Wide<T>>(static_cast<U>(x)) << s);
          });
        else  // BitShift-28: signed types shift arithmetically; a shift out of range leaves the sign fill
          map_binary<T, T, T>(a, b, o, [](T x, T y) -> T {
            U s = static_cast<U>(y);
            if constexpr (std::is_signed_v<T>) {
              if (y < 0 || s >= bits) return x < 0 ? T(-1) : T(0);
              return static_cast<T>(x >> s);
            } else {
              return s >= bits ? T(0) : static_cast<T>(x >> s);
            }
          });
      });
    };
  });
}

enum class Bits { And, Or, Xor };

template <Bits OP>
KernelFactory bitwise_factory() {
  return binary_factory([](const KernelInitContext&) -> BinaryBody {
    return [](KernelContext& ctx, const Tensor& a, const Tensor& b, const Shape& os) {
      check_same_type(a, b);
      Tensor& o = ctx.allocate_output(0, a.dtype(), os);
      auto body = [&](auto tag) {
        using T = typename decltype(tag)::type;
        map_binary<T, T, T>(a, b, o, [](T x, T y) -> T {
          if constexpr (OP == Bits::And) return static_cast<T>(x & y);
          else if constexpr (OP == Bits::Or) return static_cast<T>(x | y);
          else return static_cast<T>(x ^ y);
        });
      };
      if (a.dtype() == DataType::Bool) body(TypeTag<bool>{});
      else dispatch_int(a.dtype(), body);
    };
  });
}

// ---- Comparisons (output bool)

enum class Cmp { Eq, Lt, Le, Gt, Ge };

template <Cmp OP, class X>
bool compare(const X& x, const X& y) {
  if constexpr (OP == Cmp::Eq) return x == y;
  else if constexpr (OP == Cmp::Lt) return x < y;
  else if constexpr (OP == Cmp::Le) return x <= y;
  else if constexpr (OP == Cmp::Gt) return x > y;
  else return x >= y;
}

template <Cmp OP>
KernelFactory compare_factory() {
  return binary_factory([](const KernelInitContext&) -> BinaryBody {
    return [](KernelContext& ctx, const Tensor& a, const Tensor& b, const Shape& os) {
      check_same_type(a, b);
      Tensor& o = ctx.allocate_output(0, DataType::Bool, os);
      dispatch_all(a.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, std::string>) {
          ew::map_binary_raw<T, T, bool>(a.data<T>(), a.shape(), b.data<T>(), b.shape(), o.data<bool>(), os,
                                         [](const std::string& x, const std::string& y) { return compare<OP>(x, y); });
        } else {
          using C = Compute<T>;
          map_binary<T, T, bool>(a, b, o, [](T x, T y) { return compare<OP>(static_cast<C>(x), static_cast<C>(y)); });
        }
      });
    };
  });
}

// ---- Logic (bool)

template <Bits OP>
KernelFactory logic_factory() {
  return binary_factory([](const KernelInitContext&) -> BinaryBody {
    return [](KernelContext& ctx, const Tensor& a, const Tensor& b, const Shape& os) {
      if (a.dtype() != DataType::Bool || b.dtype() != DataType::Bool)
        kernel_fail("logical ops need bool inputs, got " + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
      Tensor& o = ctx.allocate_output(0, DataType::Bool, os);
      map_binary<bool, bool, bool>(a, b, o, [](bool x, bool y) -> bool {
        if constexpr (OP == Bits::And) return x && y;
        else if constexpr (OP == Bits::Or) return x || y;
        else return x != y;
      });
    };
  });
}

// ---------------------------------------------------------------------------
// Unary ops

// A unary op on float types: f takes and returns the compute type.
template <class F>
KernelFactory unary_float(F f) {
  return lambda_factory([f](const KernelInitContext&) {
    return [f](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      dispatch_float(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        map_unary<T, T>(x, y, [f](T v) -> T { return T(f(static_cast<Compute<T>>(v))); });
      });
    };
  });
}

// A unary op on every numeric type: f is generic over the compute type.
template <class F>
KernelFactory unary_numeric(F f) {
  return lambda_factory([f](const KernelInitContext&) {
    return [f](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      dispatch_numeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        map_unary<T, T>(x, y, [f](T v) -> T { return T(f(static_cast<Compute<T>>(v))); });
      });
    };
  });
}

// Erf takes every numeric type since opset 9; integers get the float erf(x)
// converted back to their type, as the spec's reference does (0 up to
// |x| = 3, where float erf first rounds to 1, else the sign). Floats keep the
// vectorized routine.
KernelFactory erf_factory() {
  KernelFactory on_floats = vector_act(vm::erf, [](const KernelInitContext&) { return [](auto v) { return std::erf(v); }; });
  return [on_floats](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
    std::shared_ptr<const Kernel> float_kernel = on_floats(ic);
    return std::make_unique<LambdaKernel>([float_kernel](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      if (dtype_is_float(x.dtype())) return float_kernel->run(ctx);
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      dispatch_numeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        map_unary<T, T>(x, y, [](T v) { return static_cast<T>(std::erf(static_cast<float>(v))); });
      });
    });
  };
}

struct AbsOp {
  template <class C>
  C operator()(C v) const {
    if constexpr (std::is_floating_point_v<C>) return std::fabs(v);
    else if constexpr (std::is_unsigned_v<C>) return v;
    else return v < 0 ? static_cast<C>(Wide<C>(0) - Wide<C>(v)) : v;
  }
};
struct NegOp {
  template <class C>
  C operator()(C v) const {
    if constexpr (std::is_floating_point_v<C>) return -v;
    else return static_cast<C>(Wide<C>(0) - Wide<C>(v));
  }
};
struct SignOp {
  template <class C>
  C operator()(C v) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(v)) return v;
    }
    return static_cast<C>(v > C(0) ? 1 : (v < C(0) ? -1 : 0));
  }
};

KernelFactory bool_unary_factory() {  // Not
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      if (x.dtype() != DataType::Bool) kernel_fail("Not needs a bool input, got " + dtype_name(x.dtype()));
      Tensor& y = ctx.allocate_output(0, DataType::Bool, x.shape());
      map_unary<bool, bool>(x, y, [](bool v) { return !v; });
    };
  });
}

KernelFactory bitwise_not_factory() {
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      if (x.dtype() == DataType::Bool) {
        map_unary<bool, bool>(x, y, [](bool v) { return !v; });
        return;
      }
      dispatch_int(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        map_unary<T, T>(x, y, [](T v) { return static_cast<T>(~v); });
      });
    };
  });
}

KernelFactory isnan_factory() {
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, DataType::Bool, x.shape());
      dispatch_float(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        map_unary<T, bool>(x, y, [](T v) { return std::isnan(static_cast<Compute<T>>(v)); });
      });
    };
  });
}

KernelFactory isinf_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    bool neg = ic.get_int("detect_negative", 1) != 0;
    bool pos = ic.get_int("detect_positive", 1) != 0;
    return [neg, pos](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, DataType::Bool, x.shape());
      dispatch_float(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        map_unary<T, bool>(x, y, [neg, pos](T t) {
          auto v = static_cast<Compute<T>>(t);
          return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
        });
      });
    };
  });
}

// ---------------------------------------------------------------------------
// Variadic Min / Max / Sum / Mean

enum class Nary { Min, Max, Sum, Mean };

template <Nary OP, class T>
T nary_step(T xt, T yt) {
  using C = Compute<T>;
  C x = static_cast<C>(xt), y = static_cast<C>(yt);
  if constexpr (OP == Nary::Min || OP == Nary::Max) {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return xt;
    }
    if constexpr (OP == Nary::Min) return x <= y ? xt : yt;
    else return x >= y ? xt : yt;
  } else {
    if constexpr (std::is_floating_point_v<C>) return T(x + y);
    else return static_cast<T>(Wide<T>(x) + Wide<T>(y));
  }
}

template <Nary OP>
KernelFactory nary_factory() {
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      size_t n = ctx.num_inputs();
      if (n == 0) kernel_fail("needs at least one input");
      std::vector<const Tensor*> ins;
      std::vector<Shape> shapes;
      for (size_t i = 0; i < n; ++i) {
        ins.push_back(&ctx.input(i));
        shapes.push_back(ins.back()->shape());
        if (ins.back()->dtype() != ins[0]->dtype())
          kernel_fail("inputs have different element types " + dtype_name(ins[0]->dtype()) + " and " +
                      dtype_name(ins.back()->dtype()));
      }
      Shape os = broadcast_shapes(shapes);
      DataType dt = ins[0]->dtype();
      auto body = [&](auto tag) {
        using T = typename decltype(tag)::type;
        Tensor& out = ctx.allocate_output(0, dt, os);
        if (n == 1) {
          std::memcpy(out.raw(), ins[0]->raw(), out.nbytes());
        } else {
          // Fold left; intermediate results go to a scratch tensor of the
          // output shape, alternating so no step reads what it writes.
          Tensor cur = *ins[0];
          Tensor scratch;
          for (size_t k = 1; k < n; ++k) {
            Shape s = broadcast_shapes({cur.shape(), ins[k]->shape()});
            bool last = k + 1 == n;
            Tensor dst;
            if (last) {
              dst = out;
            } else {
              dst = Tensor(dt, s);
            }
            // The last step must produce the full output shape.
            if (last && s != os) kernel_fail("internal: broadcast shape mismatch");
            map_binary<T, T, T>(cur, *ins[k], dst, [](T x, T y) { return nary_step<OP, T>(x, y); });
            cur = dst;
          }
          (void)scratch;
        }
        if constexpr (OP == Nary::Mean) {
          using C = Compute<T>;
          T* p = out.data<T>();
          int64_t m = out.numel();
          C inv = static_cast<C>(n);
          for (int64_t i = 0; i < m; ++i) p[i] = T(static_cast<C>(p[i]) / inv);
        }
      };
      if constexpr (OP == Nary::Mean) dispatch_float(dt, body);
      else dispatch_numeric(dt, body);
    };
  });
}

// ---------------------------------------------------------------------------
// Where

KernelFactory where_factory() {
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      const Tensor& c = ctx.input(0);
      const Tensor& x = ctx.input(1);
      const Tensor& y = ctx.input(2);
      if (c.dtype() != DataType::Bool) kernel_fail("Where: condition must be bool, got " + dtype_name(c.dtype()));
      check_same_type(x, y);
      Shape os = broadcast_shapes({c.shape(), x.shape(), y.shape()});
      Tensor& o = ctx.allocate_output(0, x.dtype(), os);
      int64_t n = shape_numel(os);
      if (n == 0) return;
      dispatch_by_size(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const uint8_t* pc = reinterpret_cast<const uint8_t*>(c.data<bool>());
        const T* px = x.data<T>();
        const T* py = y.data<T>();
        T* po = o.data<T>();
        // Both values are read before the select so the loop has no
        // data-dependent branch (a random mask mispredicted half the time)
        // and vectorizes; the mask is read as bytes (GCC finds no vector type
        // for bool). Broadcasting walks rows of the last dim.
        auto row = [](const uint8_t* rc, const T* rx, const T* ry, T* ro, int64_t len, int64_t sc, int64_t sx,
                      int64_t sy) {
          // strides 0 or 1, as compile-time constants so each form vectorizes
          auto run = [&](auto SC, auto SX, auto SY) {
            for (int64_t i = 0; i < len; ++i) {
              const T a = rx[i * SX], b = ry[i * SY];
              ro[i] = rc[i * SC] ? a : b;
            }
          };
          using Z = std::integral_constant<int64_t, 0>;
          using O = std::integral_constant<int64_t, 1>;
          auto with_y = [&](auto SC, auto SX) { sy ? run(SC, SX, O{}) : run(SC, SX, Z{}); };
          auto with_x = [&](auto SC) { sx ? with_y(SC, O{}) : with_y(SC, Z{}); };
          sc ? with_x(O{}) : with_x(Z{});
        };
        if (c.shape() == os && x.shape() == os && y.shape() == os) {
          for (int64_t i = 0; i < n; ++i) {
            const T a = px[i], b = py[i];
            po[i] = pc[i] ? a : b;
          }
          return;
        }
        const int rank = static_cast<int>(os.size());
        auto sc = broadcast_strides(c.shape(), os), sx = broadcast_strides(x.shape(), os),
             sy = broadcast_strides(y.shape(), os);
        const int64_t inner = rank ? os[rank - 1] : 1;
        std::vector<int64_t> idx(rank, 0);
        int64_t oc = 0, ox = 0, oy = 0;
        for (int64_t r = 0; r < n / inner; ++r) {
          row(pc + oc, px + ox, py + oy, po + r * inner, inner, rank ? sc[rank - 1] : 0, rank ? sx[rank - 1] : 0,
              rank ? sy[rank - 1] : 0);
          for (int d = rank - 2; d >= 0; --d) {  // next row
            ++idx[d];
            oc += sc[d], ox += sx[d], oy += sy[d];
            if (idx[d] < os[d]) break;
            oc -= sc[d] * os[d], ox -= sx[d] * os[d], oy -= sy[d] * os[d];
            idx[d] = 0;
          }
        }
      });
    };
  });
}

float round_half_even(float v) { return std::nearbyint(v); }
double round_half_even(double v) { return std::nearbyint(v); }

}  // namespace

void register_elementwise(KernelRegistry& r) {
  // Binary arithmetic (legacy broadcast/axis handled for opset < 7).
  r.add("Add", 1, kMaxOpset, arith_factory<Arith::Add>());
  r.add("Sub", 1, kMaxOpset, arith_factory<Arith::Sub>());
  r.add("Mul", 1, kMaxOpset, arith_factory<Arith::Mul>());
  r.add("Div", 1, kMaxOpset, arith_factory<Arith::Div>());
  r.add("Pow", 1, kMaxOpset, pow_factory());
  // Both checked against their opset-28 revisions (Mod's float special cases,
  // BitShift on signed types).
  r.add("Mod", 10, 28, mod_factory());
  r.add("BitShift", 11, 28, bitshift_factory());
  // Bitwise ops are opset 18; registered from 1 so they are available.
  r.add("BitwiseAnd", 1, kMaxOpset, bitwise_factory<Bits::And>());
  r.add("BitwiseOr", 1, kMaxOpset, bitwise_factory<Bits::Or>());
  r.add("BitwiseXor", 1, kMaxOpset, bitwise_factory<Bits::Xor>());
  r.add("BitwiseNot", 1, kMaxOpset, bitwise_not_factory());

  r.add("Equal", 1, kMaxOpset, compare_factory<Cmp::Eq>());
  r.add("Less", 1, kMaxOpset, compare_factory<Cmp::Lt>());
  r.add("LessOrEqual", 12, kMaxOpset, compare_factory<Cmp::Le>());
  r.add("Greater", 1, kMaxOpset, compare_factory<Cmp::Gt>());
  r.add("GreaterOrEqual", 12, kMaxOpset, compare_factory<Cmp::Ge>());

  r.add("And", 1, kMaxOpset, logic_factory<Bits::And>());
  r.add("Or", 1, kMaxOpset, logic_factory<Bits::Or>());
  r.add("Xor", 1, kMaxOpset, logic_factory<Bits::Xor>());
  r.add("Not", 1, kMaxOpset, bool_unary_factory());

  // Unary math on float types.
  r.add("Sqrt", 1, kMaxOpset, unary_float([](auto v) { return std::sqrt(v); }));
  r.add("Exp", 1, kMaxOpset,
        vector_act(vm::exp, [](const KernelInitContext&) { return [](auto v) { return std::exp(v); }; }));
  r.add("Log", 1, kMaxOpset,
        vector_act(vm::log, [](const KernelInitContext&) { return [](auto v) { return std::log(v); }; }));
  r.add("Reciprocal", 1, kMaxOpset, unary_float([](auto v) { return decltype(v)(1) / v; }));
  r.add("Floor", 1, kMaxOpset,
        vector_act(vm::floor, [](const KernelInitContext&) { return [](auto v) { return std::floor(v); }; }));
  r.add("Ceil", 1, kMaxOpset,
        vector_act(vm::ceil, [](const KernelInitContext&) { return [](auto v) { return std::ceil(v); }; }));
  r.add("Round", 11, kMaxOpset, vector_act(vm::round_even, [](const KernelInitContext&) {
          return [](auto v) { return round_half_even(v); };
        }));
  r.add("Erf", 9, kMaxOpset, erf_factory());
  r.add("Sin", 7, kMaxOpset,
        vector_act(vm::sin, [](const KernelInitContext&) { return [](auto v) { return std::sin(v); }; }));
  r.add("Cos", 7, kMaxOpset,
        vector_act(vm::cos, [](const KernelInitContext&) { return [](auto v) { return std::cos(v); }; }));
  r.add("Tan", 7, kMaxOpset, unary_float([](auto v) { return std::tan(v); }));
  r.add("Asin", 7, kMaxOpset, unary_float([](auto v) { return std::asin(v); }));
  r.add("Acos", 7, kMaxOpset, unary_float([](auto v) { return std::acos(v); }));
  r.add("Atan", 7, kMaxOpset,
        vector_act(vm::atan, [](const KernelInitContext&) { return [](auto v) { return std::atan(v); }; }));
  r.add("Sinh", 9, kMaxOpset, unary_float([](auto v) { return std::sinh(v); }));
  r.add("Cosh", 9, kMaxOpset, unary_float([](auto v) { return std::cosh(v); }));
  r.add("Asinh", 9, kMaxOpset, unary_float([](auto v) { return std::asinh(v); }));
  r.add("Acosh", 9, kMaxOpset, unary_float([](auto v) { return std::acosh(v); }));
  r.add("Atanh", 9, kMaxOpset, unary_float([](auto v) { return std::atanh(v); }));
  r.add("IsNaN", 9, kMaxOpset, isnan_factory());
  r.add("IsInf", 10, kMaxOpset, isinf_factory());

  // Unary on every numeric type.
  r.add("Abs", 1, kMaxOpset, unary_numeric(AbsOp{}));
  r.add("Neg", 1, kMaxOpset, unary_numeric(NegOp{}));
  r.add("Sign", 9, kMaxOpset, unary_numeric(SignOp{}));

  r.add("Min", 1, kMaxOpset, nary_factory<Nary::Min>());
  r.add("Max", 1, kMaxOpset, nary_factory<Nary::Max>());
  r.add("Sum", 1, kMaxOpset, nary_factory<Nary::Sum>());
  r.add("Mean", 1, kMaxOpset, nary_factory<Nary::Mean>());

  r.add("Where", 9, kMaxOpset, where_factory());
}

}  // namespace onyx
