// Loop drivers shared by the elementwise, activation and cast kernels.
//
// - Compute<T>: the type arithmetic happens in (float for Float16/BFloat16).
// - map_unary: out[i] = op(in[i]) over contiguous memory.
// - map_binary: out = op(a, b) with numpy broadcasting. Dimensions are
//   coalesced first so that the innermost loop always walks each input with
//   stride 1 or 0 (scalar); that loop is a plain loop the compiler vectorizes.
//
// Files including this header build at -O3 -fno-math-errno -fno-trapping-math
// (src/CMakeLists.txt), so the op's lambda inlines into these loops and its
// selects vectorize. (A per-function optimize("O3") attribute here used to
// stop GCC inlining the lambda - mismatched options - leaving a call per
// element: LeakyRelu ran 16x slower than onnxruntime.)
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/kernel.h"
#include "onyx/dtype.h"
#include "onyx/tensor.h"

namespace onyx::ew {

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <class T>
struct ComputeOf {
  using type = T;
};
template <>
struct ComputeOf<Float16> {
  using type = float;
};
template <>
struct ComputeOf<BFloat16> {
  using type = float;
};
template <class T>
using Compute = typename ComputeOf<T>::type;

// Contiguous unary map.
template <class T, class R, class Op>
void map_unary_raw(const T* __restrict in, R* __restrict out, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) out[i] = op(in[i]);
}

// Outputs smaller than this run on the calling thread: waking the pool costs
// more than the loop.
constexpr int64_t kParallelElements = 1 << 15;
// Elements per task of a flat loop over the pool.
constexpr int64_t kParallelChunk = 4096;

// fn(begin, count) over [0, n) in pieces of kParallelChunk split over `pool` (null: the calling
// thread walks them all).
template <class F>
void for_each_chunk(ThreadPool* pool, int64_t n, F&& fn) {
  parallel_for(pool, (n + kParallelChunk - 1) / kParallelChunk, [&](int64_t c0, int64_t c1) {
    const int64_t b0 = c0 * kParallelChunk;
    fn(b0, std::min(n, c1 * kParallelChunk) - b0);
  });
}

// out = op(in) elementwise; large tensors in chunks over `pool` (with two threads a serial
// loop also reads half of its input from the other core's cache, where the op before wrote it).
template <class T, class R, class Op>
void map_unary(const Tensor& in, Tensor& out, Op op, ThreadPool* pool = nullptr) {
  const T* x = in.data<T>();
  R* y = out.data<R>();
  const int64_t n = in.numel();
  if (!pool || n < kParallelElements) return map_unary_raw<T, R>(x, y, n, op);
  for_each_chunk(pool, n, [&](int64_t b0, int64_t len) { map_unary_raw<T, R>(x + b0, y + b0, len, op); });
}

// Inner broadcast loop: SA / SB are the strides (0 or 1) of the two inputs.
template <int SA, int SB, class T, class U, class R, class Op>
void binary_inner(const T* __restrict a, const U* __restrict b, R* __restrict o, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) o[i] = op(a[i * SA], b[i * SB]);
}

template <int N, class T, class U, class R, class Op>
void binary_fixed(const T* __restrict a, const U* __restrict b, R* __restrict o, Op op) {
  for (int i = 0; i < N; ++i) o[i] = op(a[i], b[i]);
}

// A broadcast between two shapes, reduced to as few dimensions as possible.
struct BroadcastPlan {
  Shape out;                       // coalesced output dims
  std::vector<int64_t> sa, sb;     // element strides of a and b per coalesced dim (0 when broadcast)
};

inline BroadcastPlan plan_broadcast(const Shape& a, const Shape& b, const Shape& out) {
  const size_t r = out.size();
  std::vector<bool> fa(r), fb(r);  // input is "full" (not broadcast) on dim
  for (size_t i = 0; i < r; ++i) {
    size_t ia = i + a.size() - r, ib = i + b.size() - r;
    fa[i] = i + a.size() >= r && a[ia] != 1;
    fb[i] = i + b.size() >= r && b[ib] != 1;
  }
  BroadcastPlan p;
  std::vector<bool> pfa, pfb;
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    if (!p.out.empty() && pfa.back() == fa[i] && pfb.back() == fb[i]) {
      p.out.back() *= out[i];
    } else {
      p.out.push_back(out[i]);
      pfa.push_back(fa[i]);
      pfb.push_back(fb[i]);
    }
  }
  if (p.out.empty()) {
    p.out.push_back(1);
    pfa.push_back(true);
    pfb.push_back(true);
  }
  const size_t k = p.out.size();
  p.sa.assign(k, 0);
  p.sb.assign(k, 0);
  int64_t ca = 1, cb = 1;
  for (size_t i = k; i-- > 0;) {
    if (pfa[i]) {
      p.sa[i] = ca;
      ca *= p.out[i];
    }
    if (pfb[i]) {
      p.sb[i] = cb;
      cb *= p.out[i];
    }
  }
  return p;
}

// Rows [r0, r1) of a plan with two or more dims (a row: its innermost dim), in runs along the
// second-innermost dim: run(offset_a, offset_b, first_row, count) for rows first_row ..
// first_row + count - 1, which start at offset_a + j * sa[k - 2] (b alike). The index of r0 is
// decomposed once, then advanced a run at a time.
template <class F>
void for_each_row_run(const BroadcastPlan& p, int64_t r0, int64_t r1, F&& run) {
  const int k = static_cast<int>(p.out.size());
  const int64_t sa2 = p.sa[k - 2], sb2 = p.sb[k - 2];
  std::vector<int64_t> idx(k - 1, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t d = k - 2, rest = r0; d >= 0; --d) {
    idx[d] = rest % p.out[d];
    rest /= p.out[d];
    oa += idx[d] * p.sa[d];
    ob += idx[d] * p.sb[d];
  }
  for (int64_t r = r0; r < r1;) {
    const int64_t count = std::min(r1 - r, p.out[k - 2] - idx[k - 2]);
    run(oa, ob, r, count);
    r += count;
    idx[k - 2] += count;
    oa += sa2 * count;
    ob += sb2 * count;
    for (int d = k - 2; d >= 0 && idx[d] >= p.out[d]; --d) {
      oa -= p.sa[d] * p.out[d];
      ob -= p.sb[d] * p.out[d];
      idx[d] = 0;
      if (d == 0) break;
      ++idx[d - 1];
      oa += p.sa[d - 1];
      ob += p.sb[d - 1];
    }
  }
}

// The broadcast of shapes a and b into out in contiguous pieces, split over `pool` when out is
// large: run(offset_a, stride_a, offset_b, stride_b, offset_out, count) with strides 0 or 1, for
// kernels that bring their own vector loop for a piece (the 8-bit QLinearAdd / QLinearMul).
template <class F>
void for_each_broadcast_piece(const Shape& a, const Shape& b, const Shape& out, ThreadPool* pool, F&& run) {
  const int64_t n = shape_numel(out);
  if (n == 0) return;
  if (n < kParallelElements) pool = nullptr;
  const BroadcastPlan p = plan_broadcast(a, b, out);
  const int k = static_cast<int>(p.out.size());
  const int64_t inner = p.out[k - 1], ia = p.sa[k - 1], ib = p.sb[k - 1];
  if (k == 1) {
    for_each_chunk(pool, n, [&](int64_t b0, int64_t len) { run(b0 * ia, ia, b0 * ib, ib, b0, len); });
    return;
  }
  const int64_t sa2 = p.sa[k - 2], sb2 = p.sb[k - 2];
  parallel_for(pool, n / inner, [&](int64_t r0, int64_t r1) {
    for_each_row_run(p, r0, r1, [&](int64_t oa, int64_t ob, int64_t r, int64_t count) {
      for (int64_t j = 0; j < count; ++j) run(oa + j * sa2, ia, ob + j * sb2, ib, (r + j) * inner, inner);
    });
  });
}

// out = op(a, b) with numpy broadcasting; `out` must already have the
// broadcast shape. T, U: input element types; R: output element type.
// The output is walked in rows of the innermost coalesced dimension; with a
// pool and a large output the rows are split over its threads. Rows of 8 or
// 16 (a blocked channel vector times a per-channel scale, as in
// squeeze-and-excitation blocks) get a fixed-length loop: the generic one
// spent more time on its own setup than on the 16 elements.
template <class T, class U, class R, class Op>
void map_binary_raw(const T* pa, const Shape& as, const U* pb, const Shape& bs, R* po, const Shape& os, Op op,
                    ThreadPool* pool = nullptr) {
  const int64_t n = shape_numel(os);
  if (n == 0) return;
  if (!pool || n < kParallelElements) {
    // Small outputs with no real broadcast (an input of the output's size is
    // laid out as the output) or a scalar: no plan to build. In a loop body
    // run thousands of times the plan's allocations cost more than the math.
    const int64_t na = shape_numel(as), nb = shape_numel(bs);
    if (na == n && nb == n) return binary_inner<1, 1>(pa, pb, po, n, op);
    if (na == n && nb == 1) return binary_inner<1, 0>(pa, pb, po, n, op);
    if (na == 1 && nb == n) return binary_inner<0, 1>(pa, pb, po, n, op);
  }
  BroadcastPlan p = plan_broadcast(as, bs, os);
  const int k = static_cast<int>(p.out.size());
  const int64_t inner = p.out[k - 1];
  const int64_t ia = p.sa[k - 1], ib = p.sb[k - 1];
  auto run_inner = [&](const T* a, const U* b, R* o) {
    if (ia && ib) {
      if (inner == 16) binary_fixed<16>(a, b, o, op);
      else if (inner == 8) binary_fixed<8>(a, b, o, op);
      else binary_inner<1, 1>(a, b, o, inner, op);
    } else if (ia) {
      binary_inner<1, 0>(a, b, o, inner, op);
    } else if (ib) {
      binary_inner<0, 1>(a, b, o, inner, op);
    } else {
      binary_inner<0, 0>(a, b, o, inner, op);
    }
  };
  if (k == 1 && (!pool || n < kParallelElements)) {
    run_inner(pa, pb, po);
    return;
  }
  // `count` rows along the second-innermost dimension, which steps a and b
  // by sa2 / sb2: the loop kind is chosen once, not per row.
  const int64_t sa2 = k > 1 ? p.sa[k - 2] : 0, sb2 = k > 1 ? p.sb[k - 2] : 0;
  auto run_rows = [&](const T* a, const U* b, R* o, int64_t count) {
    if (ia && ib && inner == 16) {
      for (int64_t j = 0; j < count; ++j) binary_fixed<16>(a + j * sa2, b + j * sb2, o + j * 16, op);
    } else if (ia && ib && inner == 8) {
      for (int64_t j = 0; j < count; ++j) binary_fixed<8>(a + j * sa2, b + j * sb2, o + j * 8, op);
    } else {
      for (int64_t j = 0; j < count; ++j) run_inner(a + j * sa2, b + j * sb2, o + j * inner);
    }
  };
  auto rows = [&](int64_t r0, int64_t r1) {
    if (k == 1) return run_inner(pa, pb, po);  // the only row
    for_each_row_run(p, r0, r1, [&](int64_t oa, int64_t ob, int64_t r, int64_t count) {
      run_rows(pa + oa, pb + ob, po + r * inner, count);
    });
  };
  const int64_t nrows = n / inner;
  if (!pool || n < kParallelElements) {
    rows(0, nrows);
  } else if (k == 1) {
    for_each_chunk(pool, n, [&](int64_t b0, int64_t len) {
      if (ia && ib) binary_inner<1, 1>(pa + b0, pb + b0, po + b0, len, op);
      else if (ia) binary_inner<1, 0>(pa + b0, pb, po + b0, len, op);
      else if (ib) binary_inner<0, 1>(pa, pb + b0, po + b0, len, op);
      else binary_inner<0, 0>(pa, pb, po + b0, len, op);
    });
  } else {
    parallel_for(pool, nrows, rows);
  }
}

template <class T, class U, class R, class Op>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, Op op, ThreadPool* pool = nullptr) {
  map_binary_raw<T, U, R>(a.data<T>(), a.shape(), b.data<U>(), b.shape(), out.data<R>(), out.shape(), op, pool);
}

// Wraps a compute-type unary function so it reads and writes T (converting
// 16-bit floats through float).
template <class T, class F>
auto via_compute(F f) {
  return [f](T x) -> T { return T(f(static_cast<Compute<T>>(x))); };
}

}  // namespace onyx::ew

// ---------------------------------------------------------------------------
// Branch-free float approximations that vectorize (used on float fast paths).
namespace onyx::ew {

// exp(x) for float, ~1-2 ulp on [-87, 88]; saturates to +inf above 88.37 and
// to 0 below -87.33 (no subnormal results).
inline float fast_expf(float x) {
  const float hi = 88.37f, lo = -87.33f;  // keeps 2^n a normal float
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float t = xc * 1.44269504088896341f + shifter;
  float n = t - shifter;
  float r = xc - n * 0.693145751953125f;  // ln2, split in two for accuracy
  r = r - n * 1.428606765330187045e-06f;
  // Taylor series of e^r on |r| <= ln2/2 (degree 7: truncation < 1e-8).
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t ni;
  std::memcpy(&ni, &t, 4);
  ni -= 0x4B400000;  // bits of the shifter: leaves the integer n
  int32_t bits = (ni + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  float res = p * scale;
  res = x > hi ? std::numeric_limits<float>::infinity() : res;
  res = x < lo ? 0.0f : res;
  res = x != x ? x : res;
  return res;
}

inline float fast_sigmoidf(float x) { return 1.0f / (1.0f + fast_expf(-x)); }

// exp(x) - 1 without the cancellation near 0: Taylor series for |x| < 0.5
// (degree 9, truncation < 3e-10), else fast_expf(x) - 1. Elu, Selu, Celu.
inline float fast_expm1f(float x) {
  float p = 1.0f / 362880.0f;
  p = p * x + 1.0f / 40320.0f;
  p = p * x + 1.0f / 5040.0f;
  p = p * x + 1.0f / 720.0f;
  p = p * x + 1.0f / 120.0f;
  p = p * x + 1.0f / 24.0f;
  p = p * x + 1.0f / 6.0f;
  p = p * x + 0.5f;
  p = p * x * x + x;
  const float ax = x < 0 ? -x : x;
  return ax < 0.5f ? p : fast_expf(x) - 1.0f;
}

// tanh: odd Taylor series for |x| < 0.3125, else (1 - e) / (1 + e), e = exp(-2|x|).
inline float fast_tanhf(float x) {
  float ax = x < 0 ? -x : x;
  float x2 = x * x;
  float s = 21844.0f / 6081075.0f;
  s = s * x2 - 1382.0f / 155925.0f;
  s = s * x2 + 62.0f / 2835.0f;
  s = s * x2 - 17.0f / 315.0f;
  s = s * x2 + 2.0f / 15.0f;
  s = s * x2 - 1.0f / 3.0f;
  s = s * x2 * x + x;
  float e = fast_expf(-2.0f * ax);
  float l = (1.0f - e) / (1.0f + e);
  l = x < 0 ? -l : l;
  return ax < 0.3125f ? s : l;
}

// erf: Maclaurin series for |x| < 1, else 1 - erfc with the Abramowitz-Stegun
// 7.1.26 form (absolute error < 1.5e-7).
inline float fast_erff(float x) {
  float ax = x < 0 ? -x : x;
  float x2 = x * x;
  // 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)), n = 0..11
  float s = -1.0f / (39916800.0f * 23.0f);
  s = s * x2 + 1.0f / (3628800.0f * 21.0f);
  s = s * x2 - 1.0f / (362880.0f * 19.0f);
  s = s * x2 + 1.0f / (40320.0f * 17.0f);
  s = s * x2 - 1.0f / (5040.0f * 15.0f);
  s = s * x2 + 1.0f / (720.0f * 13.0f);
  s = s * x2 - 1.0f / (120.0f * 11.0f);
  s = s * x2 + 1.0f / (24.0f * 9.0f);
  s = s * x2 - 1.0f / (6.0f * 7.0f);
  s = s * x2 + 1.0f / (2.0f * 5.0f);
  s = s * x2 - 1.0f / 3.0f;
  s = s * x2 + 1.0f;
  s = s * x * 1.12837916709551257f;
  float xa = ax > 6.0f ? 6.0f : ax;
  float t = 1.0f / (1.0f + 0.3275911f * xa);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  q = q * t;
  float l = 1.0f - q * fast_expf(-xa * xa);
  l = x < 0 ? -l : l;
  float res = ax < 1.0f ? s : l;
  res = x != x ? x : res;
  return res;
}

}  // namespace onyx::ew
