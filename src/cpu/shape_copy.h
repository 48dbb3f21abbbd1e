// Element-moving helpers shared by the shape_ops, data_movement and indexing
// kernel families: block copies for any element type (strings included) and a
// strided gather walk used by Transpose, Slice, Expand, Tile, DepthToSpace, ...
#pragma once
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/dispatch.h"
#include "kernels/kernel.h"

namespace onyx::shape_detail {

// Copies n elements src[src_off, src_off+n) to dst[dst_off, ...); any element type.
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

// Writes dst (row-major, of `shape`) from src[base + sum(idx[d] * strides[d])].
// Strides may be zero or negative.
template <class T>
void strided_copy(const T* src, int64_t base, const std::vector<int64_t>& strides, T* dst, const Shape& shape) {
  int64_t n = shape_numel(shape);
  if (n == 0) return;
  int rank = static_cast<int>(shape.size());
  if (rank == 0) {
    dst[0] = src[base];
    return;
  }
  int64_t inner = shape[rank - 1], is = strides[rank - 1];
  if (rank >= 2 && is != 1 && strides[rank - 2] == 1 && inner >= 8 && shape[rank - 2] >= 8) {
    // A 2-D transpose in the last two dims: copy in cache-friendly tiles.
    constexpr int64_t kTile = 32;
    int64_t rows = shape[rank - 2];
    int64_t plane = rows * inner;
    Shape outer_shape(shape.begin(), shape.end() - 2);
    std::vector<int64_t> idx(rank - 2, 0);
    int64_t off = base;
    for (int64_t p = 0; p < n; p += plane) {
      T* d = dst + p;
      for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
        int64_t i1 = std::min(rows, i0 + kTile);
        for (int64_t j0 = 0; j0 < inner; j0 += kTile) {
          int64_t j1 = std::min(inner, j0 + kTile);
          for (int64_t i = i0; i < i1; ++i)
            for (int64_t j = j0; j < j1; ++j) d[i * inner + j] = src[off + i + j * is];
        }
      }
      for (int dd = rank - 3; dd >= 0; --dd) {
        ++idx[dd];
        off += strides[dd];
        if (idx[dd] < shape[dd]) break;
        off -= strides[dd] * shape[dd];
        idx[dd] = 0;
      }
    }
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  int64_t off = base;
  for (int64_t i = 0; i < n; i += inner) {
    T* d = dst + i;
    if (is == 1) {
      const T* s = src + off;
      for (int64_t k = 0; k < inner; ++k) d[k] = s[k];
    } else {
      for (int64_t k = 0; k < inner; ++k) d[k] = src[off + k * is];
    }
    for (int dd = rank - 2; dd >= 0; --dd) {
      ++idx[dd];
      off += strides[dd];
      if (idx[dd] < shape[dd]) break;
      off -= strides[dd] * shape[dd];
      idx[dd] = 0;
    }
  }
}

// Drops size-1 dims and merges dims that are contiguous in the source, to
// make the strided walk's inner loop longer. Returns the simplified shape and strides.
inline void simplify_strided(Shape& shape, std::vector<int64_t>& strides) {
  Shape s2;
  std::vector<int64_t> st2;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!s2.empty() && st2.back() == strides[d] * shape[d]) {
      s2.back() *= shape[d];
      st2.back() = strides[d];
    } else {
      s2.push_back(shape[d]);
      st2.push_back(strides[d]);
    }
  }
  shape = std::move(s2);
  strides = std::move(st2);
}

// dst = src viewed through (base, strides) over dst's shape; any element type.
inline void strided_copy_tensor(const Tensor& src, int64_t base, std::vector<int64_t> strides, Tensor& dst) {
  if (dst.numel() == 0) return;
  Shape shape = dst.shape();
  simplify_strided(shape, strides);
  dispatch_by_size(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    strided_copy(src.data<T>(), base, strides, dst.data<T>(), shape);
  });
}

// The input `src` (with its data viewed as `in_shape`) transposed by `perm`.
inline Tensor transpose_tensor(const Tensor& src, const Shape& in_shape, const std::vector<int64_t>& perm) {
  std::vector<int64_t> cs = contiguous_strides(in_shape);
  Shape out_shape(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out_shape[i] = in_shape[perm[i]];
    strides[i] = cs[perm[i]];
  }
  Tensor out(src.dtype(), out_shape);
  strided_copy_tensor(src, 0, strides, out);
  return out;
}

inline std::string ints_to_string(const std::vector<int64_t>& v) { return shape_to_string(v); }

}  // namespace onyx::shape_detail
