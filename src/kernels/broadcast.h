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

// Whether `in` broadcasts to `out` one way (numpy rules, `out` unchanged).
bool broadcasts_to(const Shape& in, const Shape& out);

// Strides of `in` viewed as `out` (same rank after left-padding with 1s):
// 0 on broadcast dimensions.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Walks `out` in runs along its innermost dimension (trailing unit
// dimensions dropped), calling run(offset_a, stride_a, offset_b, stride_b,
// offset_out, count): element k of a run reads a[offset_a + k * stride_a] and
// b[offset_b + k * stride_b] and writes out[offset_out + k]. Inputs that
// broadcast nothing (same size as out, or one element) give a single run.
template <class F>
void for_each_broadcast_run(const Shape& a, const Shape& b, const Shape& out, F&& run) {
  int64_t n = shape_numel(out);
  if (n == 0) return;
  int64_t na = shape_numel(a), nb = shape_numel(b);
  if ((na == n || na == 1) && (nb == n || nb == 1)) {
    run(0, na == n ? 1 : 0, 0, nb == n ? 1 : 0, 0, n);
    return;
  }
  // Left-pad the inputs to out's rank, so a trailing dimension dropped from
  // out is dropped from each of them too.
  Shape o = out, pa(out.size() - a.size(), 1), pb(out.size() - b.size(), 1);
  pa.insert(pa.end(), a.begin(), a.end());
  pb.insert(pb.end(), b.begin(), b.end());
  while (o.size() > 1 && o.back() == 1) {
    o.pop_back();
    pa.pop_back();
    pb.pop_back();
  }
  std::vector<int64_t> sa = broadcast_strides(pa, o), sb = broadcast_strides(pb, o);
  int rank = static_cast<int>(o.size());
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  const int64_t inner = o[rank - 1];
  for (int64_t i = 0; i < n; i += inner) {
    run(oa, sa[rank - 1], ob, sb[rank - 1], i, inner);
    // advance the outer index (all but the last dim)
    for (int d = rank - 2; d >= 0; --d) {
      ++idx[d];
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < o[d]) break;
      oa -= sa[d] * o[d];
      ob -= sb[d] * o[d];
      idx[d] = 0;
    }
  }
}

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
  for_each_broadcast_run(a, b, out, [&](int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oy, int64_t count) {
    for (int64_t k = 0; k < count; ++k) fn(oy + k, oa + k * sa, ob + k * sb);
  });
}

// Offset of every output element into one broadcast input (for ops with
// three or more inputs such as Where, Sum, Max).
std::vector<int64_t> broadcast_offsets(const Shape& in, const Shape& out);

// Normalizes a possibly negative axis into [0, rank); throws when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);

}  // namespace onyx
