// Linear algebra beyond GEMM: Det.
#include <cmath>

#include "cpu/cpu_provider.h"
#include "kernels/dispatch.h"

namespace onyx {

namespace {

// Determinant by LU decomposition with partial pivoting, in double.
double determinant(std::vector<double>& a, int64_t n) {
  double det = 1.0;
  for (int64_t c = 0; c < n; ++c) {
    int64_t pivot = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[pivot * n + c])) pivot = r;
    if (a[pivot * n + c] == 0.0) return 0.0;
    if (pivot != c) {
      for (int64_t k = 0; k < n; ++k) std::swap(a[c * n + k], a[pivot * n + k]);
      det = -det;
    }
    det *= a[c * n + c];
    for (int64_t r = c + 1; r < n; ++r) {
      double f = a[r * n + c] / a[c * n + c];
      for (int64_t k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
    }
  }
  return det;
}

}  // namespace

void register_linalg(KernelRegistry& r) {
  r.add("Det", 11, kMaxOpset, lambda_factory([](const KernelInitContext&) {
          return [](KernelContext& ctx) {
            const Tensor& x = ctx.input(0);
            ONYX_KERNEL_CHECK(x.rank() >= 2 && x.dim(-1) == x.dim(-2),
                              "Det needs square matrices in the last two dims, got " + shape_to_string(x.shape()));
            int64_t n = x.dim(-1), count = x.numel() / std::max<int64_t>(1, n * n);
            Shape out_shape(x.shape().begin(), x.shape().end() - 2);
            dispatch_float(x.dtype(), [&](auto tag) {
              using T = typename decltype(tag)::type;
              Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
              std::vector<double> a(n * n);
              for (int64_t m = 0; m < count; ++m) {
                const T* src = x.data<T>() + m * n * n;
                for (int64_t k = 0; k < n * n; ++k) {
                  if constexpr (std::is_same_v<T, double>) a[k] = src[k];
                  else a[k] = static_cast<float>(src[k]);
                }
                double det = determinant(a, n);
                if constexpr (std::is_same_v<T, double>) y.data<T>()[m] = det;
                else y.data<T>()[m] = T(static_cast<float>(det));
              }
            });
          };
        }));
}

}  // namespace onyx
