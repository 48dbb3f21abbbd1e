// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D
// at `axis` (default 1) and the op runs over the flattened trailing part;
// from opset 13 it runs along the single dimension `axis` (default -1).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/gemm_vmath.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

enum class SoftKind { Softmax, LogSoftmax, Hardmax };

// Runs over [outer, n, inner]: reduction along the middle dimension.
template <class T, class Acc>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, SoftKind kind, ThreadPool* pool) {
  const int64_t rows = outer * inner;
  if constexpr (std::is_same_v<T, float>) {
    if (kind == SoftKind::Softmax && inner == 1) {  // contiguous rows: vectorized
      parallel_for(rows * n > 16384 ? pool : nullptr, rows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) vm::softmax(x + r * n, y + r * n, n);
      });
      return;
    }
    if (kind != SoftKind::Hardmax && inner > 1) {  // along a middle axis: vectorized across `inner`
      parallel_for(rows * n > 16384 ? pool : nullptr, outer, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o)
          vm::softmax_columns(x + o * n * inner, y + o * n * inner, n, inner, kind == SoftKind::LogSoftmax);
      });
      return;
    }
  }
  parallel_for(rows * n > 16384 ? pool : nullptr, rows, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> buf(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      int64_t o = r / inner, in = r % inner;
      const T* xr = x + o * n * inner + in;
      T* yr = y + o * n * inner + in;
      Acc mx = -std::numeric_limits<Acc>::infinity();
      int64_t arg = 0;
      for (int64_t i = 0; i < n; ++i) {
        Acc v = static_cast<Acc>(xr[i * inner]);
        buf[i] = v;
        if (i == 0 || v > mx) {
          mx = v;
          arg = i;
        }
      }
      if (kind == SoftKind::Hardmax) {
        for (int64_t i = 0; i < n; ++i) yr[i * inner] = T(i == arg ? 1.0f : 0.0f);
        continue;
      }
      Acc sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        Acc e = std::exp(buf[i] - mx);
        sum += e;
        if (kind == SoftKind::Softmax) buf[i] = e;
      }
      if (kind == SoftKind::Softmax) {
        Acc inv = Acc(1) / sum;
        for (int64_t i = 0; i < n; ++i) yr[i * inner] = T(buf[i] * inv);
      } else {
        Acc ls = std::log(sum);
        for (int64_t i = 0; i < n; ++i) yr[i * inner] = T((buf[i] - mx) - ls);
      }
    }
  });
}

KernelFactory make_softmax(SoftKind kind) {
  return [kind](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
    bool legacy = ic.opset() < 13;
    int64_t axis = ic.get_int("axis", legacy ? 1 : -1);
    return std::make_unique<LambdaKernel>([kind, legacy, axis](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      int64_t rank = X.rank();
      int64_t outer = 1, n = 1, inner = 1;
      if (rank == 0) {
        if (axis != 0 && axis != -1) kernel_fail("axis " + std::to_string(axis) + " is out of range for a scalar");
      } else {
        int64_t a = legacy ? (axis == rank ? rank : normalize_axis(axis, rank)) : normalize_axis(axis, rank);
        for (int64_t d = 0; d < a; ++d) outer *= X.dim(d);
        if (legacy) {
          for (int64_t d = a; d < rank; ++d) n *= X.dim(d);
        } else {
          n = X.dim(a);
          for (int64_t d = a + 1; d < rank; ++d) inner *= X.dim(d);
        }
      }
      Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
      if (Y.numel() == 0) return;
      dispatch_float(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
        softmax_rows<T, Acc>(X.data<T>(), Y.data<T>(), outer, n, inner, kind, ctx.thread_pool());
      });
    });
  };
}

}  // namespace

void register_softmax(KernelRegistry& r) {
  r.add("Softmax", 1, kMaxOpset, make_softmax(SoftKind::Softmax));
  r.add("LogSoftmax", 1, kMaxOpset, make_softmax(SoftKind::LogSoftmax));
  r.add("Hardmax", 1, kMaxOpset, make_softmax(SoftKind::Hardmax));
}

}  // namespace onyx
