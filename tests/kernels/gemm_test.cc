// The blocked GEMM (all paths: packed / in-place A, pre-packed B, epilogues,
// edge tiles, threads), the vector math helpers and the thread pool.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/gemm.h"
#include "cpu/gemm_vmath.h"

namespace onyx::test {
namespace {

std::vector<float> random_vec(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Reference in double: C = alpha op(A) op(B) + beta C + bias.
std::vector<float> reference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const std::vector<float>& A,
                             int64_t lda, const std::vector<float>& B, int64_t ldb, float beta, std::vector<float> C,
                             int64_t ldc, const float* bias) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(ta ? A[k * lda + i] : A[i * lda + k]) * double(tb ? B[j * ldb + k] : B[k * ldb + j]);
      double c = beta == 0.0f ? 0.0 : beta * double(C[i * ldc + j]);
      C[i * ldc + j] = float(alpha * acc + c + (bias ? bias[j] : 0.0f));
    }
  return C;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

struct Case {
  int64_t M, N, K;
};

TEST(Gemm, AllTransposesOddSizesAndThreads) {
  ThreadPool pool(2);
  const Case cases[] = {{1, 1, 1}, {7, 5, 3}, {8, 32, 256}, {9, 33, 257}, {130, 70, 300}, {64, 128, 128}, {3, 1000, 20}, {1, 70, 301},
                        {2, 33, 9}, {4, 50, 70},  // 2-4 rows: the half tile
                        {2, 96, 66}, {3, 20, 7},  // k-steps in flight, with a remainder
                        {5, 17, 23}, {1, 40, 6},  // AVX2: 5 of 6 rows; one row, its 4 sums and a remainder
                        {19, 40, 1030}};          // a second, partial K block (KC = 1024)
  unsigned seed = 1;
  for (const Case& c : cases)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          int64_t lda = (ta ? c.M : c.K) + 3, ldb = (tb ? c.K : c.N) + 1, ldc = c.N + 2;
          auto A = random_vec(size_t((ta ? c.K : c.M) * lda), seed++);
          auto B = random_vec(size_t((tb ? c.N : c.K) * ldb), seed++);
          auto C = random_vec(size_t(c.M * ldc), seed++);
          for (float beta : {0.0f, 1.0f, 0.5f}) {
            auto want = reference(ta, tb, c.M, c.N, c.K, 0.75f, A, lda, B, ldb, beta, C, ldc, nullptr);
            auto got = C;
            gemm_f32(ta, tb, c.M, c.N, c.K, 0.75f, A.data(), lda, B.data(), ldb, beta, got.data(), ldc, p);
            expect_close(got, want, 1e-4 * std::sqrt(double(c.K)) + 1e-5);
          }
        }
}

TEST(Gemm, BetaZeroIgnoresNaNInC) {
  std::vector<float> A = {1, 2, 3, 4}, B = {1, 0, 0, 1}, C(4, NAN);
  gemm_f32(false, false, 2, 2, 2, 1.0f, A.data(), 2, B.data(), 2, 0.0f, C.data(), 2);
  expect_close(C, {1, 2, 3, 4}, 0);
}

TEST(Gemm, PrePackedBWithBiasAndActivations) {
  ThreadPool pool(2);
  const Case cases[] = {{1, 3, 2}, {5, 40, 17}, {64, 384, 128}, {130, 96, 600}, {1, 1000, 515},
                        {1, 1000, 400}};  // under 1 MFLOP but 1.6 MB of B: split over threads
  unsigned seed = 100;
  for (const Case& c : cases)
    for (int tb = 0; tb < 2; ++tb)
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        int64_t ldb = tb ? c.K : c.N;
        auto A = random_vec(size_t(c.M * c.K), seed++);
        auto B = random_vec(size_t((tb ? c.N : c.K) * ldb), seed++);
        auto bias = random_vec(size_t(c.N), seed++);
        PackedB packed = gemm_pack_b(tb, c.K, c.N, B.data(), ldb);
        EXPECT_EQ(packed.K(), c.K);
        EXPECT_EQ(packed.N(), c.N);
        std::vector<float> C0(size_t(c.M * c.N), 0.0f);
        auto lin = reference(false, tb, c.M, c.N, c.K, 1.0f, A, c.K, B, ldb, 0.0f, C0, c.N, bias.data());
        for (GemmActivation act :
             {GemmActivation::None, GemmActivation::Relu, GemmActivation::Gelu, GemmActivation::GeluTanh}) {
          std::vector<float> want = lin;
          for (float& v : want) {
            if (act == GemmActivation::Relu) v = std::max(v, 0.0f);
            if (act == GemmActivation::Gelu) v = 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f)));
            if (act == GemmActivation::GeluTanh)
              v = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
          }
          std::vector<float> got(size_t(c.M * c.N), NAN);
          GemmEpilogue epi;
          epi.bias = bias.data();
          epi.activation = act;
          gemm_f32_packed(false, c.M, 1.0f, A.data(), c.K, packed, 0.0f, got.data(), c.N, p, epi);
          expect_close(got, want, 1e-4 * std::sqrt(double(c.K)) + 1e-5);
          // the same through the unpacked path
          std::vector<float> got2(size_t(c.M * c.N), NAN);
          gemm_f32(false, tb, c.M, c.N, c.K, 1.0f, A.data(), c.K, B.data(), ldb, 0.0f, got2.data(), c.N, p, epi);
          expect_close(got2, want, 1e-4 * std::sqrt(double(c.K)) + 1e-5);
        }
      }
}

float activate(float v, GemmActivation act) {
  switch (act) {
    case GemmActivation::None: return v;
    case GemmActivation::Relu: return std::max(v, 0.0f);
    case GemmActivation::Gelu: return 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f)));
    case GemmActivation::GeluTanh:
      return 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    case GemmActivation::Swish: return v / (1.0f + std::exp(-v));
  }
  return v;
}

// The activation comes after beta C and the bias, on full and partial tiles,
// with A read in place and packed (K = 1024: rows 4 KB apart, which the AVX2
// kernel packs), over one thread and two.
TEST(Gemm, ActivationAppliesAfterBetaCOnEdgeTiles) {
  ThreadPool pool(2);
  unsigned seed = 200;
  for (const Case& c : {Case{13, 35, 50}, Case{7, 21, 1024}, Case{2, 16, 9}})
    for (GemmActivation act : {GemmActivation::Relu, GemmActivation::Gelu, GemmActivation::GeluTanh,
                               GemmActivation::Swish})
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        // Scaled so the sums reach GELU's and SiLU's curved part and their tails.
        auto A = random_vec(size_t(c.M * c.K), seed++), B = random_vec(size_t(c.K * c.N), seed++);
        for (float& v : A) v *= 8.0f / std::sqrt(float(c.K));
        auto C = random_vec(size_t(c.M * c.N), seed++), bias = random_vec(size_t(c.N), seed++);
        auto want = reference(false, false, c.M, c.N, c.K, 0.5f, A, c.K, B, c.N, 1.0f, C, c.N, bias.data());
        for (float& v : want) v = activate(v, act);
        GemmEpilogue epi;
        epi.bias = bias.data();
        epi.activation = act;
        auto got = C;
        gemm_f32(false, false, c.M, c.N, c.K, 0.5f, A.data(), c.K, B.data(), c.N, 1.0f, got.data(), c.N, p, epi);
        expect_close(got, want, 2e-5 * std::sqrt(double(c.K)) + 1e-5);
      }
}

// A per-row bias (a convolution's channels as rows), with and without beta C
// and a column bias, over edge tiles and K blocks (K > 1024), on 2 threads.
TEST(Gemm, RowBiasAddsPerRow) {
  ThreadPool pool(2);
  unsigned seed = 300;
  for (const Case& c : {Case{3, 5, 2}, Case{19, 70, 33}, Case{40, 300, 1100}})
    for (float beta : {0.0f, 1.0f, 0.5f}) {
      auto A = random_vec(size_t(c.M * c.K), seed++), B = random_vec(size_t(c.K * c.N), seed++);
      auto C = random_vec(size_t(c.M * c.N), seed++), row = random_vec(size_t(c.M), seed++);
      auto col = random_vec(size_t(c.N), seed++);
      auto want = reference(false, false, c.M, c.N, c.K, 1.0f, A, c.K, B, c.N, beta, C, c.N, col.data());
      for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j) want[i * c.N + j] = std::max(want[i * c.N + j] + row[i], 0.0f);
      GemmEpilogue epi;
      epi.bias = col.data();
      epi.row_bias = row.data();
      epi.activation = GemmActivation::Relu;
      auto got = C;
      gemm_f32(false, false, c.M, c.N, c.K, 1.0f, A.data(), c.K, B.data(), c.N, beta, got.data(), c.N, &pool, epi);
      expect_close(got, want, 1e-4 * std::sqrt(double(c.K)) + 1e-5);
    }
  std::vector<float> C = {1, 2, 3, 4}, row = {10, 20};
  GemmEpilogue epi;
  epi.row_bias = row.data();
  gemm_f32(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 1.0f, C.data(), 2, nullptr, epi);
  expect_close(C, {11, 12, 23, 24}, 0);
}

TEST(Gemm, EmptyKGivesBetaCPlusBias) {
  std::vector<float> C = {1, 2, 3, 4}, bias = {10, 20};
  GemmEpilogue epi;
  epi.bias = bias.data();
  gemm_f32(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 2.0f, C.data(), 2, nullptr, epi);
  expect_close(C, {12, 24, 16, 28}, 0);
}

TEST(VectorMath, ExpGeluSoftmaxLayerNorm) {
  std::vector<float> x;
  for (int i = -400; i <= 400; ++i) x.push_back(i * 0.05f);  // -20 .. 20, odd count for tails
  std::vector<float> y(x.size());
  vm::exp(x.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i] / std::exp(x[i]), 1.0f, 1e-6f) << x[i];
  vm::gelu_erf(x.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(y[i], 0.5f * x[i] * (1.0f + std::erf(x[i] / std::sqrt(2.0f))), 1e-5f * (1 + std::fabs(x[i])));
  vm::gelu_tanh(x.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    float v = x[i];
    ASSERT_NEAR(y[i], 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))),
                1e-5f * (1 + std::fabs(v)));
  }
  // the ends: GELU(+inf) = inf, far negative inputs give (negative) zero, NaN stays NaN
  std::vector<float> ends = {INFINITY, 1e30f, -1e30f, -200.0f, NAN};
  for (auto gelu : {vm::gelu_erf, vm::gelu_tanh}) {
    std::vector<float> out(ends.size());
    gelu(ends.data(), out.data(), int64_t(ends.size()));
    EXPECT_EQ(out[0], INFINITY);
    EXPECT_EQ(out[1], 1e30f);
    EXPECT_EQ(out[2], 0.0f);
    EXPECT_EQ(out[3], 0.0f);
    EXPECT_TRUE(std::isnan(out[4]));
  }
  // softmax of 1, 2, 3 (and in place)
  std::vector<float> s = {1, 2, 3};
  vm::softmax(s.data(), s.data(), 3);
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_close(s, {float(std::exp(1.0) / z), float(std::exp(2.0) / z), float(std::exp(3.0) / z)}, 1e-6);
  // a masked entry (-inf) gets 0
  std::vector<float> m = {0, -INFINITY, 0};
  vm::softmax(m.data(), m.data(), 3);
  expect_close(m, {0.5f, 0.0f, 0.5f}, 1e-7);
  // layer norm of (x + skip) = [1, 2, 3, 4] -> mean 2.5, var 1.25
  std::vector<float> a = {0, 1, 2, 3}, skip = {1, 1, 1, 1}, g = {1, 2, 1, 1}, b = {0, 0, 1, 0}, out(4);
  vm::layer_norm(a.data(), skip.data(), out.data(), 4, g.data(), b.data(), 0.0f);
  float inv = 1.0f / std::sqrt(1.25f);
  expect_close(out, {-1.5f * inv, -1.0f * inv, 0.5f * inv + 1.0f, 1.5f * inv}, 1e-6);
  vm::layer_norm(a.data(), nullptr, out.data(), 4, g.data(), nullptr, 0.0f);
  expect_close(out, {-1.5f * inv, -1.0f * inv, 0.5f * inv, 1.5f * inv}, 1e-6);
}

// Each CPU's vector forms (AVX-512, AVX2 intrinsics, loops) against libm,
// over -20..20 in odd counts (masked tails), with their ends.
TEST(VectorMath, TanhErfSigmoidSwishMatchLibm) {
  std::vector<float> x;
  for (int i = -401; i <= 401; ++i) x.push_back(i * 0.0499f);
  for (float e : {1e-6f, -3e-4f, 0.49f, -0.51f}) x.push_back(e);
  const int64_t n = int64_t(x.size());
  std::vector<float> y(x.size());
  vm::tanh(x.data(), y.data(), n);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], std::tanh(x[i]), 2e-7f + 1e-6f * std::fabs(y[i])) << x[i];
  vm::erf(x.data(), y.data(), n);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], std::erf(x[i]), 2e-7f + 1e-6f * std::fabs(y[i])) << x[i];
  vm::sigmoid(x.data(), y.data(), n);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i] * (1.0f + std::exp(-x[i])), 1.0f, 1e-6f) << x[i];
  vm::swish(x.data(), y.data(), n, 1.5f);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(y[i], x[i] / (1.0f + std::exp(-1.5f * x[i])), 1e-6f * (1 + std::fabs(x[i]))) << x[i];
  std::vector<float> ends = {INFINITY, -INFINITY, 1e30f, NAN};
  std::vector<float> out(ends.size());
  vm::tanh(ends.data(), out.data(), 4);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_TRUE(std::isnan(out[3]));
  vm::erf(ends.data(), out.data(), 4);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_TRUE(std::isnan(out[3]));
  vm::sigmoid(ends.data(), out.data(), 4);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_TRUE(std::isnan(out[3]));
}

// log over many binades (subnormals, the 0.75 / 1.5 mantissa split) and its
// ends; floor / ceil / round-half-to-even against libm, halves and -0 included.
TEST(VectorMath, LogAndRoundingMatchLibm) {
  std::vector<float> x;
  for (float v = 1e-44f; v < 1e38f; v *= 1.37f) x.push_back(v);
  for (float v : {0.75f, 1.5f, 1.4999999f, 1.0f, 2.0f, 1.17549435e-38f, 3.4028235e38f}) x.push_back(v);
  std::vector<float> y(x.size());
  vm::log(x.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], std::log(x[i]), 1e-6f * (1 + std::fabs(y[i]))) << x[i];
  std::vector<float> ends = {0.0f, INFINITY, -1.0f, NAN, -0.0f};
  std::vector<float> out(ends.size());
  vm::log(ends.data(), out.data(), 5);
  EXPECT_EQ(out[0], -INFINITY);
  EXPECT_EQ(out[1], INFINITY);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(out[4], -INFINITY);
  std::vector<float> r = {-2.5f, -1.5f, -0.5f, -0.3f, 0.5f, 1.5f, 2.5f, 2.7f, -0.0f, 1e9f, NAN};
  std::vector<float> got(r.size());
  const std::pair<void (*)(const float*, float*, int64_t), float (*)(float)> fns[] = {
      {vm::floor, [](float v) { return std::floor(v); }},
      {vm::ceil, [](float v) { return std::ceil(v); }},
      {vm::round_even, [](float v) { return std::nearbyint(v); }}};
  for (const auto& [vec, ref] : fns) {
    vec(r.data(), got.data(), int64_t(r.size()));
    for (size_t i = 0; i + 1 < r.size(); ++i) {
      EXPECT_EQ(got[i], ref(r[i])) << r[i];
      EXPECT_EQ(std::signbit(got[i]), std::signbit(ref(r[i]))) << r[i];
    }
    EXPECT_TRUE(std::isnan(got.back()));
  }
}

// Softmax down the middle axis of [n, inner] (and its log), the columns past
// a multiple of the vector width included, and a masked (-inf) entry.
TEST(VectorMath, SoftmaxColumnsMatchReference) {
  for (int64_t inner : {1, 7, 45}) {
    const int64_t n = 9;
    auto x = random_vec(size_t(n * inner), unsigned(inner));
    for (float& v : x) v *= 10.0f;
    x[size_t(inner - 1)] = -INFINITY;
    for (bool log : {false, true}) {
      std::vector<float> y(x.size());
      vm::softmax_columns(x.data(), y.data(), n, inner, log);
      for (int64_t j = 0; j < inner; ++j) {
        double mx = -INFINITY, sum = 0;
        for (int64_t i = 0; i < n; ++i) mx = std::max(mx, double(x[i * inner + j]));
        for (int64_t i = 0; i < n; ++i) sum += std::exp(double(x[i * inner + j]) - mx);
        for (int64_t i = 0; i < n; ++i) {
          const double d = double(x[i * inner + j]) - mx;
          const double want = log ? d - std::log(sum) : std::exp(d) / sum;
          if (std::isinf(want)) EXPECT_EQ(y[i * inner + j], float(want));
          else ASSERT_NEAR(y[i * inner + j], want, 1e-5 * (1 + std::fabs(want))) << inner << " " << i << " " << j;
        }
      }
    }
  }
}

TEST(ThreadPool, CoversRangeOnceAndNests) {
  for (bool spin : {true, false}) {
    ThreadPool pool(3, spin);
    EXPECT_EQ(pool.num_threads(), 3);
    for (int64_t n : {1, 2, 3, 7, 100, 100000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for(&pool, n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
        // a nested call runs inline instead of deadlocking
        parallel_for(&pool, 4, [&](int64_t, int64_t) {});
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
  }
}

}  // namespace
}  // namespace onyx::test
