// Assorted com.microsoft contrib ops that ONNX Runtime's CPU provider runs and
// that exporters emit: CDist (skl2onnx's KNN 'cdist' optimization), Inverse
// (tf2onnx's matrix inverse), MurmurHash3 (skl2onnx's FeatureHasher),
// MatMulInteger16, and old tf2onnx's Unique and ExpandDims.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"
#include "cpu/matmul_plan.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

const char* const kMsDomain = "com.microsoft";

// ---- CDist ----

// ORT computes (-2 * A B^T + |a|^2) + |b|^2 with a GEMM and takes the absolute
// value (rounding can leave a tiny negative); we do the same, so that the
// cancellation error for near-coincident points, and the ranking of neighbors
// it can flip, is the same as ORT's.
template <class T>
void cdist_squared(const T* a, const T* b, T* c, int64_t n, int64_t m, int64_t k, ThreadPool* pool) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(false, true, n, m, k, -2.f, a, k, b, k, 0.f, c, m, pool);
  } else {
    gemm_ref<T>(false, true, n, m, k, T(-2), a, k, b, k, T(0), c, m);
  }
  auto squared_norm = [k](const T* row) {
    T s = 0;
    for (int64_t i = 0; i < k; ++i) s += row[i] * row[i];
    return s;
  };
  std::vector<T> b_norm(static_cast<size_t>(m));
  for (int64_t j = 0; j < m; ++j) b_norm[j] = squared_norm(b + j * k);
  for (int64_t i = 0; i < n; ++i) {
    const T a_norm = squared_norm(a + i * k);
    for (int64_t j = 0; j < m; ++j) c[i * m + j] = std::abs((c[i * m + j] + a_norm) + b_norm[j]);
  }
}

void run_cdist(KernelContext& ctx, bool euclidean) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  const std::string shapes = shape_to_string(A.shape()) + " and " + shape_to_string(B.shape());
  ONYX_KERNEL_CHECK(A.rank() == 2 && B.rank() == 2, "CDist: A and B must be 2-D, got " + shapes);
  ONYX_KERNEL_CHECK(A.dim(1) == B.dim(1), "CDist: A and B must have the same number of columns, got " + shapes);
  ONYX_KERNEL_CHECK(B.dtype() == A.dtype(),
                    "CDist: B type " + dtype_name(B.dtype()) + " differs from A type " + dtype_name(A.dtype()));
  if (A.dtype() != DataType::Float && A.dtype() != DataType::Double)
    kernel_fail("CDist: A must be float or double, got " + dtype_name(A.dtype()));
  const int64_t n = A.dim(0), m = B.dim(0), k = A.dim(1);
  Tensor& C = ctx.allocate_output(0, A.dtype(), {n, m});
  if (n * m == 0) return;
  dispatch_float(A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* c = C.data<T>();
      cdist_squared(A.data<T>(), B.data<T>(), c, n, m, k, ctx.thread_pool());
      if (euclidean)
        for (int64_t i = 0; i < n * m; ++i) c[i] = std::sqrt(c[i]);
    }
  });
}

// ---- Inverse ----

// One n x n row-major matrix inverted in place of `x` through LU with partial
// pivoting, in Eigen's order (ORT calls Eigen's inverse(), a PartialPivLU for
// run-time sizes): the pivot is the first largest |value| of the column; a
// zero pivot column is left undivided, and the triangular solves multiply by
// the reciprocal of each diagonal value, so a singular matrix gives the same
// inf/nan pattern as ORT rather than an error.
template <class C>
class LuInverse {
 public:
  explicit LuInverse(int64_t n) : n_(n), lu_(static_cast<size_t>(n * n)), pivot_(static_cast<size_t>(n)) {}

  void invert(const C* in, C* out) {
    std::copy(in, in + n_ * n_, lu_.begin());
    factor();
    solve_identity(out);
  }

 private:
  C& lu(int64_t r, int64_t c) { return lu_[r * n_ + c]; }

  void factor() {
    for (int64_t k = 0; k < n_; ++k) {
      int64_t p = k;
      for (int64_t r = k + 1; r < n_; ++r)
        if (std::abs(lu(r, k)) > std::abs(lu(p, k))) p = r;
      pivot_[k] = p;
      if (lu(p, k) != C(0)) {
        if (p != k)
          for (int64_t c = 0; c < n_; ++c) std::swap(lu(k, c), lu(p, c));
        for (int64_t r = k + 1; r < n_; ++r) lu(r, k) /= lu(k, k);
      }
      for (int64_t r = k + 1; r < n_; ++r)
        for (int64_t c = k + 1; c < n_; ++c) lu(r, c) -= lu(r, k) * lu(k, c);
    }
  }

  // out = U^-1 L^-1 P I, a column of the identity at a time.
  void solve_identity(C* out) {
    std::vector<C> col(static_cast<size_t>(n_));
    for (int64_t j = 0; j < n_; ++j) {
      std::fill(col.begin(), col.end(), C(0));
      col[j] = C(1);
      for (int64_t k = 0; k < n_; ++k) std::swap(col[k], col[pivot_[k]]);
      for (int64_t i = 0; i < n_; ++i) {  // unit lower triangle
        C sum = 0;
        for (int64_t m = 0; m < i; ++m) sum += lu(i, m) * col[m];
        col[i] -= sum;
      }
      for (int64_t i = n_ - 1; i >= 0; --i) {  // upper triangle
        C sum = 0;
        for (int64_t m = i + 1; m < n_; ++m) sum += lu(i, m) * col[m];
        col[i] = (col[i] - sum) * (C(1) / lu(i, i));
      }
      for (int64_t i = 0; i < n_; ++i) out[i * n_ + j] = col[i];
    }
  }

  int64_t n_;
  std::vector<C> lu_;
  std::vector<int64_t> pivot_;
};

void run_inverse(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  ONYX_KERNEL_CHECK(X.rank() >= 2, "Inverse: X must have rank >= 2, got " + shape_to_string(X.shape()));
  ONYX_KERNEL_CHECK(X.dim(-1) == X.dim(-2),
                    "Inverse: the last two dimensions of X must be equal, got " + shape_to_string(X.shape()));
  if (X.dtype() != DataType::Float && X.dtype() != DataType::Double && X.dtype() != DataType::Float16)
    kernel_fail("Inverse: X must be float, double or float16, got " + dtype_name(X.dtype()));
  Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
  const int64_t n = X.dim(-1);
  const int64_t batches = n == 0 ? 0 : X.numel() / (n * n);
  dispatch_float(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;  // float16 computes in float
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    parallel_for(ctx.thread_pool(), batches, [&](int64_t b0, int64_t b1) {
      LuInverse<C> inv(n);
      std::vector<C> in(static_cast<size_t>(n * n)), out(in.size());
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t off = b * n * n;
        for (int64_t i = 0; i < n * n; ++i) in[i] = static_cast<C>(x[off + i]);
        inv.invert(in.data(), out.data());
        for (int64_t i = 0; i < n * n; ++i) y[off + i] = static_cast<T>(out[i]);
      }
    });
  });
}

// ---- MurmurHash3 ----

// MurmurHash3_x86_32 (Austin Appleby's public-domain algorithm) of `len`
// bytes; blocks are read little-endian, as on the hosts we build for.
uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

uint32_t murmur_scramble(uint32_t k) {
  k *= 0xcc9e2d51u;
  k = rotl32(k, 15);
  return k * 0x1b873593u;
}

uint32_t murmur3_x86_32(const uint8_t* data, size_t len, uint32_t seed) {
  uint32_t h = seed;
  const size_t blocks = len / 4;
  for (size_t i = 0; i < blocks; ++i) {
    uint32_t k;
    std::memcpy(&k, data + 4 * i, 4);
    h ^= murmur_scramble(k);
    h = rotl32(h, 13) * 5 + 0xe6546b64u;
  }
  const uint8_t* tail = data + 4 * blocks;
  uint32_t k = 0;
  for (size_t i = len & 3; i > 0; --i) k = (k << 8) | tail[i - 1];
  if (len & 3) h ^= murmur_scramble(k);
  h ^= static_cast<uint32_t>(len);
  h ^= h >> 16;  // final avalanche (fmix32)
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}

void run_murmur_hash3(KernelContext& ctx, uint32_t seed, bool positive) {
  const Tensor& X = ctx.input(0);
  const DataType t = X.dtype();
  const bool numeric = t == DataType::Int32 || t == DataType::UInt32 || t == DataType::Int64 ||
                       t == DataType::UInt64 || t == DataType::Float || t == DataType::Double;
  if (!numeric && t != DataType::String)
    kernel_fail("MurmurHash3: X must be int32, uint32, int64, uint64, float, double or string, got " + dtype_name(t));
  // The hash's bits either way: uint32 when positive, else the same bits as int32.
  Tensor& Y = ctx.allocate_output(0, positive ? DataType::UInt32 : DataType::Int32, X.shape());
  uint32_t* y = static_cast<uint32_t*>(Y.raw());
  if (t == DataType::String) {
    const std::string* x = X.data<std::string>();
    for (int64_t i = 0; i < X.numel(); ++i)
      y[i] = murmur3_x86_32(reinterpret_cast<const uint8_t*>(x[i].data()), x[i].size(), seed);
    return;
  }
  const size_t width = dtype_size(t);
  const uint8_t* x = static_cast<const uint8_t*>(X.raw());
  parallel_for(X.numel() >= (1 << 14) ? ctx.thread_pool() : nullptr, X.numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = murmur3_x86_32(x + i * width, width, seed);
  });
}

// ---- MatMulInteger16 ----

// ORT's CPU kernel takes int16 x int16 -> int32 only (the schema also lists
// uint16, which no ORT kernel implements). Sums wrap modulo 2^32 as the spec
// allows ("the accumulation may overflow ... in 32 bits"); uint32 makes that defined.
void run_matmul_integer16(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  ONYX_KERNEL_CHECK(A.dtype() == DataType::Int16 && B.dtype() == DataType::Int16,
                    "MatMulInteger16: A and B must be int16 (ORT has no uint16 kernel), got " + dtype_name(A.dtype()) +
                        " and " + dtype_name(B.dtype()));
  ONYX_KERNEL_CHECK(A.rank() >= 1 && B.rank() >= 1,
                    "MatMulInteger16: A and B must have rank >= 1, got " + shape_to_string(A.shape()) + " and " +
                        shape_to_string(B.shape()));
  const int64_t b_rows = B.rank() == 1 ? B.dim(0) : B.dim(-2);
  ONYX_KERNEL_CHECK(A.dim(-1) == b_rows, "MatMulInteger16: inner dimensions differ: " + shape_to_string(A.shape()) +
                                             " x " + shape_to_string(B.shape()));
  const MatMulPlan p = plan_matmul(A.shape(), B.shape());
  Tensor& Y = ctx.allocate_output(0, DataType::Int32, p.out_shape);
  const int16_t* a = A.data<int16_t>();
  const int16_t* b = B.data<int16_t>();
  uint32_t* y = static_cast<uint32_t*>(Y.raw());
  const int64_t rows = p.batches * p.M;
  parallel_for(rows * p.N * p.K >= (1 << 16) ? ctx.thread_pool() : nullptr, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t batch = r / p.M, i = r % p.M;
      const int16_t* arow = a + p.a_off[batch] + i * p.K;
      const int16_t* bmat = b + p.b_off[batch];
      uint32_t* yrow = y + r * p.N;
      std::fill(yrow, yrow + p.N, 0u);
      for (int64_t k = 0; k < p.K; ++k) {
        const int32_t av = arow[k];
        const int16_t* brow = bmat + k * p.N;
        for (int64_t j = 0; j < p.N; ++j) yrow[j] += static_cast<uint32_t>(av * static_cast<int32_t>(brow[j]));
      }
    }
  });
}

// ---- Unique ----

// The key a value is deduplicated by: float16 and bfloat16 compare as floats;
// -0 and +0 are one value (the first seen is kept).
template <class T>
auto unique_key(const T& v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return unique_key(static_cast<float>(v));
  else if constexpr (std::is_floating_point_v<T>) return v == T(0) ? T(0) : v;
  else return v;
}

template <class T>
bool is_nan_value(const T& v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return std::isnan(static_cast<float>(v));
  else if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

void run_unique(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  ONYX_KERNEL_CHECK(X.rank() == 1, "Unique: x must be 1-D, got " + shape_to_string(X.shape()));
  const int64_t n = X.dim(0);
  dispatch_all(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Key = decltype(unique_key(std::declval<T>()));
    const T* x = X.data<T>();
    std::unordered_map<Key, int64_t> slot_of;
    std::vector<int64_t> first, counts, idx(static_cast<size_t>(n));  // first: where each unique value first occurs
    for (int64_t i = 0; i < n; ++i) {
      // NaN equals nothing, not even itself: each NaN is a value of its own, as in ORT.
      auto [it, fresh] = is_nan_value(x[i]) ? std::pair{slot_of.end(), true}
                                            : slot_of.try_emplace(unique_key(x[i]), int64_t(first.size()));
      const int64_t slot = fresh ? static_cast<int64_t>(first.size()) : it->second;
      if (fresh) {
        first.push_back(i);
        counts.push_back(0);
      }
      ++counts[slot];
      idx[i] = slot;
    }
    const int64_t u = static_cast<int64_t>(first.size());
    Tensor& Y = ctx.allocate_output(0, X.dtype(), {u});
    for (int64_t s = 0; s < u; ++s) Y.data<T>()[s] = x[first[s]];
    if (ctx.wants_output(1)) std::copy(idx.begin(), idx.end(), ctx.allocate_output(1, DataType::Int64, {n}).data<int64_t>());
    if (ctx.wants_output(2))
      std::copy(counts.begin(), counts.end(), ctx.allocate_output(2, DataType::Int64, {u}).data<int64_t>());
  });
}

// ---- ExpandDims ----

void run_expand_dims(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& axis_t = ctx.input(1);
  ONYX_KERNEL_CHECK(axis_t.dtype() == DataType::Int32,
                    "ExpandDims: axis must be int32, got " + dtype_name(axis_t.dtype()));
  ONYX_KERNEL_CHECK(axis_t.numel() == 1,
                    "ExpandDims: axis must hold one value, got shape " + shape_to_string(axis_t.shape()));
  const int64_t rank = X.rank();
  int64_t axis = axis_t.data<int32_t>()[0];
  ONYX_KERNEL_CHECK(axis >= -rank - 1 && axis <= rank, "ExpandDims: axis " + std::to_string(axis) +
                                                           " is out of range [" + std::to_string(-rank - 1) + ", " +
                                                           std::to_string(rank) + "] for rank " + std::to_string(rank));
  if (axis < 0) axis += rank + 1;
  Shape out = X.shape();
  out.insert(out.begin() + axis, 1);
  ctx.set_output(0, Value(X.reshaped(out)));  // same data, one more dimension
}

}  // namespace

void register_contrib_misc(KernelRegistry& r) {
  r.add("CDist", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          const std::string metric = ic.get_string("metric", "sqeuclidean");
          if (metric != "sqeuclidean" && metric != "euclidean")
            kernel_fail("CDist: metric must be \"sqeuclidean\" or \"euclidean\", got \"" + metric + "\"");
          const bool euclidean = metric == "euclidean";
          return [euclidean](KernelContext& ctx) { run_cdist(ctx, euclidean); };
        }),
        kMsDomain);
  r.add("Inverse", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) { return run_inverse; }), kMsDomain);
  r.add("MurmurHash3", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          // The seed attribute is an int; its low 32 bits seed the hash (-1 is 0xffffffff, as in ORT).
          const uint32_t seed = static_cast<uint32_t>(ic.get_int("seed", 0));
          const bool positive = ic.get_int("positive", 1) != 0;
          return [seed, positive](KernelContext& ctx) { run_murmur_hash3(ctx, seed, positive); };
        }),
        kMsDomain);
  r.add("MatMulInteger16", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) { return run_matmul_integer16; }),
        kMsDomain);
  r.add("Unique", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) { return run_unique; }), kMsDomain);
  r.add("ExpandDims", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) { return run_expand_dims; }),
        kMsDomain);
}

}  // namespace onyx
