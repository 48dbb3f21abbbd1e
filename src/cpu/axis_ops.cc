#include "cpu/axis_ops.h"

#include <cstring>

#include "kernels/kernel.h"

namespace onyx {

namespace {

// Copies `rows` runs of `n` elements from src (stride src_stride) to dst (stride dst_stride).
void copy_runs(const Tensor& src, int64_t src_off, int64_t src_stride, Tensor& dst, int64_t dst_off,
               int64_t dst_stride, int64_t rows, int64_t n) {
  if (src.dtype() == DataType::String) {
    const std::string* s = src.data<std::string>();
    std::string* d = dst.data<std::string>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < n; ++k) d[dst_off + r * dst_stride + k] = s[src_off + r * src_stride + k];
    return;
  }
  size_t es = dtype_size(src.dtype());
  const char* s = static_cast<const char*>(src.raw());
  char* d = static_cast<char*>(dst.raw());
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(d + (dst_off + r * dst_stride) * es, s + (src_off + r * src_stride) * es, n * es);
}

int64_t outer_size(const Shape& s, int axis) {
  int64_t n = 1;
  for (int i = 0; i < axis; ++i) n *= s[i];
  return n;
}

int64_t inner_size(const Shape& s, int axis) {
  int64_t n = 1;
  for (size_t i = axis + 1; i < s.size(); ++i) n *= s[i];
  return n;
}

}  // namespace

Tensor slice_axis(const Tensor& t, int axis, int64_t start, int64_t len) {
  Shape shape = t.shape();
  shape[axis] = len;
  Tensor out(t.dtype(), shape);
  int64_t outer = outer_size(t.shape(), axis), inner = inner_size(t.shape(), axis);
  copy_runs(t, start * inner, t.dim(axis) * inner, out, 0, len * inner, outer, len * inner);
  return out;
}

Tensor index_axis(const Tensor& t, int axis, int64_t i) {
  Tensor s = slice_axis(t, axis, i, 1);
  Shape shape = t.shape();
  shape.erase(shape.begin() + axis);
  return s.reshaped(shape);
}

Tensor concat_axis(const std::vector<Tensor>& parts, int axis) {
  if (parts.empty()) kernel_fail("cannot concatenate an empty list of tensors");
  Shape shape = parts[0].shape();
  int64_t total = 0;
  for (const Tensor& p : parts) {
    if (p.rank() != static_cast<int>(shape.size()) || p.dtype() != parts[0].dtype())
      kernel_fail("cannot concatenate " + dtype_name(p.dtype()) + shape_to_string(p.shape()) + " with " +
                  dtype_name(parts[0].dtype()) + shape_to_string(shape));
    for (int d = 0; d < p.rank(); ++d)
      if (d != axis && p.dim(d) != shape[d])
        kernel_fail("cannot concatenate shapes " + shape_to_string(p.shape()) + " and " + shape_to_string(shape) +
                    " along axis " + std::to_string(axis));
    total += p.dim(axis);
  }
  shape[axis] = total;
  Tensor out(parts[0].dtype(), shape);
  int64_t outer = outer_size(shape, axis), inner = inner_size(shape, axis), offset = 0;
  for (const Tensor& p : parts) {
    int64_t n = p.dim(axis) * inner;
    copy_runs(p, 0, n, out, offset, total * inner, outer, n);
    offset += n;
  }
  return out;
}

Tensor stack_axis(const std::vector<Tensor>& parts, int axis) {
  std::vector<Tensor> expanded;
  for (const Tensor& p : parts) {
    Shape s = p.shape();
    s.insert(s.begin() + axis, 1);
    expanded.push_back(p.reshaped(s));
  }
  return concat_axis(expanded, axis);
}

}  // namespace onyx
