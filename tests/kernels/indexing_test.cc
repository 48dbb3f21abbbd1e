#include <gtest/gtest.h>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor iota_f(Shape s) {
  Tensor t(DataType::Float, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
Tensor i64(std::vector<int64_t> v, Shape s = {}) {
  if (s.empty()) s = {static_cast<int64_t>(v.size())};
  return Tensor::from_vector<int64_t>(v, s);
}
using V = std::vector<int64_t>;

TEST(Indexing, GatherAxis1Negative) {
  auto out = run_op(make_node("Gather", {"x", "i"}, {"y"}, {{"axis", attr_int(1)}}), {iota_f({2, 3}), i64({-1, 0})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  expect_near(out[0], {2, 0, 5, 3});
  out = run_op(make_node("Gather", {"x", "i"}, {"y"}), {iota_f({3, 2}), i64({2}, {1, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 2}));
  expect_near(out[0], {4, 5});
}

TEST(Indexing, GatherOutOfRangeNamesIndexAndBound) {
  try {
    run_op(make_node("Gather", {"x", "i"}, {"y"}), {iota_f({3, 2}), i64({3})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("index 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("size 3"), std::string::npos) << msg;
  }
}

TEST(Indexing, GatherElementsAndND) {
  auto out = run_op(make_node("GatherElements", {"x", "i"}, {"y"}, {{"axis", attr_int(1)}}),
                    {iota_f({2, 2}), i64({0, 0, 1, 0}, {2, 2})});
  expect_near(out[0], {0, 0, 3, 2});
  out = run_op(make_node("GatherND", {"x", "i"}, {"y"}), {iota_f({2, 2}), i64({1, 0, 0, 1}, {2, 2})});
  expect_near(out[0], {2, 1});
  out = run_op(make_node("GatherND", {"x", "i"}, {"y"}, {{"batch_dims", attr_int(1)}}),
               {iota_f({2, 2, 2}), i64({1, 0}, {2, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  expect_near(out[0], {2, 3, 4, 5});
  EXPECT_THROW(run_op(make_node("GatherND", {"x", "i"}, {"y"}), {iota_f({2, 2}), i64({2, 0}, {1, 2})}), Error);
}

TEST(Indexing, ScatterElementsReductions) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {1, 5});
  Tensor idx = i64({1, 3, 1}, {1, 3});
  Tensor upd = Tensor::from_vector<float>({10, 20, 30}, {1, 3});
  auto node = [](const std::string& red) {
    return make_node("ScatterElements", {"x", "i", "u"}, {"y"}, {{"axis", attr_int(1)}, {"reduction", attr_string(red)}});
  };
  expect_near(run_op(node("none"), {x, idx, upd}, 16)[0], {1, 30, 3, 20, 5});
  expect_near(run_op(node("add"), {x, idx, upd}, 16)[0], {1, 42, 3, 24, 5});
  expect_near(run_op(node("mul"), {x, idx, upd}, 16)[0], {1, 600, 3, 80, 5});
  expect_near(run_op(node("max"), {x, idx, upd}, 18)[0], {1, 30, 3, 20, 5});
  expect_near(run_op(node("min"), {x, idx, upd}, 18)[0], {1, 2, 3, 4, 5});
  EXPECT_THROW(run_op(node("none"), {x, i64({1, 5, 1}, {1, 3}), upd}, 16), Error);
  // legacy Scatter
  auto out = run_op(make_node("Scatter", {"x", "i", "u"}, {"y"}, {{"axis", attr_int(1)}}), {x, i64({-1}, {1, 1}),
                                                                                            iota_f({1, 1})}, 9);
  expect_near(out[0], {1, 2, 3, 4, 0});
}

TEST(Indexing, ScatterND) {
  Tensor x = iota_f({4});
  auto out = run_op(make_node("ScatterND", {"x", "i", "u"}, {"y"}), {x, i64({3, 1}, {2, 1}),
                                                                     Tensor::from_vector<float>({9, 8}, {2})});
  expect_near(out[0], {0, 8, 2, 9});
  out = run_op(make_node("ScatterND", {"x", "i", "u"}, {"y"}, {{"reduction", attr_string("add")}}),
               {x, i64({1, 1}, {2, 1}), Tensor::from_vector<float>({1, 2}, {2})}, 16);
  expect_near(out[0], {0, 4, 2, 3});
  EXPECT_THROW(run_op(make_node("ScatterND", {"x", "i", "u"}, {"y"}), {x, i64({4}, {1, 1}),
                                                                       Tensor::from_vector<float>({1}, {1})}),
               Error);
}

TEST(Indexing, OneHot) {
  auto out = run_op(make_node("OneHot", {"i", "d", "v"}, {"y"}),
                    {i64({0, -1, 5}), Tensor::scalar<float>(3), Tensor::from_vector<float>({0, 1}, {2})}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{3, 3}));
  expect_near(out[0], {1, 0, 0, 0, 0, 1, 0, 0, 0});
  out = run_op(make_node("OneHot", {"i", "d", "v"}, {"y"}, {{"axis", attr_int(0)}}),
               {i64({0, 2}), Tensor::scalar<int64_t>(3), Tensor::from_vector<int64_t>({-1, 7}, {2})}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(to_vector<int64_t>(out[0]), (V{7, -1, -1, -1, -1, 7}));
}

TEST(Indexing, NonZero) {
  Tensor x = Tensor::from_vector<float>({1, 0, 0, 3}, {2, 2});
  auto out = run_op(make_node("NonZero", {"x"}, {"y"}), {x});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(to_vector<int64_t>(out[0]), (V{0, 1, 0, 1}));
}

TEST(Indexing, Trilu) {
  Tensor x = iota_f({3, 3});
  auto out = run_op(make_node("Trilu", {"x", "k"}, {"y"}), {x, Tensor::scalar<int64_t>(1)});
  expect_near(out[0], {0, 1, 2, 0, 0, 5, 0, 0, 0});
  out = run_op(make_node("Trilu", {"x"}, {"y"}, {{"upper", attr_int(0)}}), {x});
  expect_near(out[0], {0, 0, 0, 3, 4, 0, 6, 7, 8});
}

TEST(Indexing, CumSum) {
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto out = run_op(make_node("CumSum", {"x", "a"}, {"y"}), {x, Tensor::scalar<int32_t>(1)});
  expect_near(out[0], {1, 3, 6, 4, 9, 15});
  out = run_op(make_node("CumSum", {"x", "a"}, {"y"}, {{"exclusive", attr_int(1)}, {"reverse", attr_int(1)}}),
               {x, Tensor::scalar<int64_t>(-1)});
  expect_near(out[0], {5, 3, 0, 11, 6, 0});
  out = run_op(make_node("CumSum", {"x", "a"}, {"y"}), {x, Tensor::scalar<int64_t>(0)});
  expect_near(out[0], {1, 2, 3, 5, 7, 9});
  EXPECT_THROW(run_op(make_node("CumSum", {"x", "a"}, {"y"}), {x, Tensor::scalar<int64_t>(2)}), Error);
}

// Float running sums down an axis with rows long enough for the vector loop
// (37 elements: whole vectors and a tail), every mode, against a plain loop.
TEST(Indexing, CumSumOfFloatRowsEveryMode) {
  const int64_t n = 5, inner = 37;
  std::vector<float> v(static_cast<size_t>(2 * n * inner));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i * 13 % 17) - 8) * 0.5f;
  Tensor x = Tensor::from_vector<float>(v, {2, n, inner});
  for (int exclusive = 0; exclusive < 2; ++exclusive)
    for (int reverse = 0; reverse < 2; ++reverse) {
      auto out = run_op(make_node("CumSum", {"x", "a"}, {"y"},
                                  {{"exclusive", attr_int(exclusive)}, {"reverse", attr_int(reverse)}}),
                        {x, Tensor::scalar<int64_t>(1)});
      for (int64_t o = 0; o < 2; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          float acc = 0;
          for (int64_t t = 0; t < n; ++t) {
            const int64_t j = reverse ? n - 1 - t : t, at = (o * n + j) * inner + i;
            if (!exclusive) acc += v[static_cast<size_t>(at)];
            ASSERT_EQ(out[0].data<float>()[at], acc) << "exclusive " << exclusive << " reverse " << reverse << " at " << at;
            if (exclusive) acc += v[static_cast<size_t>(at)];
          }
        }
    }
}

TEST(Indexing, EyeLikeAndRange) {
  auto out = run_op(make_node("EyeLike", {"x"}, {"y"}, {{"k", attr_int(1)}, {"dtype", attr_int(7)}}), {iota_f({2, 3})});
  EXPECT_EQ(to_vector<int64_t>(out[0]), (V{0, 1, 0, 0, 0, 1}));
  out = run_op(make_node("Range", {"s", "l", "d"}, {"y"}),
               {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4), Tensor::scalar<int32_t>(-3)});
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{10, 7}));
  out = run_op(make_node("Range", {"s", "l", "d"}, {"y"}),
               {Tensor::scalar<float>(1), Tensor::scalar<float>(2), Tensor::scalar<float>(0.3f)});
  EXPECT_EQ(out[0].numel(), 4);
  EXPECT_THROW(run_op(make_node("Range", {"s", "l", "d"}, {"y"}),
                      {Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(2), Tensor::scalar<int64_t>(0)}),
               Error);
}

TEST(Indexing, Compress) {
  Tensor cond = Tensor::from_vector<bool>({false, true}, {2});
  auto out = run_op(make_node("Compress", {"x", "c"}, {"y"}, {{"axis", attr_int(1)}}), {iota_f({2, 3}), cond});
  EXPECT_EQ(out[0].shape(), (Shape{2, 1}));
  expect_near(out[0], {1, 4});
  out = run_op(make_node("Compress", {"x", "c"}, {"y"}), {iota_f({2, 3}), cond});
  expect_near(out[0], {1});
  EXPECT_THROW(run_op(make_node("Compress", {"x", "c"}, {"y"}, {{"axis", attr_int(0)}}),
                      {iota_f({1, 3}), Tensor::from_vector<bool>({false, true}, {2})}),
               Error);
}

TEST(Indexing, UniqueFlatAndAxis) {
  Tensor x = Tensor::from_vector<float>({2, 1, 1, 3, 4, 3}, {6});
  Node n = make_node("Unique", {"x"}, {"y", "i", "inv", "c"}, {{"sorted", attr_int(0)}});
  auto out = run_op(n, {x});
  expect_near(out[0], {2, 1, 3, 4});
  EXPECT_EQ(to_vector<int64_t>(out[1]), (V{0, 1, 3, 4}));
  EXPECT_EQ(to_vector<int64_t>(out[2]), (V{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(to_vector<int64_t>(out[3]), (V{1, 2, 2, 1}));
  out = run_op(make_node("Unique", {"x"}, {"y", "i", "inv", "c"}), {x});
  expect_near(out[0], {1, 2, 3, 4});
  EXPECT_EQ(to_vector<int64_t>(out[1]), (V{1, 0, 3, 4}));
  EXPECT_EQ(to_vector<int64_t>(out[2]), (V{1, 0, 0, 2, 3, 2}));
  Tensor m = Tensor::from_vector<int64_t>({1, 0, 0, 1, 0, 0, 2, 3, 4}, {3, 3});
  out = run_op(make_node("Unique", {"x"}, {"y", "i", "inv", "c"}, {{"axis", attr_int(0)}}), {m});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(to_vector<int64_t>(out[0]), (V{1, 0, 0, 2, 3, 4}));
  EXPECT_EQ(to_vector<int64_t>(out[3]), (V{2, 1}));
  // strings
  out = run_op(make_node("Unique", {"x"}, {"y"}), {Tensor::from_vector<std::string>({"b", "a", "b"}, {3})});
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"a", "b"}));
}

TEST(CumProd, InclusiveExclusiveReverse) {
  auto x = Tensor::from_vector<float>({1, 2, 3}, {3});
  auto axis = Tensor::scalar<int64_t>(0);
  auto out = run_op(make_node("CumProd", {"x", "a"}, {"y"}), {x, axis}, 26);
  expect_near(out[0], {1, 2, 6});
  out = run_op(make_node("CumProd", {"x", "a"}, {"y"}, {{"exclusive", attr_int(1)}}), {x, axis}, 26);
  expect_near(out[0], {1, 1, 2});
  out = run_op(make_node("CumProd", {"x", "a"}, {"y"}, {{"reverse", attr_int(1)}}), {x, axis}, 26);
  expect_near(out[0], {6, 6, 3});
  out = run_op(make_node("CumProd", {"x", "a"}, {"y"}, {{"reverse", attr_int(1)}, {"exclusive", attr_int(1)}}),
               {Tensor::from_vector<int32_t>({1, 2, 3}, {3}), axis}, 26);
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{6, 3, 1}));
}

}  // namespace
}  // namespace onyx::test
