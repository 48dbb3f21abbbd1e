// Element types: the ONNX TensorProto.DataType numbering, their sizes and names,
// and the 16-bit float types as small value classes that convert through float.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace onyx {

enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
  Float6E2M3 = 27,
  Float6E3M2 = 28,
};

// Bytes per element (strings: sizeof(std::string)); inline: Tensor::data<T>() checks it.
inline size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::Float: case DataType::Int32: case DataType::UInt32: return 4;
    case DataType::Double: case DataType::Int64: case DataType::UInt64: case DataType::Complex64: return 8;
    case DataType::Complex128: return 16;
    case DataType::Float16: case DataType::BFloat16: case DataType::Int16: case DataType::UInt16: return 2;
    case DataType::Int8: case DataType::UInt8: case DataType::Bool:
    case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ: case DataType::UInt4: case DataType::Int4: case DataType::Float4E2M1:
    case DataType::Float8E8M0: case DataType::UInt2: case DataType::Int2: case DataType::Float6E2M3:
    case DataType::Float6E3M2: return 1;
    case DataType::String: return sizeof(std::string);
    case DataType::Undefined: return 0;
  }
  return 0;
}

constexpr DataType kLastDataType = DataType::Float6E3M2;

std::string dtype_name(DataType t);      // "float", "int64", ... as ONNX names them
bool dtype_is_float(DataType t);         // float, double, float16, bfloat16
bool dtype_is_signed_int(DataType t);
bool dtype_is_unsigned_int(DataType t);
inline bool dtype_is_int(DataType t) { return dtype_is_signed_int(t) || dtype_is_unsigned_int(t); }

// The narrow types. In memory each element takes one byte: int4/int2 hold the
// sign-extended value (as int8), uint4/uint2 the value (as uint8), the small
// floats (float8 variants, float4e2m1, float6 variants, float8e8m0) their bit
// code in the low bits. Only protobuf storage packs them (dtype_bits).
bool dtype_is_small_float(DataType t);  // float8*, float4e2m1, float6*
bool dtype_is_small_int(DataType t);    // int4, uint4, int2, uint2
int dtype_bits(DataType t);             // bits per element in ONNX storage (4, 2, 6, or 8 * size)
// Value range of int4/uint4/int2/uint2.
int64_t small_int_min(DataType t);
int64_t small_int_max(DataType t);

// Small float codes <-> float. `saturate` follows Cast's rules for the float8
// types (out-of-range and infinities go to +-max, else to NaN or inf);
// float4/float6 have no inf or NaN and always saturate. Rounding is to nearest
// even. For float8e8m0 see float_to_e8m0.
float small_float_to_float(DataType t, uint8_t code);
uint8_t float_to_small_float(DataType t, float f, bool saturate = true);
enum class E8M0Round { Up, Down, Nearest };
uint8_t float_to_e8m0(float f, bool saturate = true, E8M0Round mode = E8M0Round::Up);

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  Float16(float f) : bits(float_to_half(f)) {}
  operator float() const { return half_to_float(bits); }
  static Float16 from_bits(uint16_t b) { Float16 h; h.bits = b; return h; }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = 0x7fc0;  // quiet NaN
    } else {
      u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
      bits = static_cast<uint16_t>(u >> 16);
    }
  }
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
};

// Compile-time mapping from C++ element type to DataType.
template <class T> struct DataTypeOf;
template <> struct DataTypeOf<float> { static constexpr DataType value = DataType::Float; };
template <> struct DataTypeOf<double> { static constexpr DataType value = DataType::Double; };
template <> struct DataTypeOf<Float16> { static constexpr DataType value = DataType::Float16; };
template <> struct DataTypeOf<BFloat16> { static constexpr DataType value = DataType::BFloat16; };
template <> struct DataTypeOf<int8_t> { static constexpr DataType value = DataType::Int8; };
template <> struct DataTypeOf<int16_t> { static constexpr DataType value = DataType::Int16; };
template <> struct DataTypeOf<int32_t> { static constexpr DataType value = DataType::Int32; };
template <> struct DataTypeOf<int64_t> { static constexpr DataType value = DataType::Int64; };
template <> struct DataTypeOf<uint8_t> { static constexpr DataType value = DataType::UInt8; };
template <> struct DataTypeOf<uint16_t> { static constexpr DataType value = DataType::UInt16; };
template <> struct DataTypeOf<uint32_t> { static constexpr DataType value = DataType::UInt32; };
template <> struct DataTypeOf<uint64_t> { static constexpr DataType value = DataType::UInt64; };
template <> struct DataTypeOf<bool> { static constexpr DataType value = DataType::Bool; };
template <> struct DataTypeOf<std::string> { static constexpr DataType value = DataType::String; };

}  // namespace onyx
