// Cast and CastLike between every numeric type, bool, float16, bfloat16 and
// string. Numbers become strings the way numpy prints them (shortest
// round-trip digits: 1.5 -> "1.5", 1e-05 -> "1e-05", 3.0 -> "3.0"; NaN and
// infinities as the spec's literals "NaN", "INF", "-INF"); strings parse as
// decimal or scientific numbers, case-insensitive "NaN", "INF", "+INF", "-INF".
// Float -> integer conversions follow what numpy does on x86 (truncation,
// the "integer indefinite" value for NaN / out-of-range) without UB.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "cpu/cpu_provider.h"
#include "cpu/half_convert.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

template <class T>
inline constexpr bool is_floatlike_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// ---- numbers -> strings

// Formats value = d.ddd x 10^exp10 (`digits` = "dddd") as numpy prints it.
std::string numpy_format(bool negative, const std::string& digits, int exp10, double magnitude) {
  std::string s = negative ? "-" : "";
  if (magnitude == 0.0) return s + "0.0";
  if (magnitude < 1e-4 || magnitude >= 1e16) {
    s += digits[0];
    if (digits.size() > 1) s += "." + digits.substr(1);
    char buf[16];
    std::snprintf(buf, sizeof buf, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    return s + buf;
  }
  if (exp10 >= 0) {
    std::string ip = digits.substr(0, std::min<size_t>(digits.size(), exp10 + 1));
    while (static_cast<int>(ip.size()) < exp10 + 1) ip += '0';
    std::string fp = digits.size() > static_cast<size_t>(exp10 + 1) ? digits.substr(exp10 + 1) : "0";
    return s + ip + "." + fp;
  }
  return s + "0." + std::string(-exp10 - 1, '0') + digits;
}

// Splits a scientific-notation string "d.ddde+XX" into digits and exponent.
void split_scientific(const char* p, const char* end, std::string& digits, int& exp10) {
  digits.clear();
  while (p < end && *p != 'e' && *p != 'E') {
    if (*p >= '0' && *p <= '9') digits += *p;
    ++p;
  }
  exp10 = 0;
  if (p < end) {
    ++p;
    bool neg = p < end && *p == '-';
    if (p < end && (*p == '-' || *p == '+')) ++p;
    for (; p < end && *p >= '0' && *p <= '9'; ++p) exp10 = exp10 * 10 + (*p - '0');
    if (neg) exp10 = -exp10;
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
}

template <class T>
std::string float_to_string(T value) {
  double d = static_cast<double>(static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(value));
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "INF" : "-INF";
  bool neg = std::signbit(d);
  std::string digits;
  int exp10 = 0;
  char buf[64];
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    auto res = std::to_chars(buf, buf + sizeof buf, value < 0 ? -value : value, std::chars_format::scientific);
    split_scientific(buf, res.ptr, digits, exp10);
  } else {
    // 16-bit floats: the fewest significant digits that read back to the same value.
    float f = std::fabs(static_cast<float>(value));
    for (int prec = 0; prec < 9; ++prec) {
      int n = std::snprintf(buf, sizeof buf, "%.*e", prec, static_cast<double>(f));
      if (T(std::strtof(buf, nullptr)).bits == T(f).bits || prec == 8) {
        split_scientific(buf, buf + n, digits, exp10);
        break;
      }
    }
  }
  return numpy_format(neg, digits, exp10, std::fabs(d));
}

template <class S>
std::string to_string_value(const S& v) {
  if constexpr (std::is_same_v<S, std::string>) return v;
  else if constexpr (std::is_same_v<S, bool>) return v ? "True" : "False";
  else if constexpr (is_floatlike_v<S>) return float_to_string(v);
  else if constexpr (std::is_signed_v<S>) return std::to_string(static_cast<int64_t>(v));
  else return std::to_string(static_cast<uint64_t>(v));
}

// ---- floats -> integers (x86/numpy semantics, no UB)

template <class D>
D float_to_int(double v) {
  double t = std::trunc(v);
  constexpr double two31 = 2147483648.0, two63 = 9223372036854775808.0;
  if constexpr (std::is_same_v<D, uint64_t>) {
    if (t >= two63 && t < 2 * two63) return static_cast<uint64_t>(t);
  }
  if constexpr (sizeof(D) <= 4 && !std::is_same_v<D, uint32_t>) {
    int32_t i = (t >= -two31 && t < two31) ? static_cast<int32_t>(t) : std::numeric_limits<int32_t>::min();
    return static_cast<D>(i);
  } else {
    int64_t i = (t >= -two63 && t < two63) ? static_cast<int64_t>(t) : std::numeric_limits<int64_t>::min();
    return static_cast<D>(i);
  }
}

// ---- strings -> numbers

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

double parse_double(const std::string& raw) {
  std::string s = trimmed(raw);
  if (s.empty()) kernel_fail("Cast: cannot convert an empty string to a number");
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);  // handles inf, infinity, nan in any case, with sign
  if (end != s.c_str() + s.size()) kernel_fail("Cast: cannot convert string '" + raw + "' to a number");
  return v;
}

template <class D>
D parse_value(const std::string& raw) {
  if constexpr (std::is_same_v<D, std::string>) {
    return raw;
  } else if constexpr (std::is_same_v<D, bool>) {
    std::string s = trimmed(raw);
    std::string low;
    for (char c : s) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (low == "true") return true;
    if (low == "false") return false;
    return parse_double(raw) != 0.0;
  } else if constexpr (is_floatlike_v<D>) {
    if constexpr (std::is_same_v<D, float>) {
      std::string s = trimmed(raw);
      if (s.empty()) kernel_fail("Cast: cannot convert an empty string to a number");
      char* end = nullptr;
      float v = std::strtof(s.c_str(), &end);
      if (end != s.c_str() + s.size()) kernel_fail("Cast: cannot convert string '" + raw + "' to a number");
      return v;
    } else if constexpr (std::is_same_v<D, double>) {
      return parse_double(raw);
    } else {
      return D(static_cast<float>(parse_double(raw)));
    }
  } else {
    // Integers: exact when the string is an integer literal, else through double.
    std::string s = trimmed(raw);
    if (!s.empty()) {
      const char* b = s.c_str();
      if (*b == '+') ++b;
      const char* e = s.c_str() + s.size();
      if constexpr (std::is_signed_v<D>) {
        int64_t v;
        auto r = std::from_chars(b, e, v);
        if (r.ec == std::errc() && r.ptr == e) return static_cast<D>(v);
      } else {
        uint64_t v;
        auto r = std::from_chars(b, e, v);
        if (r.ec == std::errc() && r.ptr == e) return static_cast<D>(v);
        int64_t sv;
        auto r2 = std::from_chars(b, e, sv);
        if (r2.ec == std::errc() && r2.ptr == e) return static_cast<D>(sv);
      }
    }
    return float_to_int<D>(parse_double(raw));
  }
}

// ---- the conversion matrix

template <class S, class D>
D convert(const S& v) {
  if constexpr (std::is_same_v<S, D>) return v;
  else if constexpr (std::is_same_v<D, std::string>) return to_string_value(v);
  else if constexpr (std::is_same_v<S, std::string>) return parse_value<D>(v);
  else if constexpr (std::is_same_v<D, bool>) {
    if constexpr (is_floatlike_v<S>) return static_cast<float>(v) != 0.0f || std::isnan(static_cast<float>(v));
    else return v != 0;
  } else if constexpr (std::is_same_v<S, bool>) {
    if constexpr (is_floatlike_v<D>) return D(v ? 1.0f : 0.0f);
    else return static_cast<D>(v ? 1 : 0);
  } else if constexpr (is_floatlike_v<D>) {
    if constexpr (std::is_same_v<D, double>) {
      if constexpr (std::is_same_v<S, Float16> || std::is_same_v<S, BFloat16>) return static_cast<double>(static_cast<float>(v));
      else return static_cast<double>(v);
    } else if constexpr (std::is_same_v<D, float>) {
      return static_cast<float>(v);
    } else if constexpr (std::is_same_v<S, double> || std::is_same_v<S, float>) {
      return D(static_cast<float>(v));
    } else if constexpr (std::is_same_v<S, Float16> || std::is_same_v<S, BFloat16>) {
      return D(static_cast<float>(v));
    } else {
      return D(static_cast<float>(v));  // integers: rounded through float
    }
  } else if constexpr (is_floatlike_v<S>) {
    if constexpr (std::is_same_v<S, double>) return float_to_int<D>(v);
    else return float_to_int<D>(static_cast<double>(static_cast<float>(v)));
  } else {
    return static_cast<D>(v);  // integer -> integer: two's complement wrap
  }
}

// How a cast to a float8 type treats out-of-range values, and how a cast to
// float8e8m0 rounds (Cast-24's `saturate` and `round_mode`).
struct CastMode {
  bool saturate = true;
  E8M0Round round = E8M0Round::Up;
};

bool is_narrow(DataType t) { return dtype_is_small_float(t) || dtype_is_small_int(t); }

void cast_tensor(const Tensor& x, Tensor& y, const CastMode& mode = {});

// Casts from or to the narrow types (float8, float4, float6, int4, int2 and the
// unsigned ones), which live one element per byte: small floats go through
// float (exact), small integers are int8/uint8 values already.
void cast_narrow(const Tensor& x, Tensor& y, const CastMode& mode) {
  Tensor src = x;
  DataType xt = x.dtype();
  if (dtype_is_small_float(xt)) {
    src = Tensor(DataType::Float, x.shape());
    const uint8_t* in = static_cast<const uint8_t*>(x.raw());
    for (int64_t i = 0; i < x.numel(); ++i) src.data<float>()[i] = small_float_to_float(xt, in[i]);
  } else if (dtype_is_small_int(xt)) {
    DataType as = (xt == DataType::Int4 || xt == DataType::Int2) ? DataType::Int8 : DataType::UInt8;
    src = Tensor::wrap(as, x.shape(), const_cast<void*>(x.raw()), x.holder());
  }
  DataType yt = y.dtype();
  if (!is_narrow(yt)) {
    cast_tensor(src, y, mode);
    return;
  }
  uint8_t* out = static_cast<uint8_t*>(y.raw());
  DataType st = src.dtype();
  bool from_string = st == DataType::String, from_float = dtype_is_float(st);
  for (int64_t i = 0; i < src.numel(); ++i) {
    if (dtype_is_small_float(yt)) {
      float f = from_string ? static_cast<float>(parse_double(src.data<std::string>()[i])) : static_cast<float>(src.float_at(i));
      out[i] = yt == DataType::Float8E8M0 ? float_to_e8m0(f, mode.saturate, mode.round)
                                          : float_to_small_float(yt, f, mode.saturate);
    } else {
      // Integers keep their low bits (two's complement), as Cast does for any
      // narrowing integer conversion; floats truncate first.
      int64_t v = from_string ? parse_value<int64_t>(src.data<std::string>()[i])
                  : from_float ? float_to_int<int64_t>(src.float_at(i))
                               : src.int_at(i);
      int bits = dtype_bits(yt);
      uint64_t mask = (uint64_t{1} << bits) - 1;
      uint64_t u = static_cast<uint64_t>(v) & mask;
      if ((yt == DataType::Int4 || yt == DataType::Int2) && (u >> (bits - 1))) u |= ~mask;
      out[i] = static_cast<uint8_t>(u);
    }
  }
}

void cast_tensor(const Tensor& x, Tensor& y, const CastMode& mode) {
  int64_t n = x.numel();
  if (x.dtype() == y.dtype()) {
    if (x.dtype() == DataType::String) {
      for (int64_t i = 0; i < n; ++i) y.data<std::string>()[i] = x.data<std::string>()[i];
    } else if (n) {
      std::memcpy(y.raw(), x.raw(), x.nbytes());
    }
    return;
  }
  if (is_narrow(x.dtype()) || is_narrow(y.dtype())) {
    cast_narrow(x, y, mode);
    return;
  }
  if (x.dtype() == DataType::Float && y.dtype() == DataType::Float16) {
    floats_to_halves(x.data<float>(), reinterpret_cast<uint16_t*>(y.raw()), n);
    return;
  }
  if (x.dtype() == DataType::Float16 && y.dtype() == DataType::Float) {
    halves_to_floats(reinterpret_cast<const uint16_t*>(x.raw()), y.data<float>(), n);
    return;
  }
  dispatch_all(x.dtype(), [&](auto st) {
    using S = typename decltype(st)::type;
    dispatch_all(y.dtype(), [&](auto dt) {
      using D = typename decltype(dt)::type;
      const S* in = x.data<S>();
      D* out = y.data<D>();
      for (int64_t i = 0; i < n; ++i) out[i] = convert<S, D>(in[i]);
    });
  });
}

DataType checked_type(int64_t to) {
  switch (static_cast<DataType>(to)) {
    case DataType::Float: case DataType::Double: case DataType::Float16: case DataType::BFloat16:
    case DataType::Int8: case DataType::Int16: case DataType::Int32: case DataType::Int64:
    case DataType::UInt8: case DataType::UInt16: case DataType::UInt32: case DataType::UInt64:
    case DataType::Bool: case DataType::String:
    case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ: case DataType::Float8E8M0: case DataType::Float4E2M1:
    case DataType::Float6E2M3: case DataType::Float6E3M2:
    case DataType::Int4: case DataType::UInt4: case DataType::Int2: case DataType::UInt2:
      return static_cast<DataType>(to);
    default:
      kernel_fail("Cast: unsupported target type " + std::to_string(to));
  }
}

CastMode cast_mode(const KernelInitContext& ic) {
  CastMode m;
  m.saturate = ic.get_int("saturate", 1) != 0;
  std::string round = ic.get_string("round_mode", "up");
  if (round == "up") m.round = E8M0Round::Up;
  else if (round == "down") m.round = E8M0Round::Down;
  else if (round == "nearest") m.round = E8M0Round::Nearest;
  else kernel_fail("Cast: round_mode must be 'up', 'down' or 'nearest', got '" + round + "'");
  return m;
}

KernelFactory cast_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    DataType to = checked_type(ic.get_int("to"));
    CastMode mode = cast_mode(ic);
    return [to, mode](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, to, x.shape());
      cast_tensor(x, y, mode);
    };
  });
}

KernelFactory castlike_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    CastMode mode = cast_mode(ic);
    return [mode](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      DataType to = checked_type(static_cast<int64_t>(ctx.input(1).dtype()));
      Tensor& y = ctx.allocate_output(0, to, x.shape());
      cast_tensor(x, y, mode);
    };
  });
}

// BitCast-26: the same bits read as another type of the same width. The narrow
// types are one byte per element in memory, so their codes are masked and
// sign-extended as the target needs.
KernelFactory bitcast_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    int64_t to_attr = ic.get_int("to");
    if (to_attr <= 0 || to_attr > static_cast<int64_t>(kLastDataType) || to_attr == static_cast<int64_t>(DataType::String))
      kernel_fail("BitCast: unsupported target type " + std::to_string(to_attr));
    DataType to = static_cast<DataType>(to_attr);
    return [to](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      if (x.dtype() == DataType::String) kernel_fail("BitCast: string tensors cannot be bitcast");
      if (dtype_bits(x.dtype()) != dtype_bits(to))
        kernel_fail("BitCast: " + dtype_name(x.dtype()) + " (" + std::to_string(dtype_bits(x.dtype())) + " bits) and " +
                    dtype_name(to) + " (" + std::to_string(dtype_bits(to)) + " bits) differ in width");
      Tensor& y = ctx.allocate_output(0, to, x.shape());
      if (!x.numel()) return;
      if (dtype_bits(to) >= 8 && to != DataType::Bool) {
        std::memcpy(y.raw(), x.raw(), x.nbytes());
        return;
      }
      int bits = dtype_bits(to);
      uint32_t mask = (1u << bits) - 1;
      bool sign = to == DataType::Int4 || to == DataType::Int2;
      const uint8_t* in = static_cast<const uint8_t*>(x.raw());
      uint8_t* out = static_cast<uint8_t*>(y.raw());
      for (int64_t i = 0; i < x.numel(); ++i) {
        uint32_t v = in[i] & mask;
        if (to == DataType::Bool) v = v != 0;
        else if (sign && (v >> (bits - 1))) v |= ~mask;
        out[i] = static_cast<uint8_t>(v);
      }
    };
  });
}

}  // namespace

void register_cast(KernelRegistry& r) {
  r.add("BitCast", 26, kMaxOpset, bitcast_factory());
  // Cast-1 took `to` as a string; from opset 6 it is the TensorProto type number.
  // Checked against the spec through Cast-28 (float8e8m0 and round_mode in 24,
  // int2/uint2 in 25, float6 in 28).
  r.add("Cast", 6, 28, cast_factory());
  r.add("Cast", 1, 5, lambda_factory([](const KernelInitContext& ic) {
          DataType to = DataType::Undefined;
          if (const Attribute* a = ic.node().attr("to"); a && a->type == AttrType::Int) {
            to = checked_type(a->i);
          } else {
            std::string name = ic.get_string("to", "");
            for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
            static const std::pair<const char*, DataType> names[] = {
                {"FLOAT", DataType::Float},   {"DOUBLE", DataType::Double}, {"FLOAT16", DataType::Float16},
                {"BFLOAT16", DataType::BFloat16}, {"INT8", DataType::Int8}, {"INT16", DataType::Int16},
                {"INT32", DataType::Int32},   {"INT64", DataType::Int64},   {"UINT8", DataType::UInt8},
                {"UINT16", DataType::UInt16}, {"UINT32", DataType::UInt32}, {"UINT64", DataType::UInt64},
                {"BOOL", DataType::Bool},     {"STRING", DataType::String}};
            for (auto& [n, t] : names)
              if (name == n) to = t;
            if (to == DataType::Undefined) kernel_fail("Cast: unknown target type '" + name + "'");
          }
          return [to](KernelContext& ctx) {
            const Tensor& x = ctx.input(0);
            Tensor& y = ctx.allocate_output(0, to, x.shape());
            cast_tensor(x, y);
          };
        }));
  r.add("CastLike", 15, 28, castlike_factory());
}

}  // namespace onyx
