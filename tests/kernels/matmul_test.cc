#include <gtest/gtest.h>

#include "op_test_util.h"

namespace onyx::test {

TEST(MatMul, BatchedBroadcastAndVectors) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  Tensor b = Tensor::from_vector<float>({1, 0, 0, 1, 2, 0, 0, 2}, {2, 1, 2, 2});
  auto y = run_op(make_node("MatMul", {"a", "b"}, {"y"}), {a, b})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2, 2}));
  expect_near(y, {1, 2, 3, 4, 5, 6, 7, 8, 2, 4, 6, 8, 10, 12, 14, 16});
  Tensor v = Tensor::from_vector<float>({1, 1}, {2});
  auto yv = run_op(make_node("MatMul", {"a", "v"}, {"y"}), {a, v})[0];
  EXPECT_EQ(yv.shape(), (Shape{2, 2}));
  expect_near(yv, {3, 7, 11, 15});
  Tensor ai = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  auto yi = run_op(make_node("MatMul", {"a", "b"}, {"y"}), {ai, ai})[0];
  EXPECT_EQ(to_vector<int64_t>(yi), (std::vector<int64_t>{7, 10, 15, 22}));
}

TEST(Gemm, TransposeAlphaBetaBroadcastC) {
  Tensor a = Tensor::from_vector<float>({1, 3, 2, 4}, {2, 2});  // A^T = [[1,2],[3,4]]
  Tensor b = Tensor::from_vector<float>({1, 0, 0, 1}, {2, 2});
  Tensor c = Tensor::from_vector<float>({1, 2}, {2});
  auto y = run_op(make_node("Gemm", {"a", "b", "c"}, {"y"},
                            {{"transA", attr_int(1)}, {"alpha", attr_float(2)}, {"beta", attr_float(10)}}),
                  {a, b, c}, 13)[0];
  expect_near(y, {12, 24, 16, 28});
  auto y2 = run_op(make_node("Gemm", {"a", "b"}, {"y"}), {a, b}, 13)[0];
  expect_near(y2, {1, 3, 2, 4});
}

TEST(MatMulInteger, PerRowZeroPoint) {
  Tensor a = Tensor::from_vector<uint8_t>({2, 3, 10, 10}, {2, 2});
  Tensor b = Tensor::from_vector<uint8_t>({1, 0, 0, 1}, {2, 2});
  Tensor az = Tensor::from_vector<uint8_t>({1, 10}, {2});
  auto y = run_op(make_node("MatMulInteger", {"a", "b", "az"}, {"y"}), {a, b, az}, 10)[0];
  EXPECT_EQ(to_vector<int32_t>(y), (std::vector<int32_t>{1, 2, 0, 0}));
}

TEST(QLinearMatMul, Requantizes) {
  Tensor a = Tensor::from_vector<uint8_t>({2, 4}, {1, 2});
  Tensor b = Tensor::from_vector<uint8_t>({3, 5}, {2, 1});
  Tensor s = Tensor::scalar<float>(0.5f), z = Tensor::scalar<uint8_t>(0);
  Tensor ys = Tensor::scalar<float>(1.0f), yz = Tensor::scalar<uint8_t>(1);
  auto y = run_op(make_node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}),
                  {a, s, z, b, s, z, ys, yz}, 10)[0];
  EXPECT_EQ(to_vector<uint8_t>(y), (std::vector<uint8_t>{7}));  // 26 * 0.25 = 6.5 -> 6 (half to even), + 1
}

TEST(MatMul, InnerDimMismatchThrows) {
  Tensor a = Tensor::zeros(DataType::Float, {2, 3});
  Tensor b = Tensor::zeros(DataType::Float, {2, 3});
  EXPECT_THROW(run_op(make_node("MatMul", {"a", "b"}, {"y"}), {a, b}), onyx::Error);
}

}  // namespace onyx::test
