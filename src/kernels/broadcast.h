// Numpy-style broadcasting helpers shared by elementwise kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "onyx/tensor.h"

namespace onyx {

// The broadcast result shape of several shapes; throws naming both shapes when
// they are incompatible.
Shape broadcast_shapes(const std::vector<Shape>& shapes);

// Row-major strides of `shape`, in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// Strides of `in` viewed as `out` (same rank after left-padding with 1s):
// 0 on broadcast dimensions.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Walks every index of `out_shape`, calling fn(out_index, offset_a, offset_b)
// with the element offsets into two broadcast inputs. Fast paths for the
// common cases (same shape, scalar operand).
template <class F>
void for_each_broadcast2(const Shape& a, const Shape& b, const Shape& out, F&& fn) {
  int64_t n = shape_numel(out);
  if (n == 0) return;
  int64_t na = shape_numel(a), nb = shape_numel(b);
  if (na == n && nb == n && a == b) {
    for (int64_t i = 0; i < n; ++i) fn(i, i, i);
    return;
  }
  if (na == 1 && nb == n) {
    for (int64_t i = 0; i < n; ++i) fn(i, 0, i);
    return;
  }
  if (nb == 1 && na == n) {
    for (int64_t i = 0; i < n; ++i) fn(i, i, 0);
    return;
  }
  std::vector<int64_t> sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  int rank = static_cast<int>(out.size());
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  int64_t inner = out[rank - 1], ia = sa[rank - 1], ib = sb[rank - 1];
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t k = 0; k < inner; ++k) fn(i + k, oa + k * ia, ob + k * ib);
    // advance the outer index (all but the last dim)
    for (int d = rank - 2; d >= 0; --d) {
      ++idx[d];
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < out[d]) break;
      oa -= sa[d] * out[d];
      ob -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

// Offset of every output element into one broadcast input (for ops with
// three or more inputs such as Where, Sum, Max).
std::vector<int64_t> broadcast_offsets(const Shape& in, const Shape& out);

// Normalizes a possibly negative axis into [0, rank); throws when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);

}  // namespace onyx
