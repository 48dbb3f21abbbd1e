// The vectorized-loop builds of the vector math (cpu/vmath_loops.h), each
// called directly (the dispatch table picks only one per CPU), against libm
// in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "cpu/vmath_loops.h"

namespace onyx {
namespace {

struct Build {
  std::string name;
  const vm::LoopTable* table;
};

std::vector<Build> builds() {
  std::vector<Build> b = {{"baseline", &vm::baseline_loops()}};
  const CpuFeatures& f = cpu_features();
  if (f.avx2 && f.fma) b.push_back({"avx2", &vm::avx2_loops()});
  return b;
}

// -30 .. 30 in steps of 0.01, 6001 values: every tail length of the 16-lane blocks.
std::vector<float> sweep() {
  std::vector<float> x;
  for (int i = -3000; i <= 3000; ++i) x.push_back(static_cast<float>(i) * 0.01f);
  return x;
}

double gelu_erf_ref(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }
double gelu_tanh_ref(double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

template <class Fn, class Ref>
void expect_map(const Build& b, const char* what, Fn fn, Ref ref, double rel, double abs) {
  const std::vector<float> x = sweep();
  std::vector<float> y(x.size());
  fn(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = ref(static_cast<double>(x[i]));
    ASSERT_NEAR(y[i], want, abs + rel * std::fabs(want)) << b.name << " " << what << " at x = " << x[i];
  }
}

TEST(VectorLoops, ElementFunctionsMatchLibm) {
  for (const Build& b : builds()) {
    const vm::LoopTable& t = *b.table;
    expect_map(b, "exp", t.exp, [](double v) { return std::exp(v); }, 1e-6, 0);
    expect_map(b, "sigmoid", t.sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }, 1e-6, 0);
    expect_map(
        b, "swish 1.5", [&](const float* x, float* y, int64_t n) { t.swish(x, y, n, 1.5f); },
        [](double v) { return v / (1 + std::exp(-1.5 * v)); }, 1e-6, 1e-7);
    expect_map(b, "tanh", t.tanh, [](double v) { return std::tanh(v); }, 1e-6, 1e-7);
    expect_map(b, "erf", t.erf, [](double v) { return std::erf(v); }, 0, 3e-7);
    expect_map(b, "gelu_erf", t.gelu_erf, gelu_erf_ref, 1e-5, 1e-6);
    expect_map(b, "gelu_tanh", t.gelu_tanh, gelu_tanh_ref, 1e-5, 1e-6);
    expect_map(
        b, "hard_swish", [&](const float* x, float* y, int64_t n) { t.hard_sigmoid(x, y, n, 0.2f, 0.5f, true); },
        [](double v) { return v * std::fmin(1.0, std::fmax(0.0, 0.2 * v + 0.5)); }, 1e-6, 1e-7);
  }
}

// exp past its clamps, infinities and NaN, through each function built on it.
TEST(VectorLoops, EndsAndNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-inf, -200.0f, -87.4f, 88.0f, 200.0f, inf, nan};
  for (const Build& b : builds()) {
    const vm::LoopTable& t = *b.table;
    std::vector<float> y(x.size());
    t.exp(x.data(), y.data(), 7);
    EXPECT_EQ(y[0], 0.0f) << b.name;
    EXPECT_EQ(y[1], 0.0f) << b.name;
    EXPECT_EQ(y[2], 0.0f) << b.name;  // under float's smallest normal
    EXPECT_NEAR(y[3] / std::exp(88.0), 1.0, 1e-6) << b.name;
    EXPECT_EQ(y[4], inf) << b.name;
    EXPECT_EQ(y[5], inf) << b.name;
    EXPECT_TRUE(std::isnan(y[6])) << b.name;
    t.tanh(x.data(), y.data(), 7);
    EXPECT_EQ(y[0], -1.0f);
    EXPECT_EQ(y[5], 1.0f);
    EXPECT_TRUE(std::isnan(y[6])) << b.name;
    t.sigmoid(x.data(), y.data(), 7);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[5], 1.0f);
    for (auto gelu : {t.gelu_erf, t.gelu_tanh}) {
      gelu(x.data(), y.data(), 7);
      EXPECT_EQ(y[1], 0.0f) << b.name;
      EXPECT_EQ(y[4], 200.0f) << b.name;
      EXPECT_EQ(y[5], inf) << b.name;
      EXPECT_TRUE(std::isnan(y[6])) << b.name;
    }
    t.erf(x.data(), y.data(), 7);
    EXPECT_EQ(y[0], -1.0f);
    EXPECT_EQ(y[5], 1.0f);
    EXPECT_TRUE(std::isnan(y[6])) << b.name;
  }
}

// Lengths around the 16-lane blocks; a masked (-inf) entry gets 0; in place.
TEST(VectorLoops, SoftmaxAndLayerNormOverRowLengths) {
  for (const Build& b : builds()) {
    for (int64_t n : {1, 2, 15, 16, 17, 33, 100, 768}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) x[i] = std::sin(static_cast<float>(i) * 0.7f) * 5.0f;
      if (n > 2) x[1] = -std::numeric_limits<float>::infinity();
      std::vector<float> y = x;
      b.table->softmax(y.data(), y.data(), n);
      double mx = -INFINITY, z = 0;
      for (float v : x) mx = std::fmax(mx, v);
      for (float v : x) z += std::exp(v - mx);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(y[i], std::exp(x[i] - mx) / z, 1e-6) << b.name << " softmax n = " << n << " at " << i;

      if (n > 2) x[1] = 0.25f;
      std::vector<float> skip(x.size()), gamma(x.size()), beta(x.size()), out(x.size());
      for (int64_t i = 0; i < n; ++i) {
        skip[i] = std::cos(static_cast<float>(i)) + 3.0f;
        gamma[i] = 1.0f + 0.01f * static_cast<float>(i % 7);
        beta[i] = 0.1f * static_cast<float>(i % 3);
      }
      for (bool with_skip : {false, true}) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < n; ++i) mean += x[i] + (with_skip ? skip[i] : 0.0f);
        mean /= static_cast<double>(n);
        for (int64_t i = 0; i < n; ++i) {
          const double d = x[i] + (with_skip ? skip[i] : 0.0f) - mean;
          var += d * d;
        }
        const double inv = 1 / std::sqrt(var / static_cast<double>(n) + 1e-5);
        b.table->layer_norm(x.data(), with_skip ? skip.data() : nullptr, out.data(), n, gamma.data(), beta.data(),
                            1e-5f);
        for (int64_t i = 0; i < n; ++i) {
          const double want = (x[i] + (with_skip ? skip[i] : 0.0f) - mean) * inv * gamma[i] + beta[i];
          ASSERT_NEAR(out[i], want, 2e-5) << b.name << " layer_norm n = " << n << " skip " << with_skip;
        }
      }
    }
  }
}

}  // namespace
}  // namespace onyx
