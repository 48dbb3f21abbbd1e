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

// A double reference for softmax / log-softmax of [outer, n, inner] along n.
double reference_softmax(const std::vector<float>& v, int64_t n, int64_t inner, int64_t at, bool log) {
  const int64_t o = at / (n * inner), j = at % inner;
  double mx = -1e30, sum = 0;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(v[(o * n + i) * inner + j]));
  for (int64_t i = 0; i < n; ++i) sum += std::exp(v[(o * n + i) * inner + j] - mx);
  const double d = v[at] - mx;
  return log ? d - std::log(sum) : std::exp(d) / sum;
}

// Along a middle axis (columns in blocks of 64, over 3 threads) and along
// the last (two vectors at a time, then a masked tail) against a double
// reference; one large value per slab checks the max shift.
TEST(Softmax, MiddleAndLastAxisMatchReference) {
  struct Shape { int64_t outer, n, inner; };
  ThreadPool three(3);
  for (Shape sh : {Shape{2, 7, 19}, Shape{3, 5, 70}, Shape{2, 9, 2}, Shape{3, 1, 33}, Shape{2, 49, 1},
                   Shape{4, 33, 1}, Shape{2, 16, 1}, Shape{3, 7, 1}}) {
    std::vector<float> v(sh.outer * sh.n * sh.inner);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 29) * 0.25f - 3.0f;
    v[v.size() / 3] = 90.0f;
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      auto y = run_op(make_node(op, {"x"}, {"y"}, {{"axis", attr_int(1)}}),
                      {Tensor::from_vector<float>(v, {sh.outer, sh.n, sh.inner})}, 13, &three)[0];
      for (int64_t at = 0; at < static_cast<int64_t>(v.size()); ++at) {
        const double want = reference_softmax(v, sh.n, sh.inner, at, std::string(op) == "LogSoftmax");
        ASSERT_NEAR(y.float_at(at), want, 1e-5 * std::max(1.0, std::abs(want)))
            << op << " [" << sh.outer << ", " << sh.n << ", " << sh.inner << "] at " << at;
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
