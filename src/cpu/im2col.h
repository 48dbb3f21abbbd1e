// The column matrix of a convolution's input (im2col) and the valid output
// range of one tap, shared by Conv's GEMM path, ConvTranspose's col2im and
// the pointwise GEMMs (cpu/pointwise_conv.h), whose strided form is an
// im2col with one tap.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/conv_geometry.h"

namespace onyx {

// Valid range [lo, hi) of o with 0 <= o*s + off < n.
inline void valid_range(int64_t count, int64_t s, int64_t off, int64_t n, int64_t& lo, int64_t& hi) {
  auto ceil_div = [](int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };  // b > 0
  lo = std::min<int64_t>(count, std::max<int64_t>(0, ceil_div(-off, s)));
  hi = std::min<int64_t>(count, std::max<int64_t>(0, ceil_div(n - off, s)));
  if (hi < lo) hi = lo;
}

// col[(c*kprod + k), o] = x[c, o*s + k*d - pb] (0 outside); x is [C, in...].
template <class T>
void im2col(const T* x, int64_t C, const SpatialGeometry& g, T* col, ThreadPool* pool) {
  const int nd = g.nd;
  const int64_t kprod = g.kernel_size(), os = g.out_size(), is = g.in_size();
  const int64_t out_last = g.out[nd - 1], in_last = g.in[nd - 1];
  const int64_t outer = os / std::max<int64_t>(out_last, 1);
  parallel_for(os * kprod * C > (1 << 16) ? pool : nullptr, C * kprod, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> kk(nd), oi(nd, 0);
    for (int64_t r = r0; r < r1; ++r) {
      int64_t c = r / kprod, kidx = r % kprod;
      for (int d = nd - 1; d >= 0; --d) {
        kk[d] = kidx % g.kernel[d];
        kidx /= g.kernel[d];
      }
      const T* xc = x + c * is;
      T* dst = col + r * os;
      const int64_t s = g.strides[nd - 1];
      const int64_t off_last = kk[nd - 1] * g.dilations[nd - 1] - g.pad_begin[nd - 1];
      int64_t lo, hi;
      valid_range(out_last, s, off_last, in_last, lo, hi);
      std::fill(oi.begin(), oi.end(), 0);
      for (int64_t op = 0; op < outer; ++op) {
        bool valid = true;
        int64_t off = 0;
        for (int d = 0; d < nd - 1; ++d) {
          int64_t id = oi[d] * g.strides[d] + kk[d] * g.dilations[d] - g.pad_begin[d];
          if (id < 0 || id >= g.in[d]) valid = false;
          off = off * g.in[d] + id;
        }
        T* drow = dst + op * out_last;
        if (!valid) {
          std::fill(drow, drow + out_last, T(0));
        } else {
          const T* xrow = xc + off * in_last + off_last;
          std::fill(drow, drow + lo, T(0));
          if (s == 1) {
            if (hi > lo) std::memcpy(drow + lo, xrow + lo, (hi - lo) * sizeof(T));
          } else {
            for (int64_t o = lo; o < hi; ++o) drow[o] = xrow[o * s];
          }
          std::fill(drow + hi, drow + out_last, T(0));
        }
        for (int d = nd - 2; d >= 0; --d) {
          if (++oi[d] < g.out[d]) break;
          oi[d] = 0;
        }
      }
    }
  });
}

}  // namespace onyx
