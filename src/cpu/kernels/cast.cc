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

void cast_tensor(const Tensor& x, Tensor& y) {
  int64_t n = x.numel();
  if (x.dtype() == y.dtype()) {
    if (x.dtype() == DataType::String) {
      for (int64_t i = 0; i < n; ++i) y.data<std::string>()[i] = x.data<std::string>()[i];
    } else if (n) {
      std::memcpy(y.raw(), x.raw(), x.nbytes());
    }
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
      return static_cast<DataType>(to);
    default:
      kernel_fail("Cast: unsupported target type " + std::to_string(to));
  }
}

KernelFactory cast_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    DataType to = checked_type(ic.get_int("to"));
    return [to](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, to, x.shape());
      cast_tensor(x, y);
    };
  });
}

KernelFactory castlike_factory() {
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      DataType to = checked_type(static_cast<int64_t>(ctx.input(1).dtype()));
      Tensor& y = ctx.allocate_output(0, to, x.shape());
      cast_tensor(x, y);
    };
  });
}

}  // namespace

void register_cast(KernelRegistry& r) {
  // Cast-1 took `to` as a string; from opset 6 it is the TensorProto type number.
  r.add("Cast", 6, kMaxOpset, cast_factory());
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
  r.add("CastLike", 15, kMaxOpset, castlike_factory());
}

}  // namespace onyx
