// Float tensors (float16, bfloat16, float, double) to and from a vector of
// compute type A (float, or double for double tensors), for reference-style
// kernels that compute in one type whatever the element type.
#pragma once
#include <type_traits>
#include <vector>

#include "kernels/dispatch.h"
#include "onyx/tensor.h"

namespace onyx {

template <class A>
std::vector<A> load_floats(const Tensor& t) {
  std::vector<A> v(static_cast<size_t>(t.numel()));
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, double>) v[i] = static_cast<A>(p[i]);
      else v[i] = static_cast<A>(static_cast<float>(p[i]));
    }
  });
  return v;
}

// t's values as float: its own data when it is float (no copy: a rotary cache of 2048
// positions was copied whole at every decode step), else converted into `scratch`.
inline const float* float_values(const Tensor& t, std::vector<float>& scratch) {
  if (t.dtype() == DataType::Float) return t.data<float>();
  scratch = load_floats<float>(t);
  return scratch.data();
}

// Writes t.numel() values of v into t, rounded to t's element type.
template <class A>
void store_floats(const A* v, Tensor& t) {
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, double>) p[i] = static_cast<double>(v[i]);
      else p[i] = T(static_cast<float>(v[i]));
    }
  });
}

}  // namespace onyx
