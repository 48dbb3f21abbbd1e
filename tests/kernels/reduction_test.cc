#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor t23() { return Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}); }

TEST(Reduction, SumAxesAttrAndInput) {
  auto y = run_op(make_node("ReduceSum", {"x"}, {"y"}, {{"axes", attr_ints({1})}, {"keepdims", attr_int(0)}}),
                  {t23()}, 11);
  EXPECT_EQ(y[0].shape(), (Shape{2}));
  expect_near(y[0], {6, 15});
  auto y2 = run_op(make_node("ReduceSum", {"x", "a"}, {"y"}), {t23(), Tensor::from_vector<int64_t>({0}, {1})}, 13);
  EXPECT_EQ(y2[0].shape(), (Shape{1, 3}));
  expect_near(y2[0], {5, 7, 9});
  // empty axes: all axes, or no-op
  auto y3 = run_op(make_node("ReduceSum", {"x"}, {"y"}), {t23()}, 13);
  expect_near(y3[0], {21});
  auto y4 = run_op(make_node("ReduceSum", {"x", "a"}, {"y"}, {{"noop_with_empty_axes", attr_int(1)}}),
                   {t23(), Tensor::from_vector<int64_t>({}, {0})}, 13);
  EXPECT_EQ(y4[0].shape(), (Shape{2, 3}));
  expect_near(y4[0], {1, 2, 3, 4, 5, 6});
}

TEST(Reduction, Kinds) {
  auto run = [](const char* op, int64_t axis) {
    return run_op(make_node(op, {"x"}, {"y"}, {{"axes", attr_ints({axis})}}), {t23()}, 13)[0];
  };
  expect_near(run("ReduceMean", -1), {2, 5});
  expect_near(run("ReduceMax", 0), {4, 5, 6});
  expect_near(run("ReduceMin", 1), {1, 4});
  expect_near(run("ReduceProd", 1), {6, 120});
  expect_near(run("ReduceL1", 0), {5, 7, 9});
  expect_near(run("ReduceL2", 1), {std::sqrt(14.0f), std::sqrt(77.0f)});
  expect_near(run("ReduceSumSquare", 1), {14, 77});
  expect_near(run("ReduceLogSum", 1), {std::log(6.0f), std::log(15.0f)});
  expect_near(run("ReduceLogSumExp", 1),
              {std::log(std::exp(1.f) + std::exp(2.f) + std::exp(3.f)),
               std::log(std::exp(4.f) + std::exp(5.f) + std::exp(6.f))});
}

TEST(Reduction, EmptyAndInts) {
  Tensor e(DataType::Float, {2, 0});
  auto mx = run_op(make_node("ReduceMax", {"x"}, {"y"}, {{"axes", attr_ints({1})}}), {e}, 13)[0];
  ASSERT_EQ(mx.shape(), (Shape{2, 1}));
  EXPECT_TRUE(std::isinf(mx.data<float>()[0]) && mx.data<float>()[0] < 0);
  auto pr = run_op(make_node("ReduceProd", {"x"}, {"y"}, {{"axes", attr_ints({1})}}), {e}, 13)[0];
  expect_near(pr, {1, 1});
  auto xi = Tensor::from_vector<int32_t>({1, -7, 3, 4}, {4});
  auto s = run_op(make_node("ReduceSum", {"x"}, {"y"}, {{"keepdims", attr_int(0)}}), {xi}, 13)[0];
  EXPECT_EQ(s.dtype(), DataType::Int32);
  EXPECT_EQ(s.data<int32_t>()[0], 1);
  auto mn = run_op(make_node("ReduceMin", {"x"}, {"y"}), {xi}, 13)[0];
  EXPECT_EQ(mn.data<int32_t>()[0], -7);
}

// Trailing-axis reductions of float (the vectorized runs) against int32 and
// double inputs (the offset path) holding the same values, for runs with and
// without a 16-wide tail; a NaN anywhere in a run makes its max / min NaN.
TEST(Reduction, FloatRunsMatchOffsetPath) {
  for (int64_t n : {1, 15, 16, 17, 100}) {
    const int64_t rows = 3;
    std::vector<int32_t> vi(rows * n);
    for (size_t i = 0; i < vi.size(); ++i) vi[i] = static_cast<int32_t>((i * 7919) % 201) - 100;
    std::vector<float> vf(vi.begin(), vi.end());
    std::vector<double> vd(vi.begin(), vi.end());
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
      Node node = make_node(op, {"x"}, {"y"}, {{"axes", attr_ints({2, 3})}, {"keepdims", attr_int(0)}});
      auto yf = run_op(node, {Tensor::from_vector<float>(vf, {rows, 1, n, 1})}, 11)[0];
      auto yd = run_op(node, {Tensor::from_vector<double>(vd, {rows, 1, n, 1})}, 11)[0];
      auto yi = run_op(node, {Tensor::from_vector<int32_t>(vi, {rows, 1, n, 1})}, 11)[0];
      ASSERT_EQ(yf.shape(), (Shape{rows, 1}));
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_NEAR(yf.float_at(r), yd.float_at(r), 1e-4) << op << " n=" << n;
        if (std::string(op) != "ReduceMean") {
          EXPECT_EQ(yf.float_at(r), yi.float_at(r)) << op << " n=" << n;
        }
      }
    }
    vf[n / 2] = std::numeric_limits<float>::quiet_NaN();  // in row 0
    for (const char* op : {"ReduceMax", "ReduceMin"}) {
      auto y = run_op(make_node(op, {"x"}, {"y"}, {{"axes", attr_ints({1})}}), {Tensor::from_vector<float>(vf, {rows, n})}, 13)[0];
      EXPECT_TRUE(std::isnan(y.float_at(0))) << op << " n=" << n;
      EXPECT_FALSE(std::isnan(y.float_at(1))) << op << " n=" << n;
    }
  }
}

// Reductions over middle axes of float (whole rows accumulated lane-wise,
// in column chunks of 512) against double inputs (the offset path) holding
// the same values; a NaN makes only its own column's max / min NaN.
TEST(Reduction, FloatMiddleAxesMatchOffsetPath) {
  struct Case { Shape shape; std::vector<int64_t> axes; };
  for (const Case& c : {Case{{2, 3, 4, 5}, {1}}, Case{{2, 3, 1, 4, 5}, {1, 2, 3}}, Case{{3, 7, 1030}, {1}},
                        Case{{1, 64, 17}, {-2}}, Case{{5, 2, 3}, {0}}}) {
    const int64_t n = shape_numel(c.shape);
    std::vector<double> vd(static_cast<size_t>(n));
    for (size_t i = 0; i < vd.size(); ++i) vd[i] = static_cast<double>((i * 7919) % 201) * 0.37 - 30.0;
    std::vector<float> vf(vd.begin(), vd.end());
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2"}) {
      Node node = make_node(op, {"x"}, {"y"}, {{"axes", attr_ints(c.axes)}, {"keepdims", attr_int(0)}});
      auto yf = run_op(node, {Tensor::from_vector<float>(vf, c.shape)}, 11)[0];
      auto yd = run_op(node, {Tensor::from_vector<double>(vd, c.shape)}, 11)[0];
      ASSERT_EQ(yf.shape(), yd.shape()) << op;
      for (int64_t i = 0; i < yf.numel(); ++i) {
        const double want = yd.float_at(i);
        ASSERT_NEAR(yf.float_at(i), want, 1e-5 * std::max(1.0, std::abs(want))) << op << " at " << i;
      }
    }
  }
  std::vector<float> v(2 * 3 * 4, 1.0f);
  v[4 + 2] = std::numeric_limits<float>::quiet_NaN();  // row 1 of slab 0, column 2
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    auto y = run_op(make_node(op, {"x"}, {"y"}, {{"axes", attr_ints({1})}}), {Tensor::from_vector<float>(v, {2, 3, 4})}, 13)[0];
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(std::isnan(y.float_at(i)), i == 2) << op << " at " << i;
  }
}

TEST(Reduction, BadAxis) {
  EXPECT_THROW(run_op(make_node("ReduceMean", {"x"}, {"y"}, {{"axes", attr_ints({2})}}), {t23()}, 13),
               onyx::Error);
}

TEST(ArgMax, SelectLastIndex) {
  auto x = Tensor::from_vector<float>({2, 1, 2, 3, 3, 0}, {2, 3});
  auto y = run_op(make_node("ArgMax", {"x"}, {"y"}, {{"axis", attr_int(1)}}), {x}, 13)[0];
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  EXPECT_EQ(to_vector<int64_t>(y), (std::vector<int64_t>{0, 0}));
  auto y2 = run_op(make_node("ArgMax", {"x"}, {"y"},
                             {{"axis", attr_int(1)}, {"select_last_index", attr_int(1)}, {"keepdims", attr_int(0)}}),
                   {x}, 13)[0];
  EXPECT_EQ(y2.shape(), (Shape{2}));
  EXPECT_EQ(to_vector<int64_t>(y2), (std::vector<int64_t>{2, 1}));
  auto y3 = run_op(make_node("ArgMin", {"x"}, {"y"}, {{"axis", attr_int(0)}}), {x}, 13)[0];
  EXPECT_EQ(to_vector<int64_t>(y3), (std::vector<int64_t>{0, 0, 1}));
}

// Float rows (one vectorized pass) against the same values as int32 (the
// element loop): many ties spread over lanes, first and last index, row
// lengths around the 16-wide lanes; a row with a NaN answers its NaN.
TEST(ArgMax, FloatRowsMatchIntegerLoop) {
  for (int64_t n : {1, 15, 16, 17, 40, 64, 100}) {
    const int64_t rows = 3;
    std::vector<int32_t> vi(rows * n);
    // Values repeat: 16 apart (the same lane), in other lanes, and irregularly.
    for (int64_t i = 0; i < n; ++i) {
      vi[i] = static_cast<int32_t>((i * 7) % 8);
      vi[n + i] = static_cast<int32_t>((i * 7919) % 13) - 6;
      vi[2 * n + i] = static_cast<int32_t>(i % 3);
    }
    std::vector<float> vf(vi.begin(), vi.end());
    for (const char* op : {"ArgMax", "ArgMin"})
      for (int64_t last : {0, 1}) {
        Node node = make_node(op, {"x"}, {"y"}, {{"axis", attr_int(1)}, {"select_last_index", attr_int(last)}});
        auto yf = run_op(node, {Tensor::from_vector<float>(vf, {rows, n})}, 13)[0];
        auto yi = run_op(node, {Tensor::from_vector<int32_t>(vi, {rows, n})}, 13)[0];
        EXPECT_EQ(to_vector<int64_t>(yf), to_vector<int64_t>(yi)) << op << " last " << last << " n=" << n;
      }
    if (n < 17) continue;
    vf[n + 5] = vf[n + 9] = std::numeric_limits<float>::quiet_NaN();  // row 1
    for (int64_t last : {0, 1}) {
      auto y = run_op(make_node("ArgMax", {"x"}, {"y"}, {{"axis", attr_int(1)}, {"select_last_index", attr_int(last)}}),
                      {Tensor::from_vector<float>(vf, {rows, n})}, 13)[0];
      EXPECT_EQ(to_vector<int64_t>(y)[1], last ? 9 : 5) << "n=" << n;
    }
  }
}

TEST(TopK, StableLargestSmallest) {
  auto x = Tensor::from_vector<float>({1, 3, 3, 2, 5, 0}, {1, 6});
  auto r = run_op(make_node("TopK", {"x", "k"}, {"v", "i"}), {x, Tensor::from_vector<int64_t>({3}, {1})}, 11);
  EXPECT_EQ(r[0].shape(), (Shape{1, 3}));
  expect_near(r[0], {5, 3, 3});
  EXPECT_EQ(to_vector<int64_t>(r[1]), (std::vector<int64_t>{4, 1, 2}));
  auto s = run_op(make_node("TopK", {"x", "k"}, {"v", "i"}, {{"largest", attr_int(0)}}),
                  {x, Tensor::from_vector<int64_t>({2}, {1})}, 11);
  expect_near(s[0], {0, 1});
  EXPECT_EQ(to_vector<int64_t>(s[1]), (std::vector<int64_t>{5, 0}));
  auto a = run_op(make_node("TopK", {"x"}, {"v", "i"}, {{"k", attr_int(1)}}), {x}, 1);
  expect_near(a[0], {5});
  EXPECT_THROW(run_op(make_node("TopK", {"x", "k"}, {"v", "i"}), {x, Tensor::from_vector<int64_t>({7}, {1})}, 11),
               onyx::Error);
}

}  // namespace
}  // namespace onyx::test
