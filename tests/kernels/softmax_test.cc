#include <gtest/gtest.h>

#include <cmath>

#include "op_test_util.h"

namespace onyx::test {

TEST(Softmax, LastAxisOpset13) {
  Tensor x = Tensor::from_vector<float>({0, std::log(3.0f), 1000, 1000}, {2, 2});
  expect_near(run_op(make_node("Softmax", {"x"}, {"y"}), {x}, 13)[0], {0.25, 0.75, 0.5, 0.5});
  auto ls = run_op(make_node("LogSoftmax", {"x"}, {"y"}), {x}, 13)[0];
  expect_near(ls, {std::log(0.25f), std::log(0.75f), std::log(0.5f), std::log(0.5f)});
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
