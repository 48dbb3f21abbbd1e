#include "kernels/broadcast.h"

#include <algorithm>

#include "kernels/kernel.h"

namespace onyx {

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (auto& s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i];
      int64_t& o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (auto& t : shapes) all += (all.empty() ? "" : " and ") + shape_to_string(t);
      kernel_fail("shapes " + all + " cannot be broadcast together");
    }
  }
  return out;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> st(shape.size());
  int64_t s = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

bool broadcasts_to(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1 && in[i] != out[lead + i]) return false;
  return true;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> cs = contiguous_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[off + i] = in[i] == 1 ? 0 : cs[i];
  return st;
}

std::vector<int64_t> broadcast_offsets(const Shape& in, const Shape& out) {
  int64_t n = shape_numel(out);
  std::vector<int64_t> offs(n);
  if (n == 0) return offs;
  if (shape_numel(in) == n) {
    for (int64_t i = 0; i < n; ++i) offs[i] = i;
    return offs;
  }
  std::vector<int64_t> st = broadcast_strides(in, out);
  int rank = static_cast<int>(out.size());
  std::vector<int64_t> idx(rank, 0);
  int64_t o = 0;
  for (int64_t i = 0; i < n; ++i) {
    offs[i] = o;
    for (int d = rank - 1; d >= 0; --d) {
      ++idx[d];
      o += st[d];
      if (idx[d] < out[d]) break;
      o -= st[d] * out[d];
      idx[d] = 0;
    }
  }
  return offs;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    kernel_fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace onyx
