// Unary float kernels shared by the activation and elementwise ops: a plain
// map over float types, and one whose float case runs a vectorized routine
// of cpu/gemm_vmath.h spread over the intra-op threads.
#pragma once
#include <utility>

#include "cpu/elementwise_loops.h"
#include "cpu/vm_parallel.h"
#include "kernels/dispatch.h"
#include "kernels/registry.h"

namespace onyx {

// y = f(x) on a float type: float and double directly, float16/bfloat16
// through float.
template <class F>
inline void map_float(const Tensor& x, Tensor& y, F f) {
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      ew::map_unary<T, T>(x, y, f);
    } else {
      ew::map_unary<T, T>(x, y, [f](T v) -> T { return T(f(static_cast<float>(v))); });
    }
  });
}

using VectorRoutine = void (*)(const float*, float*, int64_t);

// A unary op whose float case runs a vectorized routine of cpu/gemm_vmath.h
// over chunks spread across the intra-op threads; other float types go
// through a functor (generic over float/double). `pick(init_ctx)` returns
// both as a pair, so a node's attributes may choose the routine or bind its
// parameters (the routine: anything called as vec(x, y, n)).
template <class Pick>
KernelFactory vector_act_picked(Pick pick) {
  return lambda_factory([pick](const KernelInitContext& ic) {
    auto picked = pick(ic);
    auto vec = picked.first;
    auto f = picked.second;
    return [vec, f](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      if (x.dtype() == DataType::Float) {
        vm::parallel_map(ctx.thread_pool(), x.data<float>(), y.data<float>(), x.numel(), vec);
        return;
      }
      map_float(x, y, f);
    };
  });
}

// vector_act_picked with one routine for every node; `make(init_ctx)` returns the functor.
template <class Make>
KernelFactory vector_act(VectorRoutine vec, Make make) {
  return vector_act_picked([vec, make](const KernelInitContext& ic) { return std::make_pair(vec, make(ic)); });
}

}  // namespace onyx
