// MatMul, Gemm, MatMulInteger, QLinearMatMul.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/float_values.h"
#include "cpu/gemm.h"
#include "cpu/matmul_plan.h"
#include "cpu/requantize_8bit.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {

MatMulPlan plan_matmul(const Shape& as, const Shape& bs, bool fold_batches) {
  if (as.empty() || bs.empty())
    kernel_fail("MatMul operands must have rank >= 1, got " + shape_to_string(as) + " and " + shape_to_string(bs));
  Shape a = as, b = bs;
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  MatMulPlan p;
  p.M = a[a.size() - 2];
  p.K = a[a.size() - 1];
  p.N = b[b.size() - 1];
  if (b[b.size() - 2] != p.K)
    kernel_fail("MatMul inner dimensions differ: " + shape_to_string(as) + " x " + shape_to_string(bs));
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape ob = broadcast_shapes({ab, bb});
  p.out_shape = ob;
  if (!a_vec) p.out_shape.push_back(p.M);
  if (!b_vec) p.out_shape.push_back(p.N);
  int64_t nb = shape_numel(ob);
  if (fold_batches && (bb.empty() || shape_numel(bb) == 1)) {
    if (ab == ob) {
      // B is one matrix: fold A's batch dims into M
      p.M *= nb;
      p.batches = 1;
      p.a_off = {0};
      p.b_off = {0};
      return p;
    }
  }
  p.batches = nb;
  p.a_off = broadcast_offsets(ab, ob);
  p.b_off = broadcast_offsets(bb, ob);
  for (auto& o : p.a_off) o *= p.M * p.K;
  for (auto& o : p.b_off) o *= p.K * p.N;
  return p;
}

std::vector<int32_t> subtract_zero_point(const Tensor& x, const Tensor* zp, bool per_row, const char* name) {
  std::vector<int32_t> out(static_cast<size_t>(x.numel()));
  if (x.dtype() != DataType::UInt8 && x.dtype() != DataType::Int8)
    kernel_fail(std::string(name) + " must be uint8 or int8, got " + dtype_name(x.dtype()));
  if (!zp || zp->numel() == 1) {
    int32_t z = zp ? static_cast<int32_t>(zp->int_at(0)) : 0;
    if (x.dtype() == DataType::UInt8) {
      const uint8_t* v = x.data<uint8_t>();
      for (int64_t i = 0, n_ = x.numel(); i < n_; ++i) out[i] = static_cast<int32_t>(v[i]) - z;
    } else {
      const int8_t* v = x.data<int8_t>();
      for (int64_t i = 0, n_ = x.numel(); i < n_; ++i) out[i] = static_cast<int32_t>(v[i]) - z;
    }
    return out;
  }
  if (zp->dtype() != x.dtype()) kernel_fail(std::string(name) + " zero point type differs from its input");
  Shape xs = x.shape(), zs = zp->shape();
  if (xs.size() == 1) xs.insert(per_row ? xs.begin() : xs.end(), 1);
  if (per_row && zs.size() == 1) zs.push_back(1);  // [M] -> [M, 1]
  // validate broadcastability into x
  if (zs.size() > xs.size()) kernel_fail(std::string(name) + " zero point shape " + shape_to_string(zp->shape()) + " does not fit");
  if (!broadcasts_to(zs, xs))
    kernel_fail(std::string(name) + " zero point shape " + shape_to_string(zp->shape()) + " does not match input " +
                shape_to_string(x.shape()));
  std::vector<int64_t> off = broadcast_offsets(zs, xs);
  for (int64_t i = 0; i < x.numel(); ++i)
    out[i] = static_cast<int32_t>(x.int_at(i)) - static_cast<int32_t>(zp->int_at(off[i]));
  return out;
}

void gemm_int32_exact(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const int32_t* A, int64_t lda,
                      const int32_t* B, int64_t ldb, int32_t* C, ThreadPool* pool) {
  if (M * N == 0) return;
  int64_t a_rows = trans_a ? K : M, a_cols = trans_a ? M : K, b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
  int64_t amax = 0;
  for (int64_t i = 0; i < a_rows; ++i)
    for (int64_t j = 0; j < a_cols; ++j) amax = std::max<int64_t>(amax, std::abs(A[i * lda + j]));
  std::vector<int64_t> col_sum(static_cast<size_t>(N), 0);
  for (int64_t i = 0; i < b_rows; ++i)
    for (int64_t j = 0; j < b_cols; ++j) col_sum[trans_b ? i : j] += std::abs(B[i * ldb + j]);
  int64_t bmax = *std::max_element(col_sum.begin(), col_sum.end());
  if (amax * bmax >= (int64_t{1} << 24)) {
    gemm_ref<int32_t, int32_t>(trans_a, trans_b, M, N, K, 1, A, lda, B, ldb, 0, C, N);
    return;
  }
  // every product and partial sum is an integer below 2^24: float is exact
  std::vector<float> af(static_cast<size_t>(a_rows * lda)), bf(static_cast<size_t>(b_rows * ldb));
  std::copy(A, A + af.size(), af.begin());
  std::copy(B, B + bf.size(), bf.begin());
  std::vector<float> cf(static_cast<size_t>(M * N));
  gemm_f32(trans_a, trans_b, M, N, K, 1.f, af.data(), lda, bf.data(), ldb, 0.f, cf.data(), N, pool);
  for (size_t i = 0; i < cf.size(); ++i) C[i] = static_cast<int32_t>(cf[i]);
}

void int_matmul(const MatMulPlan& p, const int32_t* a, const int32_t* b, int32_t* y, ThreadPool* pool) {
  for (int64_t i = 0; i < p.batches; ++i)
    gemm_int32_exact(false, false, p.M, p.N, p.K, a + p.a_off[i], p.K, b + p.b_off[i], p.N, y + i * p.M * p.N, pool);
}

namespace {

bool is_int8_type(DataType t) { return t == DataType::UInt8 || t == DataType::Int8; }

// zp's values when it is one value, or `count` values along dimension `dim`
// (-2: rows of A, -1: columns of B) with every other dimension 1; false for
// the shapes only the general path handles.
bool simple_zero_point(const Tensor* zp, const Tensor& x, int64_t count, int dim, std::vector<int32_t>& out,
                       const char* name) {
  out.clear();
  if (!zp) return true;
  if (zp->numel() == 1) {
    out.push_back(static_cast<int32_t>(zp->int_at(0)));
    return true;
  }
  if (zp->dtype() != x.dtype()) kernel_fail(std::string(name) + " zero point type differs from its input");
  if (zp->numel() != count) return false;
  const Shape& zs = zp->shape();
  for (int64_t d = 0; d < zp->rank(); ++d) {
    bool along = zp->rank() == 1 || d == zp->rank() + dim;
    if (!along && zs[d] != 1) return false;
  }
  for (int64_t i = 0; i < count; ++i) out.push_back(static_cast<int32_t>(zp->int_at(i)));
  return true;
}

}  // namespace

std::shared_ptr<const PackedInt8B> pack_constant_int8_b(const Tensor* b) {
  if (!b || b->rank() != 2 || b->numel() == 0 || !is_int8_type(b->dtype())) return nullptr;
  return std::make_shared<const PackedInt8B>(b->raw(), b->dtype() == DataType::Int8, b->dim(0), b->dim(1), b->dim(1),
                                             false);
}

namespace {

// What int8_matmul computes into: int32 sums, or floats sum * scale[n] +
// bias[n] (int8_matmul_to_float).
struct Int8MatMulOut {
  int32_t* sums = nullptr;
  float* y = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
};

void int8_matmul_into(const MatMulPlan& p, const Tensor& A, const Tensor* a_zp, const Tensor& B, const Tensor* b_zp,
                      const PackedInt8B* packed_b, const Int8MatMulOut& out, ThreadPool* pool, const char* a_name,
                      const char* b_name) {
  if (!is_int8_type(A.dtype())) kernel_fail(std::string(a_name) + " must be uint8 or int8, got " + dtype_name(A.dtype()));
  if (!is_int8_type(B.dtype())) kernel_fail(std::string(b_name) + " must be uint8 or int8, got " + dtype_name(B.dtype()));
  const int64_t rows = A.rank() == 1 ? 1 : A.dim(-2), cols = B.rank() == 1 ? 1 : B.dim(-1);
  std::vector<int32_t> za, zb;
  if (!simple_zero_point(a_zp, A, rows, -2, za, a_name) || !simple_zero_point(b_zp, B, cols, -1, zb, b_name)) {
    std::vector<int32_t> a = subtract_zero_point(A, a_zp, true, a_name);
    std::vector<int32_t> b = subtract_zero_point(B, b_zp, false, b_name);
    if (shape_numel(p.out_shape) == 0) return;
    if (out.sums) return int_matmul(p, a.data(), b.data(), out.sums);
    std::vector<int32_t> sums(static_cast<size_t>(shape_numel(p.out_shape)));
    int_matmul(p, a.data(), b.data(), sums.data());
    return int32_rows_to_float(sums.data(), shape_numel(p.out_shape) / p.N, p.N, p.N, out.scale, out.bias, out.y,
                               p.N);
  }
  if (shape_numel(p.out_shape) == 0) return;
  if (za.size() > 1 && p.M != rows) {  // A's batches folded into M
    std::vector<int32_t> per_row(static_cast<size_t>(p.M));
    for (int64_t m = 0; m < p.M; ++m) per_row[m] = za[m % rows];
    za.swap(per_row);
  }
  const auto* a = static_cast<const uint8_t*>(A.raw());
  const auto* b = static_cast<const uint8_t*>(B.raw());
  std::unique_ptr<PackedInt8B> own;
  int64_t own_off = -1;
  for (int64_t i = 0; i < p.batches; ++i) {
    const PackedInt8B* pb = packed_b;
    if (!pb) {
      if (!own || own_off != p.b_off[i]) {
        own = std::make_unique<PackedInt8B>(b + p.b_off[i], B.dtype() == DataType::Int8, p.K, p.N, p.N, false);
        own_off = p.b_off[i];
      }
      pb = own.get();
    }
    Int8A op{a + p.a_off[i], A.dtype() == DataType::Int8, p.K, false};
    const int64_t y_off = i * p.M * p.N;
    if (out.sums) int8_gemm(p.M, op, za, *pb, zb, out.sums + y_off, p.N, pool);
    else int8_gemm_to_float(p.M, op, za, *pb, zb, out.scale, out.bias, out.y + y_off, p.N, pool, int8_gemm_best_isa());
  }
}

}  // namespace

void int8_matmul(const MatMulPlan& p, const Tensor& A, const Tensor* a_zp, const Tensor& B, const Tensor* b_zp,
                 const PackedInt8B* packed_b, int32_t* y, ThreadPool* pool, const char* a_name, const char* b_name) {
  int8_matmul_into(p, A, a_zp, B, b_zp, packed_b, Int8MatMulOut{y}, pool, a_name, b_name);
}

void int8_matmul_to_float(const MatMulPlan& p, const Tensor& A, const Tensor* a_zp, float a_scale, const Tensor& B,
                          const Tensor* b_zp, const Tensor& b_scale, const PackedInt8B* packed_b, const float* bias,
                          float* y, ThreadPool* pool, const char* a_name, const char* b_name) {
  std::vector<float> scale(static_cast<size_t>(p.N));
  const float* bs = b_scale.data<float>();
  for (int64_t n = 0; n < p.N; ++n) scale[n] = a_scale * bs[b_scale.numel() == 1 ? 0 : n];
  int8_matmul_into(p, A, a_zp, B, b_zp, packed_b, Int8MatMulOut{nullptr, y, scale.data(), bias}, pool, a_name,
                   b_name);
}

namespace {

template <class T>
Tensor to_float(const Tensor& t) {
  Tensor f(DataType::Float, t.shape());
  const T* s = t.data<T>();
  float* d = f.data<float>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) d[i] = static_cast<float>(s[i]);
  return f;
}

void run_matmul(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  if (A.dtype() != B.dtype())
    kernel_fail("MatMul operand types differ: " + dtype_name(A.dtype()) + " and " + dtype_name(B.dtype()));
  MatMulPlan p = plan_matmul(A.shape(), B.shape());
  Tensor& Y = ctx.allocate_output(0, A.dtype(), p.out_shape);
  if (Y.numel() == 0) return;
  ThreadPool* pool = ctx.thread_pool();
  dispatch_numeric(A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t M = p.M, N = p.N, K = p.K;
    if constexpr (std::is_same_v<T, float>) {
      for (int64_t i = 0; i < p.batches; ++i)
        gemm_f32(false, false, M, N, K, 1.0f, A.data<float>() + p.a_off[i], K, B.data<float>() + p.b_off[i], N, 0.0f,
                 Y.data<float>() + i * M * N, N, pool);
    } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      Tensor af = to_float<T>(A), bf = to_float<T>(B);
      std::vector<float> yf(static_cast<size_t>(Y.numel()));
      for (int64_t i = 0; i < p.batches; ++i)
        gemm_f32(false, false, M, N, K, 1.0f, af.data<float>() + p.a_off[i], K, bf.data<float>() + p.b_off[i], N,
                 0.0f, yf.data() + i * M * N, N, pool);
      T* y = Y.data<T>();
      for (size_t i = 0; i < yf.size(); ++i) y[i] = T(yf[i]);
    } else {
      for (int64_t i = 0; i < p.batches; ++i)
        gemm_ref<T, T>(false, false, M, N, K, T(1), A.data<T>() + p.a_off[i], K, B.data<T>() + p.b_off[i], N, T(0),
                       Y.data<T>() + i * M * N, N);
    }
  });
}

// ---- Gemm ----

// Element offsets into C of each element of Y [M, N] (C unidirectionally
// broadcast to Y); fails when C does not broadcast.
std::vector<int64_t> gemm_c_offsets(const Tensor& C, int64_t M, int64_t N) {
  Shape out = {M, N};
  if (C.rank() > 2) kernel_fail("Gemm C must have rank <= 2, got " + shape_to_string(C.shape()));
  Shape cs = C.shape();
  Shape padded = cs;
  while (padded.size() < 2) padded.insert(padded.begin(), 1);
  if ((padded[0] != 1 && padded[0] != M) || (padded[1] != 1 && padded[1] != N))
    kernel_fail("Gemm C " + shape_to_string(cs) + " cannot broadcast to " + shape_to_string(out));
  return broadcast_offsets(cs, out);
}

// A C that is one row of N ([N] or [1, N]) with beta 1: the GEMM epilogue adds it as a bias,
// with no per-element offsets and no pass copying it into Y first.
bool is_bias_row(const Tensor* C, int64_t N, float beta) {
  return C && beta == 1.0f && C->numel() == N && (C->rank() < 2 || C->dim(0) == 1);
}

void run_gemm(KernelContext& ctx, bool ta, bool tb, float alpha, float beta) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  const Tensor* C = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (A.rank() != 2 || B.rank() != 2)
    kernel_fail("Gemm needs 2-D A and B, got " + shape_to_string(A.shape()) + " and " + shape_to_string(B.shape()));
  if (A.dtype() != B.dtype() || (C && C->dtype() != A.dtype())) kernel_fail("Gemm operand types differ");
  int64_t M = ta ? A.dim(1) : A.dim(0), K = ta ? A.dim(0) : A.dim(1);
  int64_t Kb = tb ? B.dim(1) : B.dim(0), N = tb ? B.dim(0) : B.dim(1);
  if (K != Kb)
    kernel_fail("Gemm inner dimensions differ: A " + shape_to_string(A.shape()) + (ta ? " (transposed)" : "") +
                ", B " + shape_to_string(B.shape()) + (tb ? " (transposed)" : ""));
  Shape out = {M, N};
  const bool float_bias_row = A.dtype() == DataType::Float && is_bias_row(C, N, beta);
  std::vector<int64_t> coff;
  if (C && !float_bias_row) coff = gemm_c_offsets(*C, M, N);
  Tensor& Y = ctx.allocate_output(0, A.dtype(), out);
  if (Y.numel() == 0) return;
  int64_t lda = A.dim(1), ldb = B.dim(1);
  if (float_bias_row) {
    GemmEpilogue epi;
    epi.bias = C->data<float>();
    gemm_f32(ta, tb, M, N, K, alpha, A.data<float>(), lda, B.data<float>(), ldb, 0.0f, Y.data<float>(), N,
             ctx.thread_pool(), epi);
    return;
  }
  dispatch_numeric(A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      std::vector<float> yf;
      float* y;
      if constexpr (std::is_same_v<T, float>) {
        y = Y.data<float>();
      } else {
        yf.resize(static_cast<size_t>(M * N));
        y = yf.data();
      }
      if (C) {
        const T* c = C->data<T>();
        for (int64_t i = 0; i < M * N; ++i) y[i] = static_cast<float>(c[coff[i]]);
      }
      Tensor af, bf;
      const float *a, *b;
      if constexpr (std::is_same_v<T, float>) {
        a = A.data<float>();
        b = B.data<float>();
      } else {
        af = to_float<T>(A);
        bf = to_float<T>(B);
        a = af.data<float>();
        b = bf.data<float>();
      }
      gemm_f32(ta, tb, M, N, K, alpha, a, lda, b, ldb, C ? beta : 0.0f, y, N, ctx.thread_pool());
      if constexpr (!std::is_same_v<T, float>) {
        T* yo = Y.data<T>();
        for (int64_t i = 0; i < M * N; ++i) yo[i] = T(yf[i]);
      }
    } else {
      T* y = Y.data<T>();
      if (C) {
        const T* c = C->data<T>();
        for (int64_t i = 0; i < M * N; ++i) y[i] = c[coff[i]];
      }
      using Acc = std::conditional_t<std::is_same_v<T, double>, double, T>;
      if constexpr (std::is_same_v<T, double>) {
        gemm_ref<T, Acc>(ta, tb, M, N, K, Acc(alpha), A.data<T>(), lda, B.data<T>(), ldb, C ? Acc(beta) : Acc(0), y, N);
      } else {
        // integer Gemm: alpha/beta applied in double, then truncated
        std::vector<double> acc(static_cast<size_t>(M * N), 0.0);
        const T* a = A.data<T>();
        const T* b = B.data<T>();
        for (int64_t i = 0; i < M; ++i)
          for (int64_t k = 0; k < K; ++k) {
            double av = static_cast<double>(ta ? a[k * lda + i] : a[i * lda + k]);
            for (int64_t j = 0; j < N; ++j)
              acc[i * N + j] += av * static_cast<double>(tb ? b[j * ldb + k] : b[k * ldb + j]);
          }
        for (int64_t i = 0; i < M * N; ++i)
          y[i] = static_cast<T>(alpha * acc[i] + (C ? beta * static_cast<double>(y[i]) : 0.0));
      }
    }
  });
}

// Gemm whose B is a constant 2-D float matrix: op(B) is packed for the GEMM
// once at init. A 1-D (or [1, N]) C with beta == 1 is added as the epilogue's
// bias; any other C is broadcast into Y first and scaled by beta.
class PackedGemmKernel final : public Kernel {
 public:
  PackedGemmKernel(const Tensor& b, bool ta, bool tb, float alpha, float beta)
      : shape_(b.shape()), ta_(ta), tb_(tb), alpha_(alpha), beta_(beta),
        packed_(gemm_pack_b(tb, tb ? b.dim(1) : b.dim(0), tb ? b.dim(0) : b.dim(1), b.data<float>(), b.dim(1))) {}
  void run(KernelContext& ctx) const override {
    const Tensor& A = ctx.input(0);
    const Tensor* C = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    // B's data is freed once packed: run_gemm's checks reject all of these before reading it.
    if (A.dtype() != DataType::Float || A.rank() != 2 || (C && C->dtype() != DataType::Float))
      return run_gemm(ctx, ta_, tb_, alpha_, beta_);
    const int64_t M = ta_ ? A.dim(1) : A.dim(0), K = ta_ ? A.dim(0) : A.dim(1), N = packed_.N();
    if (K != packed_.K()) return run_gemm(ctx, ta_, tb_, alpha_, beta_);  // reports the mismatch
    const bool bias_row = is_bias_row(C, N, beta_);
    // Offsets (M * N of them) only for a C that is not the bias row: a 128 x 3072 GPT-2 layer
    // spent 0.35 ms of 2.9 building 3 MB of them per run.
    std::vector<int64_t> coff;
    if (C && !bias_row) coff = gemm_c_offsets(*C, M, N);
    Tensor& Y = ctx.allocate_output(0, DataType::Float, {M, N});
    if (Y.numel() == 0) return;
    float* y = Y.data<float>();
    GemmEpilogue epi;
    float beta = 0.0f;
    if (bias_row) {
      epi.bias = C->data<float>();
    } else if (C) {
      const float* c = C->data<float>();
      for (int64_t i = 0; i < M * N; ++i) y[i] = c[coff[i]];
      beta = beta_;
    }
    gemm_f32_packed(ta_, M, alpha_, A.data<float>(), A.dim(1), packed_, beta, y, N, ctx.thread_pool(), epi);
  }

 private:
  Shape shape_;
  bool ta_, tb_;
  float alpha_, beta_;
  PackedB packed_;
};

std::unique_ptr<Kernel> make_gemm(const KernelInitContext& ic) {
  bool ta = ic.get_int("transA", 0) != 0, tb = ic.get_int("transB", 0) != 0;
  float alpha = ic.get_float("alpha", 1.0f), beta = ic.get_float("beta", 1.0f);
  const Tensor* b = ic.constant_input(1);
  if (b && b->dtype() == DataType::Float && b->rank() == 2 && b->numel() > 0) {
    ic.packed_constant(1);
    return std::make_unique<PackedGemmKernel>(*b, ta, tb, alpha, beta);
  }
  return std::make_unique<LambdaKernel>([=](KernelContext& ctx) { run_gemm(ctx, ta, tb, alpha, beta); });
}

// ---- integer matmuls ----

void run_matmul_integer(KernelContext& ctx, const PackedInt8B* packed_b) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  MatMulPlan p = plan_matmul(A.shape(), B.shape());
  Tensor& Y = ctx.allocate_output(0, DataType::Int32, p.out_shape);
  int8_matmul(p, A, ctx.has_input(2) ? &ctx.input(2) : nullptr, B, ctx.has_input(3) ? &ctx.input(3) : nullptr, packed_b,
              Y.data<int32_t>(), ctx.thread_pool(), "A", "B");
}

void run_qlinear_matmul(KernelContext& ctx, const PackedInt8B* packed_b) {
  const Tensor& A = ctx.input(0);
  const Tensor& as = ctx.input(1);
  const Tensor& B = ctx.input(3);
  const Tensor& bs = ctx.input(4);
  const Tensor& ys = ctx.input(6);
  const Tensor* yz = ctx.has_input(7) ? &ctx.input(7) : nullptr;
  MatMulPlan p = plan_matmul(A.shape(), B.shape());
  DataType out_type = yz ? yz->dtype() : A.dtype();
  if (out_type != DataType::UInt8 && out_type != DataType::Int8)
    kernel_fail("QLinearMatMul output must be uint8 or int8, got " + dtype_name(out_type));
  if (ys.numel() != 1) kernel_fail("QLinearMatMul y_scale must be a scalar");
  if (yz && yz->numel() != 1) kernel_fail("QLinearMatMul y_zero_point must be a scalar");
  int64_t rows = A.rank() == 1 ? 1 : A.dim(-2);
  int64_t cols = B.rank() == 1 ? 1 : B.dim(-1);
  if (as.numel() != 1 && as.numel() != rows)
    kernel_fail("QLinearMatMul a_scale must be a scalar or have one value per row of a");
  if (bs.numel() != 1 && bs.numel() != cols)
    kernel_fail("QLinearMatMul b_scale must be a scalar or have one value per column of b");
  std::vector<int32_t> acc(static_cast<size_t>(shape_numel(p.out_shape)));
  int8_matmul(p, A, ctx.has_input(2) ? &ctx.input(2) : nullptr, B, ctx.has_input(5) ? &ctx.input(5) : nullptr, packed_b,
              acc.data(), ctx.thread_pool(), "a", "b");
  Tensor& Y = ctx.allocate_output(0, out_type, p.out_shape);
  // ORT's requantization: float(acc) * (a_scale * b_scale / y_scale) in float, rounded half to
  // even, plus the zero point, saturated.
  const float y_scale = static_cast<float>(ys.float_at(0));
  const float zero = yz ? static_cast<float>(yz->int_at(0)) : 0.f;
  std::vector<float> a_scratch, b_scratch;
  const float* a_scales = float_values(as, a_scratch);
  const float* b_scales = float_values(bs, b_scratch);
  const int64_t a_count = as.numel(), b_step = bs.numel() == 1 ? 0 : 1;
  std::vector<float> mult(static_cast<size_t>(a_count * cols));  // per a-scale row, per column
  for (int64_t r = 0; r < a_count; ++r)
    for (int64_t c = 0; c < cols; ++c) mult[r * cols + c] = a_scales[r] * b_scales[c * b_step] / y_scale;
  auto* y8 = static_cast<uint8_t*>(Y.raw());
  const bool is_signed = out_type == DataType::Int8;
  const int64_t total_rows = static_cast<int64_t>(acc.size()) / std::max<int64_t>(cols, 1);
  if (as.numel() == 1) {
    requantize_rows_8bit(acc.data(), total_rows, cols, cols, nullptr, mult.data(), zero, is_signed, y8, cols);
  } else {
    for (int64_t i = 0; i < total_rows; ++i)
      requantize_rows_8bit(acc.data() + i * cols, 1, cols, cols, nullptr, mult.data() + (i % rows) * cols, zero,
                           is_signed, y8 + i * cols, cols);
  }
}

// MatMul whose B is a constant 2-D float matrix: B is packed for the GEMM
// once, and A's leading dimensions fold into M.
class PackedMatMulKernel final : public Kernel {
 public:
  explicit PackedMatMulKernel(const Tensor& b) : shape_(b.shape()), packed_(gemm_pack_b(false, b.dim(0), b.dim(1), b.data<float>(), b.dim(1))) {}
  void run(KernelContext& ctx) const override {
    const Tensor& A = ctx.input(0);
    // B's data is freed once packed; run_matmul rejects a non-float A before reading it.
    if (A.dtype() != DataType::Float) return run_matmul(ctx);
    MatMulPlan p = plan_matmul(A.shape(), shape_);
    Tensor& Y = ctx.allocate_output(0, DataType::Float, p.out_shape);
    if (Y.numel() == 0) return;
    gemm_f32_packed(false, p.M, 1.0f, A.data<float>(), p.K, packed_, 0.0f, Y.data<float>(), p.N, ctx.thread_pool());
  }

 private:
  Shape shape_;
  PackedB packed_;
};

std::unique_ptr<Kernel> make_matmul(const KernelInitContext& ic) {
  const Tensor* b = ic.constant_input(1);
  if (b && b->dtype() == DataType::Float && b->rank() == 2 && b->numel() > 0) {
    ic.packed_constant(1);
    return std::make_unique<PackedMatMulKernel>(*b);
  }
  return std::make_unique<LambdaKernel>(run_matmul);
}

// An integer matmul whose constant 2-D B (input kB) is packed once.
template <void (*Run)(KernelContext&, const PackedInt8B*), size_t kB>
std::unique_ptr<Kernel> make_int8_matmul(const KernelInitContext& ic) {
  std::shared_ptr<const PackedInt8B> packed = pack_constant_int8_b(ic.constant_input(kB));
  return std::make_unique<LambdaKernel>([packed](KernelContext& ctx) { Run(ctx, packed.get()); });
}

}  // namespace

void register_matmul(KernelRegistry& r) {
  r.add("MatMul", 1, kMaxOpset, make_matmul);
  r.add("Gemm", 1, kMaxOpset, make_gemm);
  r.add("MatMulInteger", 10, kMaxOpset, make_int8_matmul<run_matmul_integer, 1>);
  r.add("QLinearMatMul", 10, kMaxOpset, make_int8_matmul<run_qlinear_matmul, 3>);
}

}  // namespace onyx
