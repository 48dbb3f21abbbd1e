// Whole-tensor moves along one axis, shared by control flow and sequence ops:
// taking a slice, concatenating and stacking. Work for every element type.
#pragma once
#include <vector>

#include "onyx/tensor.h"

namespace onyx {

// Elements [start, start+len) along `axis` (axis kept, size len).
Tensor slice_axis(const Tensor& t, int axis, int64_t start, int64_t len);
// Index `i` along `axis`, with that axis removed.
Tensor index_axis(const Tensor& t, int axis, int64_t i);
// Concatenates along an existing axis; every other dim must agree.
Tensor concat_axis(const std::vector<Tensor>& parts, int axis);
// Stacks along a new axis inserted at `axis`.
Tensor stack_axis(const std::vector<Tensor>& parts, int axis);

}  // namespace onyx
