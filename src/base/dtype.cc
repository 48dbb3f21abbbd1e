#include "onyx/dtype.h"

#include <cmath>
#include <string>

#include "onyx/status.h"

namespace onyx {

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::Float: case DataType::Int32: case DataType::UInt32: return 4;
    case DataType::Double: case DataType::Int64: case DataType::UInt64: case DataType::Complex64: return 8;
    case DataType::Complex128: return 16;
    case DataType::Float16: case DataType::BFloat16: case DataType::Int16: case DataType::UInt16: return 2;
    case DataType::Int8: case DataType::UInt8: case DataType::Bool:
    case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ: case DataType::UInt4: case DataType::Int4: return 1;
    case DataType::String: return sizeof(std::string);
    case DataType::Undefined: return 0;
  }
  return 0;
}

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
