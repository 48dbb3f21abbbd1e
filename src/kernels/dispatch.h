// Calling a templated body for a runtime element type:
//   dispatch_numeric(t.dtype(), [&](auto tag) { using T = decltype(tag)::type; ... });
// Unsupported types raise a clear error naming the type.
#pragma once
#include <string>
#include <type_traits>

#include "kernels/kernel.h"
#include "onyx/dtype.h"

namespace onyx {

template <class T>
struct TypeTag {
  using type = T;
};

[[noreturn]] void unsupported_type(DataType t, const char* what);
// Fails with "OP: NAME must be WANT, got ..." unless t has element type `want`.
void check_dtype(const char* op, const char* name, const Tensor& t, DataType want);

// Element <-> double: float16/bfloat16 go through float, integers convert directly.
template <class T>
double to_d(T v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else if constexpr (std::is_integral_v<T>) return static_cast<double>(v);
  else return static_cast<float>(v);
}
template <class T>
T from_d(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(v);
  else return static_cast<T>(static_cast<float>(v));
}

// float, double, float16, bfloat16
template <class F>
decltype(auto) dispatch_float(DataType t, F&& f) {
  switch (t) {
    case DataType::Float: return f(TypeTag<float>{});
    case DataType::Double: return f(TypeTag<double>{});
    case DataType::Float16: return f(TypeTag<Float16>{});
    case DataType::BFloat16: return f(TypeTag<BFloat16>{});
    default: unsupported_type(t, "a floating-point type");
  }
}

// all signed and unsigned integer types (not bool)
template <class F>
decltype(auto) dispatch_int(DataType t, F&& f) {
  switch (t) {
    case DataType::Int8: return f(TypeTag<int8_t>{});
    case DataType::Int16: return f(TypeTag<int16_t>{});
    case DataType::Int32: return f(TypeTag<int32_t>{});
    case DataType::Int64: return f(TypeTag<int64_t>{});
    case DataType::UInt8: return f(TypeTag<uint8_t>{});
    case DataType::UInt16: return f(TypeTag<uint16_t>{});
    case DataType::UInt32: return f(TypeTag<uint32_t>{});
    case DataType::UInt64: return f(TypeTag<uint64_t>{});
    default: unsupported_type(t, "an integer type");
  }
}

// floats and integers (not bool, not string)
template <class F>
decltype(auto) dispatch_numeric(DataType t, F&& f) {
  switch (t) {
    case DataType::Float: return f(TypeTag<float>{});
    case DataType::Double: return f(TypeTag<double>{});
    case DataType::Float16: return f(TypeTag<Float16>{});
    case DataType::BFloat16: return f(TypeTag<BFloat16>{});
    case DataType::Int8: return f(TypeTag<int8_t>{});
    case DataType::Int16: return f(TypeTag<int16_t>{});
    case DataType::Int32: return f(TypeTag<int32_t>{});
    case DataType::Int64: return f(TypeTag<int64_t>{});
    case DataType::UInt8: return f(TypeTag<uint8_t>{});
    case DataType::UInt16: return f(TypeTag<uint16_t>{});
    case DataType::UInt32: return f(TypeTag<uint32_t>{});
    case DataType::UInt64: return f(TypeTag<uint64_t>{});
    default: unsupported_type(t, "a numeric type");
  }
}

// numeric plus bool
template <class F>
decltype(auto) dispatch_numeric_bool(DataType t, F&& f) {
  if (t == DataType::Bool) return f(TypeTag<bool>{});
  return dispatch_numeric(t, std::forward<F>(f));
}

// every type including string
template <class F>
decltype(auto) dispatch_all(DataType t, F&& f) {
  if (t == DataType::String) return f(TypeTag<std::string>{});
  return dispatch_numeric_bool(t, std::forward<F>(f));
}

// Dispatch on element size only, for ops that just move bytes (Transpose,
// Gather, Concat, ...). Strings have their own path.
template <class F>
decltype(auto) dispatch_by_size(DataType t, F&& f) {
  if (t == DataType::String) return f(TypeTag<std::string>{});
  switch (dtype_size(t)) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    default: unsupported_type(t, "a fixed-size type");
  }
}

}  // namespace onyx
