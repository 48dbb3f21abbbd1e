// ONNX Range's argument checks and the number of elements it makes, shared by
// the CPU and CUDA kernels so that both accept the same inputs and agree on
// the output's length.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel.h"

namespace onyx {

// start, limit and delta: scalars of one type.
inline void check_range_inputs(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1)
    kernel_fail("Range: start, limit and delta must be scalars, got shapes " + shape_to_string(start.shape()) + ", " +
                shape_to_string(limit.shape()) + ", " + shape_to_string(delta.shape()));
  if (start.dtype() != limit.dtype() || start.dtype() != delta.dtype())
    kernel_fail("Range: start, limit and delta types differ");
}

template <class A>
int64_t range_count(A start, A limit, A delta) {
  if (delta == A(0)) kernel_fail("Range: delta must not be zero");
  if constexpr (std::is_floating_point_v<A>) {
    double c = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
    if (!(c < 1e12)) kernel_fail("Range: too many elements");
    return c > 0 ? static_cast<int64_t>(c) : 0;
  } else {
    const bool up = delta > A(0);
    if ((up && limit <= start) || (!up && limit >= start)) return 0;
    // |limit - start| and |delta| in unsigned arithmetic: no overflow
    uint64_t diff = up ? static_cast<uint64_t>(limit) - static_cast<uint64_t>(start)
                       : static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
    uint64_t step = up ? static_cast<uint64_t>(delta) : static_cast<uint64_t>(0) - static_cast<uint64_t>(delta);
    return static_cast<int64_t>((diff + step - 1) / step);
  }
}

}  // namespace onyx
