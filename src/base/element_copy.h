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

}  // namespace onyx
