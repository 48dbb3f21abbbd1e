#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor f(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, s); }
Tensor einsum(const std::string& eq, std::vector<Tensor> xs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < xs.size(); ++i) names.push_back("x" + std::to_string(i));
  return run_op(make_node("Einsum", names, {"y"}, {{"equation", attr_string(eq)}}), xs, 12)[0];
}

TEST(Einsum, MatMulAndImplicit) {
  auto a = f({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = f({1, 0, 0, 1, 1, 1}, {3, 2});
  auto y = einsum("ij,jk->ik", {a, b});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_near(y, {4, 5, 10, 11});
  expect_near(einsum("ij,jk", {a, b}), {4, 5, 10, 11});
  // implicit output is alphabetical: "ba" transposes
  auto t = einsum("ba", {a});
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  expect_near(t, {1, 4, 2, 5, 3, 6});
}

TEST(Einsum, DiagonalTraceSum) {
  auto m = f({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  expect_near(einsum("ii->i", {m}), {1, 5, 9});
  expect_near(einsum("ii", {m}), {15});
  expect_near(einsum("ij->", {m}), {45});
  expect_near(einsum("ij->j", {m}), {12, 15, 18});
}

TEST(Einsum, EllipsisBroadcastAndOuter) {
  auto a = f({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  auto b = f({1, 0, 0, 2}, {2, 2});
  auto y = einsum("...ij,...jk->...ik", {a, b});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  expect_near(y, {1, 4, 3, 8, 5, 12, 7, 16});
  auto o = einsum("i,j->ij", {f({1, 2}, {2}), f({3, 4, 5}, {3})});
  expect_near(o, {3, 4, 5, 6, 8, 10});
  auto three = einsum("i,i,i->", {f({1, 2}, {2}), f({3, 4}, {2}), f({5, 6}, {2})});
  expect_near(three, {1 * 3 * 5 + 2 * 4 * 6});
}

TEST(Einsum, Errors) {
  EXPECT_THROW(einsum("ij,jk->ik", {f({1, 2, 3, 4, 5, 6}, {2, 3}), f({1, 2, 3, 4}, {2, 2})}), onyx::Error);
  EXPECT_THROW(einsum("ij->k", {f({1, 2}, {1, 2})}), onyx::Error);
}

}  // namespace
}  // namespace onyx::test
