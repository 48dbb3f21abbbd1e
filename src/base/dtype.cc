#include "onyx/dtype.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "onyx/status.h"

namespace onyx {

std::string dtype_name(DataType t) {
  switch (t) {
    case DataType::Undefined: return "undefined";
    case DataType::Float: return "float";
    case DataType::UInt8: return "uint8";
    case DataType::Int8: return "int8";
    case DataType::UInt16: return "uint16";
    case DataType::Int16: return "int16";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::String: return "string";
    case DataType::Bool: return "bool";
    case DataType::Float16: return "float16";
    case DataType::Double: return "double";
    case DataType::UInt32: return "uint32";
    case DataType::UInt64: return "uint64";
    case DataType::Complex64: return "complex64";
    case DataType::Complex128: return "complex128";
    case DataType::BFloat16: return "bfloat16";
    case DataType::Float8E4M3FN: return "float8e4m3fn";
    case DataType::Float8E4M3FNUZ: return "float8e4m3fnuz";
    case DataType::Float8E5M2: return "float8e5m2";
    case DataType::Float8E5M2FNUZ: return "float8e5m2fnuz";
    case DataType::UInt4: return "uint4";
    case DataType::Int4: return "int4";
    case DataType::Float4E2M1: return "float4e2m1";
    case DataType::Float8E8M0: return "float8e8m0";
    case DataType::UInt2: return "uint2";
    case DataType::Int2: return "int2";
    case DataType::Float6E2M3: return "float6e2m3";
    case DataType::Float6E3M2: return "float6e3m2";
  }
  return "type " + std::to_string(static_cast<int>(t));
}

bool dtype_is_float(DataType t) {
  return t == DataType::Float || t == DataType::Double || t == DataType::Float16 || t == DataType::BFloat16;
}
bool dtype_is_signed_int(DataType t) {
  return t == DataType::Int8 || t == DataType::Int16 || t == DataType::Int32 || t == DataType::Int64;
}
bool dtype_is_unsigned_int(DataType t) {
  return t == DataType::UInt8 || t == DataType::UInt16 || t == DataType::UInt32 || t == DataType::UInt64;
}

bool dtype_is_small_float(DataType t) {
  switch (t) {
    case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ: case DataType::Float8E8M0: case DataType::Float4E2M1:
    case DataType::Float6E2M3: case DataType::Float6E3M2: return true;
    default: return false;
  }
}
bool dtype_is_small_int(DataType t) {
  return t == DataType::Int4 || t == DataType::UInt4 || t == DataType::Int2 || t == DataType::UInt2;
}
int dtype_bits(DataType t) {
  switch (t) {
    case DataType::Int4: case DataType::UInt4: case DataType::Float4E2M1: return 4;
    case DataType::Int2: case DataType::UInt2: return 2;
    case DataType::Float6E2M3: case DataType::Float6E3M2: return 6;
    default: return static_cast<int>(dtype_size(t) * 8);
  }
}
int64_t small_int_min(DataType t) {
  return t == DataType::Int4 ? -8 : t == DataType::Int2 ? -2 : 0;
}
int64_t small_int_max(DataType t) {
  return t == DataType::Int4 ? 7 : t == DataType::UInt4 ? 15 : t == DataType::Int2 ? 1 : 3;
}

namespace {

// Layout of a small binary float: exponent and mantissa widths, bias, and how
// it spells NaN and infinity.
struct MiniFormat {
  int ebits, mbits, bias;
  enum Special { IEEE, FN, FNUZ, None } special;  // FN: S.1111.111 is NaN, no inf; FNUZ: 0x80 is NaN, no -0
};

MiniFormat mini_format(DataType t) {
  switch (t) {
    case DataType::Float8E4M3FN: return {4, 3, 7, MiniFormat::FN};
    case DataType::Float8E4M3FNUZ: return {4, 3, 8, MiniFormat::FNUZ};
    case DataType::Float8E5M2: return {5, 2, 15, MiniFormat::IEEE};
    case DataType::Float8E5M2FNUZ: return {5, 2, 16, MiniFormat::FNUZ};
    case DataType::Float4E2M1: return {2, 1, 1, MiniFormat::None};
    case DataType::Float6E2M3: return {2, 3, 1, MiniFormat::None};
    case DataType::Float6E3M2: return {3, 2, 3, MiniFormat::None};
    default: fail(ErrorCode::InvalidArgument, dtype_name(t) + " is not a small float type");
  }
}

// Largest finite value of a format.
double mini_max(const MiniFormat& f) {
  int emax = (1 << f.ebits) - 1 - f.bias;  // all-ones exponent
  int mmax = (1 << f.mbits) - 1;
  if (f.special == MiniFormat::IEEE) { emax -= 1; }         // all-ones exponent is inf/NaN
  else if (f.special == MiniFormat::FN) { mmax -= 1; }      // S.1111.111 is NaN
  return std::ldexp(1.0 + static_cast<double>(mmax) / (1 << f.mbits), emax);
}

}  // namespace

float small_float_to_float(DataType t, uint8_t code) {
  if (t == DataType::Float8E8M0) {
    if (code == 0xff) return std::numeric_limits<float>::quiet_NaN();
    return static_cast<float>(std::ldexp(1.0, static_cast<int>(code) - 127));
  }
  MiniFormat f = mini_format(t);
  int width = 1 + f.ebits + f.mbits;
  code &= static_cast<uint8_t>((1u << width) - 1);
  bool neg = (code >> (width - 1)) & 1;
  int e = (code >> f.mbits) & ((1 << f.ebits) - 1);
  int m = code & ((1 << f.mbits) - 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (f.special == MiniFormat::FNUZ && code == (1u << (width - 1))) return nan;
  if (f.special == MiniFormat::FN && e == (1 << f.ebits) - 1 && m == (1 << f.mbits) - 1) return neg ? -nan : nan;
  if (f.special == MiniFormat::IEEE && e == (1 << f.ebits) - 1) {
    if (m != 0) return neg ? -nan : nan;
    return neg ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }
  double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits)
                    : std::ldexp(1.0 + static_cast<double>(m) / (1 << f.mbits), e - f.bias);
  return static_cast<float>(neg ? -v : v);
}

uint8_t float_to_small_float(DataType t, float x, bool saturate) {
  if (t == DataType::Float8E8M0) return float_to_e8m0(x, saturate, E8M0Round::Up);
  MiniFormat f = mini_format(t);
  int width = 1 + f.ebits + f.mbits;
  uint8_t sign = std::signbit(x) ? static_cast<uint8_t>(1u << (width - 1)) : 0;
  uint8_t emask = static_cast<uint8_t>(((1u << f.ebits) - 1) << f.mbits);
  uint8_t mmask = static_cast<uint8_t>((1u << f.mbits) - 1);
  auto nan_code = [&]() -> uint8_t {
    switch (f.special) {
      case MiniFormat::FN: return sign | emask | mmask;
      case MiniFormat::FNUZ: return static_cast<uint8_t>(1u << (width - 1));
      case MiniFormat::IEEE: return sign | emask | static_cast<uint8_t>(1u << (f.mbits - 1));
      case MiniFormat::None: break;
    }
    return static_cast<uint8_t>(1u << (width - 1));  // no NaN: the negative-zero code, as ml_dtypes does
  };
  double maxv = mini_max(f);
  auto encode = [&](double a) -> uint8_t {  // a: a non-negative value of the format
    if (a == 0) return f.special == MiniFormat::FNUZ ? 0 : sign;
    int e;
    std::frexp(a, &e);  // a = frac * 2^e, frac in [0.5, 1)
    int exp = e - 1;    // a in [2^exp, 2^(exp+1))
    if (exp < 1 - f.bias)  // subnormal
      return sign | static_cast<uint8_t>(std::ldexp(a, f.bias - 1 + f.mbits));
    int m = static_cast<int>(std::ldexp(a, f.mbits - exp)) - (1 << f.mbits);
    return sign | static_cast<uint8_t>(((exp + f.bias) << f.mbits) | m);
  };
  auto max_code = [&]() { return encode(maxv); };
  if (std::isnan(x)) return nan_code();
  double a = std::fabs(static_cast<double>(x));
  if (std::isinf(x)) {
    if (saturate || f.special == MiniFormat::None) return max_code();
    if (f.special == MiniFormat::IEEE) return sign | emask;
    return nan_code();
  }
  // Round to nearest even at the format's precision (unbounded exponent range above).
  int e;
  std::frexp(a, &e);
  int exp = std::max(e - 1, 1 - f.bias);
  double q = std::ldexp(1.0, exp - f.mbits);  // the spacing of values near a
  double r = std::nearbyint(a / q) * q;
  if (r > maxv) {
    if (saturate || f.special == MiniFormat::None) return max_code();
    if (f.special == MiniFormat::IEEE) return sign | emask;
    return nan_code();
  }
  return encode(r);
}

uint8_t float_to_e8m0(float x, bool saturate, E8M0Round mode) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint32_t exp = (bits >> 23) & 0xff;
  uint32_t mant = bits & 0x7fffff;
  if (exp == 0xff) {
    if (std::isinf(x) && saturate) return 0xfe;  // the spec: Inf saturates to E8M0_MAX
    return 0xff;
  }
  bool up = false;
  switch (mode) {
    case E8M0Round::Up: up = mant != 0; break;
    case E8M0Round::Down: up = false; break;
    case E8M0Round::Nearest:  // ties (x = 1.5 * 2^k) round up
      up = (mant & 0x400000) && ((mant & 0x3fffff) || exp > 0);
      break;
  }
  if (up) {
    if (exp == 0xfe && saturate) return 0xfe;
    ++exp;
  }
  return static_cast<uint8_t>(exp);
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do { ++e; mant <<= 1; } while ((mant & 0x400) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return sign | 0x7e00;                // NaN
  if (absx >= 0x477ff000u) return sign | 0x7c00;               // overflow (after rounding) -> inf
  if (absx < 0x33000001u) return sign;                         // underflow to zero
  int exp = static_cast<int>(absx >> 23);
  uint32_t mant = absx & 0x7fffff;
  if (exp < 113) {  // subnormal half
    mant |= 0x800000;
    int shift = 126 - exp;  // 14 + (113 - exp) - 1
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return sign | static_cast<uint16_t>(half_mant);
  }
  uint32_t h = (static_cast<uint32_t>(exp - 112) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // may carry into the exponent: fine
  return sign | static_cast<uint16_t>(h);
}

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::Fail: return "Fail";
    case ErrorCode::InvalidArgument: return "InvalidArgument";
    case ErrorCode::NoSuchFile: return "NoSuchFile";
    case ErrorCode::NoModel: return "NoModel";
    case ErrorCode::InvalidGraph: return "InvalidGraph";
    case ErrorCode::InvalidProtobuf: return "InvalidProtobuf";
    case ErrorCode::NotImplemented: return "NotImplemented";
    case ErrorCode::RuntimeException: return "RuntimeException";
  }
  return "Fail";
}

}  // namespace onyx
