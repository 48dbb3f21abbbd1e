#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace onyx::test {

TEST(Softmax, LastAxisOpset13) {
  Tensor x = Tensor::from_vector<float>({0, std::log(3.0f), 1000, 1000}, {2, 2});
  expect_near(run_op(make_node("Softmax", {"x"}, {"y"}), {x}, 13)[0], {0.25, 0.75, 0.5, 0.5});
  auto ls = run_op(make_node("LogSoftmax", {"x"}, {"y"}), {x}, 13)[0];
  expect_near(ls, {std::log(0.25f), std::log(0.75f), std::log(0.5f), std::log(0.5f)});
}

// Rows as attention masks leave them: float's lowest (PyTorch) or -inf where masked. Masked
// entries are exactly 0 (not subnormal), the rest sum to 1; a NaN makes its row NaN.
TEST(Softmax, MaskedEntriesAreZeroAndNanPropagates) {
  const float lowest = std::numeric_limits<float>::lowest(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> v(3 * 20, 0.5f);
  for (int i = 5; i < 20; ++i) v[i] = lowest;       // row 0: 5 live entries
  for (int i = 20; i < 40; i += 2) v[i] = -inf;     // row 1: every other entry masked
  v[40 + 17] = std::nanf("");                        // row 2: one NaN
  auto y = run_op(make_node("Softmax", {"x"}, {"y"}), {Tensor::from_vector<float>(v, {3, 20})}, 13)[0];
  for (int i = 0; i < 20; ++i) EXPECT_EQ(y.float_at(i), i < 5 ? 0.2f : 0.0f) << i;
  for (int i = 20; i < 40; ++i) EXPECT_NEAR(y.float_at(i), i % 2 ? 0.1f : 0.0f, 1e-7) << i;
  for (int i = 20; i < 40; i += 2) EXPECT_EQ(y.float_at(i), 0.0f) << i;
  for (int i = 40; i < 60; ++i) EXPECT_TRUE(std::isnan(y.float_at(i))) << i;
}

// Along a middle axis (the vectorized slab path, over 3 threads) against a
// double reference; one large value per column checks the max shift.
TEST(Softmax, MiddleAxisMatchesReference) {
  const int64_t outer = 2, n = 7, inner = 19;
  std::vector<float> v(outer * n * inner);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 29) * 0.25f - 3.0f;
  v[inner + 3] = 90.0f;
  ThreadPool three(3);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    auto y = run_op(make_node(op, {"x"}, {"y"}, {{"axis", attr_int(1)}}),
                    {Tensor::from_vector<float>(v, {outer, n, inner})}, 13, &three)[0];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        double mx = -1e30, sum = 0;
        for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(v[(o * n + i) * inner + j]));
        for (int64_t i = 0; i < n; ++i) sum += std::exp(v[(o * n + i) * inner + j] - mx);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t at = (o * n + i) * inner + j;
          double d = v[at] - mx;
          double want = std::string(op) == "Softmax" ? std::exp(d) / sum : d - std::log(sum);
          ASSERT_NEAR(y.float_at(at), want, 1e-5 * std::max(1.0, std::abs(want))) << op << " at " << at;
        }
      }
  }
}

TEST(Softmax, LegacyCoercesTo2D) {
  // shape [1, 2, 2], axis 1 (default) before opset 13: one row of 4
  Tensor x = Tensor::from_vector<float>({1, 1, 1, 1}, {1, 2, 2});
  expect_near(run_op(make_node("Softmax", {"x"}, {"y"}), {x}, 11)[0], {0.25, 0.25, 0.25, 0.25});
  // opset 13 with axis 1: along the middle dim only
  expect_near(run_op(make_node("Softmax", {"x"}, {"y"}, {{"axis", attr_int(1)}}), {x}, 13)[0], {0.5, 0.5, 0.5, 0.5});
}

TEST(Hardmax, FirstMaxWins) {
  Tensor x = Tensor::from_vector<float>({1, 3, 3, 0, -1, -2}, {2, 3});
  expect_near(run_op(make_node("Hardmax", {"x"}, {"y"}), {x}, 13)[0], {0, 1, 0, 1, 0, 0});
}

TEST(Softmax, BadAxisThrows) {
  Tensor x = Tensor::zeros(DataType::Float, {2, 2});
  EXPECT_THROW(run_op(make_node("Softmax", {"x"}, {"y"}, {{"axis", attr_int(3)}}), {x}, 13), onyx::Error);
}

}  // namespace onyx::test
