// Element-moving helpers shared by the shape_ops, data_movement and indexing
// kernel families: block copies for any element type (strings included) and a
// strided gather walk used by Transpose, Slice, Expand, Tile, DepthToSpace, ...
#pragma once
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "base/element_copy.h"
#include "base/thread_pool.h"
#include "cpu/block_transpose_avx512.h"
#include "cpu/byte_transpose.h"
#include "cpu/interleave_bytes.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"
#include "kernels/kernel.h"

namespace onyx::shape_detail {

using onyx::copy_elems;  // base/element_copy.h

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
      std::copy_n(src + off, inner, d);  // a contiguous run (memcpy for plain types)
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

// ---- Transpose ----

// A transpose reduced to what matters for the copy: size-1 dims dropped and
// input dims that stay neighbours in the output merged, so that e.g.
// [N,C,H,W] -> [N,H,W,C] at N = 1 becomes [C, HW] -> [HW, C].
struct TransposeDims {
  Shape in_shape;
  std::vector<int64_t> perm;
};

inline TransposeDims simplify_transpose(const Shape& in_shape, const std::vector<int64_t>& perm) {
  // Kept input dims renumbered, in output order.
  std::vector<int64_t> renumber(in_shape.size(), -1);
  int64_t kept = 0;
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (in_shape[d] != 1) renumber[d] = kept++;
  std::vector<int64_t> order;  // kept input dims (new numbers) in output order
  for (int64_t p : perm)
    if (renumber[p] >= 0) order.push_back(renumber[p]);
  Shape kept_shape(kept);
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (renumber[d] >= 0) kept_shape[renumber[d]] = in_shape[d];
  // Groups of input dims a, a+1, ... that follow each other in the output.
  std::vector<bool> starts_group(kept, false);
  for (size_t k = 0; k < order.size(); ++k) starts_group[order[k]] = k == 0 || order[k - 1] + 1 != order[k];
  std::vector<int64_t> group_of(kept);
  TransposeDims t;
  for (int64_t d = 0; d < kept; ++d) {
    if (starts_group[d]) t.in_shape.push_back(1);
    group_of[d] = static_cast<int64_t>(t.in_shape.size()) - 1;
    t.in_shape.back() *= kept_shape[d];
  }
  for (size_t k = 0; k < order.size(); ++k)
    if (starts_group[order[k]]) t.perm.push_back(group_of[order[k]]);
  return t;
}

// Walks the offsets of a row-major index over `dims` in a source and a
// destination with their own strides, from a given linear index on.
class OffsetWalk {
 public:
  OffsetWalk(const Shape& dims, const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides,
             int64_t start)
      : dims_(dims), ss_(src_strides), ds_(dst_strides), idx_(dims.size(), 0) {
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      idx_[d] = start % dims[d];
      start /= dims[d];
      src += idx_[d] * ss_[d];
      dst += idx_[d] * ds_[d];
    }
  }
  void next() {
    for (int d = static_cast<int>(dims_.size()) - 1; d >= 0; --d) {
      src += ss_[d];
      dst += ds_[d];
      if (++idx_[d] < dims_[d]) return;
      src -= ss_[d] * dims_[d];
      dst -= ds_[d] * dims_[d];
      idx_[d] = 0;
    }
  }
  int64_t src = 0, dst = 0;

 private:
  const Shape& dims_;
  const std::vector<int64_t>& ss_;
  const std::vector<int64_t>& ds_;
  std::vector<int64_t> idx_;
};

// Below these sizes a transpose runs on the caller alone: waking the pool
// costs more than the copy. Plain run copies are cheaper per byte than tile
// transposes, so they need more bytes to gain (a 363 KB channel shuffle ran
// slower on 2 threads than on 1).
constexpr int64_t kParallelRunBytes = 1 << 20, kParallelTileBytes = 256 << 10;

// The reduced transpose keeps the innermost input dim innermost: the output is
// contiguous runs of the input, copied whole (memcpy for plain types). Long
// runs are cut in pieces so that a few of them still spread over the threads.
template <class T>
void transpose_runs(const T* src, T* dst, const TransposeDims& t, ThreadPool* pool) {
  int r = static_cast<int>(t.perm.size());
  std::vector<int64_t> cs = contiguous_strides(t.in_shape);
  int64_t run = t.in_shape[r - 1];
  Shape dims(r - 1);
  std::vector<int64_t> src_strides(r - 1), dst_strides(r - 1);
  for (int k = 0; k < r - 1; ++k) {
    dims[k] = t.in_shape[t.perm[k]];
    src_strides[k] = cs[t.perm[k]];
  }
  std::vector<int64_t> out_cs = contiguous_strides(dims);
  for (int k = 0; k < r - 1; ++k) dst_strides[k] = out_cs[k] * run;
  const int64_t piece = std::max<int64_t>(1, (64 << 10) / static_cast<int64_t>(sizeof(T)));
  const int64_t pieces = (run + piece - 1) / piece;
  parallel_for(pool, shape_numel(dims) * pieces, [&](int64_t begin, int64_t end) {
    int64_t at = begin / pieces;
    OffsetWalk w(dims, src_strides, dst_strides, at);
    for (int64_t item = begin; item < end; ++item) {
      for (; at < item / pieces; ++at) w.next();
      int64_t p0 = (item % pieces) * piece;
      std::copy_n(src + w.src + p0, std::min(piece, run - p0), dst + w.dst + p0);
    }
  });
}

// transpose_tile with a fixed, small number of columns (planes interleaved
// into pixels, e.g. an RGB image to channel-last): the compiler unrolls the
// inner loop and vectorizes the outer one.
template <int Cols, class T>
void interleave_planes(const T* src, int64_t src_ld, int64_t rows, T* dst, int64_t dst_ld) {
  for (int64_t i = 0; i < rows; ++i)
    for (int j = 0; j < Cols; ++j) dst[i * dst_ld + j] = src[j * src_ld + i];
}

// dst[i * dst_ld + j] = src[j * src_ld + i] for i < rows, j < cols.
template <class T>
void transpose_tile(const T* src, int64_t src_ld, int64_t rows, int64_t cols, T* dst, int64_t dst_ld) {
  if constexpr (sizeof(T) == 1 && std::is_trivially_copyable_v<T>) {
    if (cols == 3 && dst_ld == 3)
      return interleave3_bytes(reinterpret_cast<const uint8_t*>(src), src_ld, rows, reinterpret_cast<uint8_t*>(dst));
  }
  switch (cols) {
    case 2: return interleave_planes<2>(src, src_ld, rows, dst, dst_ld);
    case 3: return interleave_planes<3>(src, src_ld, rows, dst, dst_ld);
    case 4: return interleave_planes<4>(src, src_ld, rows, dst, dst_ld);
    default: break;
  }
  if constexpr (sizeof(T) == 1 && std::is_trivially_copyable_v<T>) {
    // Vector blocks: the scalar loop reading C planes 4 KB apart thrashed L1 (0.73 ms for a
    // [64, 4096] byte transpose, 7x the float one).
    return transpose_8bit(reinterpret_cast<const uint8_t*>(src), cols, rows, src_ld, reinterpret_cast<uint8_t*>(dst),
                          dst_ld);
  }
  if constexpr (sizeof(T) == 4 && std::is_trivially_copyable_v<T>) {
    if (nchwc::block_transpose_available()) {
      // Bit-exact for any 4-byte type: the tiles are only loaded, shuffled and stored.
      nchwc::transpose_tile32(reinterpret_cast<const float*>(src), src_ld, rows, cols, reinterpret_cast<float*>(dst),
                              dst_ld);
      return;
    }
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * dst_ld + j] = src[j * src_ld + i];
}

// The reduced transpose moves the innermost input dim (contiguous in the
// source) to output position q < last: every combination of the other output
// dims is a 2-D transpose between output dims q and last, done in tiles that
// are the unit of work for the threads. A tile is a strip of 16 output rows:
// few long write streams measured faster than square tiles when the output
// is not in cache (64x64 tiles: +40% on a [3136,96] -> [96,3136] transpose).
template <class T>
void transpose_tiles(const T* src, T* dst, const TransposeDims& t, ThreadPool* pool) {
  constexpr int64_t kTileCols = 1024;
  int r = static_cast<int>(t.perm.size());
  std::vector<int64_t> cs = contiguous_strides(t.in_shape);
  Shape out_shape(r);
  for (int k = 0; k < r; ++k) out_shape[k] = t.in_shape[t.perm[k]];
  std::vector<int64_t> out_cs = contiguous_strides(out_shape);
  int q = static_cast<int>(std::find(t.perm.begin(), t.perm.end(), r - 1) - t.perm.begin());
  int64_t rows = out_shape[q], cols = out_shape[r - 1];
  int64_t src_ld = cs[t.perm[r - 1]], dst_ld = out_cs[q];
  // A few columns: long strips of rows (interleave_planes), not 16-row ones; bytes in strips of
  // 64, the width of transpose_8bit's AVX-512 blocks.
  const int64_t kTileRows = cols <= 4 ? 4096 : sizeof(T) == 1 ? 64 : 16;
  Shape dims;  // the other output dims
  std::vector<int64_t> src_strides, dst_strides;
  for (int k = 0; k < r - 1; ++k) {
    if (k == q) continue;
    dims.push_back(out_shape[k]);
    src_strides.push_back(cs[t.perm[k]]);
    dst_strides.push_back(out_cs[k]);
  }
  const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows, col_tiles = (cols + kTileCols - 1) / kTileCols;
  const int64_t tiles = row_tiles * col_tiles;
  parallel_for(pool, shape_numel(dims) * tiles, [&](int64_t begin, int64_t end) {
    int64_t at = begin / tiles;
    OffsetWalk w(dims, src_strides, dst_strides, at);
    for (int64_t item = begin; item < end; ++item) {
      for (; at < item / tiles; ++at) w.next();
      int64_t i0 = (item % tiles) / col_tiles * kTileRows, j0 = (item % tiles) % col_tiles * kTileCols;
      transpose_tile(src + w.src + i0 + j0 * src_ld, src_ld, std::min(kTileRows, rows - i0),
                     std::min(kTileCols, cols - j0), dst + w.dst + i0 * dst_ld + j0, dst_ld);
    }
  });
}

// dst (already of the output shape) = src, with its data viewed as
// `in_shape`, transposed by `perm` (non-negative, a permutation). Any element
// type; `pool` (may be null) splits large copies over threads.
inline void transpose_into(const Tensor& src, const Shape& in_shape, const std::vector<int64_t>& perm, Tensor& dst,
                           ThreadPool* pool) {
  if (dst.numel() == 0) return;
  TransposeDims t = simplify_transpose(in_shape, perm);
  if (t.perm.size() <= 1) {  // the data order does not change
    copy_elems(dst, 0, src, 0, dst.numel());
    return;
  }
  const bool runs = t.perm.back() == static_cast<int64_t>(t.perm.size()) - 1;
  const int64_t bytes = dst.numel() * static_cast<int64_t>(dtype_size(src.dtype()));
  if (bytes < (runs ? kParallelRunBytes : kParallelTileBytes)) pool = nullptr;
  dispatch_by_size(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (runs)
      transpose_runs(src.data<T>(), dst.data<T>(), t, pool);
    else
      transpose_tiles(src.data<T>(), dst.data<T>(), t, pool);
  });
}

// The input `src` (with its data viewed as `in_shape`) transposed by `perm`,
// in a fresh tensor (for kernels that reshape the result further).
inline Tensor transpose_tensor(const Tensor& src, const Shape& in_shape, const std::vector<int64_t>& perm) {
  Shape out_shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out_shape[i] = in_shape[perm[i]];
  Tensor out(src.dtype(), out_shape);
  transpose_into(src, in_shape, perm, out, nullptr);
  return out;
}

inline std::string ints_to_string(const std::vector<int64_t>& v) { return shape_to_string(v); }

// Reshape's output shape for `req` (0 copies the input's dim unless allowzero, one -1 is
// inferred); throws naming both shapes when they do not fit.
inline Shape reshape_target(const Shape& in, const std::vector<int64_t>& req, bool allowzero) {
  Shape out(req.size());
  int infer = -1;
  int64_t known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < req.size(); ++i) {
    int64_t d = req[i];
    if (d == -1) {
      if (infer >= 0)
        kernel_fail("Reshape: more than one -1 in the requested shape " + ints_to_string(req));
      infer = static_cast<int>(i);
      out[i] = 1;
      continue;
    }
    if (d < -1) kernel_fail("Reshape: invalid dimension " + std::to_string(d) + " in " + ints_to_string(req));
    if (d == 0) {
      has_zero = true;
      if (!allowzero) {
        if (i >= in.size())
          kernel_fail("Reshape: 0 at index " + std::to_string(i) + " of " + ints_to_string(req) +
                      " copies an input dimension, but the input shape " + shape_to_string(in) + " has rank " +
                      std::to_string(in.size()));
        d = in[i];
      }
    }
    out[i] = d;
    known *= d;
  }
  int64_t total = shape_numel(in);
  if (infer >= 0) {
    if (allowzero && has_zero)
      kernel_fail("Reshape: allowzero=1 with both 0 and -1 in the requested shape " + ints_to_string(req));
    if (known == 0 || total % known != 0)
      kernel_fail("Reshape: cannot reshape " + shape_to_string(in) + " to " + ints_to_string(req));
    out[infer] = total / known;
  }
  if (shape_numel(out) != total)
    kernel_fail("Reshape: cannot reshape " + shape_to_string(in) + " (" + std::to_string(total) + " elements) to " +
                ints_to_string(req));
  return out;
}

}  // namespace onyx::shape_detail
