// Copying elements between tensors of one dtype, strings included: the one
// primitive the tensor, protobuf and kernel layers all need.
#pragma once
#include <cstring>
#include <string>

#include "onyx/tensor.h"

namespace onyx {

// Copies n elements src[src_off, src_off + n) to dst[dst_off, ...).
inline void copy_elems(Tensor& dst, int64_t dst_off, const Tensor& src, int64_t src_off, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == DataType::String) {
    const std::string* s = src.data<std::string>() + src_off;
    std::string* d = dst.data<std::string>() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  } else {
    size_t es = dtype_size(src.dtype());
    std::memcpy(static_cast<char*>(dst.raw()) + dst_off * es, static_cast<const char*>(src.raw()) + src_off * es,
                static_cast<size_t>(n) * es);
  }
}

template <size_t Bytes>
inline void copy_fixed_rows(const char* src, int64_t src_stride, char* dst, int64_t dst_stride, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_stride, src + r * src_stride, Bytes);
}

// `rows` copies of `bytes` bytes between strided rows: a fixed-size copy the
// compiler inlines for short rows (a Concat along a last axis of 1 + 1, the
// lane runs of a blocked concat), a memcpy call per row otherwise.
inline void copy_rows(const char* src, int64_t src_stride, char* dst, int64_t dst_stride, int64_t rows, size_t bytes) {
  switch (bytes) {
    case 1: return copy_fixed_rows<1>(src, src_stride, dst, dst_stride, rows);
    case 2: return copy_fixed_rows<2>(src, src_stride, dst, dst_stride, rows);
    case 4: return copy_fixed_rows<4>(src, src_stride, dst, dst_stride, rows);
    case 8: return copy_fixed_rows<8>(src, src_stride, dst, dst_stride, rows);
    case 16: return copy_fixed_rows<16>(src, src_stride, dst, dst_stride, rows);
    case 32: return copy_fixed_rows<32>(src, src_stride, dst, dst_stride, rows);
    default:
      for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_stride, src + r * src_stride, bytes);
  }
}

}  // namespace onyx
