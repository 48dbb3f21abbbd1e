#include <gtest/gtest.h>

#include <map>

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

// Runs a Gemm whose B (input 1) is a constant at kernel init, so the kernel
// packs it once; the same kernel then runs twice (packing must persist).
static std::vector<Tensor> run_gemm_const_b(const Node& node, const std::vector<Tensor>& inputs) {
  const KernelDef* def = cpu_kernel_registry().find(node, 13);
  std::vector<const Tensor*> constants(node.inputs.size(), nullptr);
  constants[1] = &inputs[1];
  KernelInitContext init(node, 13, constants, nullptr);
  auto kernel = def->factory(init);
  std::vector<Value> values;
  for (auto& t : inputs) values.push_back(Value(t));
  std::vector<Tensor> out;
  for (int rep = 0; rep < 2; ++rep) {
    SingleNodeContext ctx(node, values);
    kernel->run(ctx);
    out.push_back(ctx.outputs()[0].tensor());
  }
  return out;
}

TEST(Gemm, ConstantPackedB) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});   // A B = [[9,12,15],[19,26,33]]
  Tensor bt = Tensor::from_vector<float>({1, 4, 2, 5, 3, 6}, {3, 2});  // b transposed
  Tensor c_row = Tensor::from_vector<float>({1, 2, 3}, {3});
  Tensor c_col = Tensor::from_vector<float>({10, 20}, {2, 1});
  Tensor c_full = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto alpha_beta = [](float al, float be, int tb) {
    return std::map<std::string, Attribute>{{"alpha", attr_float(al)}, {"beta", attr_float(be)}, {"transB", attr_int(tb)}};
  };
  for (int tb = 0; tb < 2; ++tb) {
    const Tensor& bb = tb ? bt : b;
    for (auto& y : run_gemm_const_b(make_node("Gemm", {"a", "b"}, {"y"}, alpha_beta(1, 1, tb)), {a, bb})) {
      EXPECT_EQ(y.shape(), (Shape{2, 3}));
      expect_near(y, {9, 12, 15, 19, 26, 33});
    }
    // beta == 1 with a row C (added as the GEMM's bias)
    for (auto& y : run_gemm_const_b(make_node("Gemm", {"a", "b", "c"}, {"y"}, alpha_beta(1, 1, tb)), {a, bb, c_row}))
      expect_near(y, {10, 14, 18, 20, 28, 36});
    // alpha, beta != 1, row C broadcast
    for (auto& y : run_gemm_const_b(make_node("Gemm", {"a", "b", "c"}, {"y"}, alpha_beta(2, 0.5f, tb)), {a, bb, c_row}))
      expect_near(y, {18.5f, 25, 31.5f, 38.5f, 53, 67.5f});
    // column C broadcast
    for (auto& y : run_gemm_const_b(make_node("Gemm", {"a", "b", "c"}, {"y"}, alpha_beta(1, 1, tb)), {a, bb, c_col}))
      expect_near(y, {19, 22, 25, 39, 46, 53});
    // full C, transA
    Tensor at = Tensor::from_vector<float>({1, 3, 2, 4}, {2, 2});
    auto attrs = alpha_beta(-1, 2, tb);
    attrs["transA"] = attr_int(1);
    for (auto& y : run_gemm_const_b(make_node("Gemm", {"a", "b", "c"}, {"y"}, attrs), {at, bb, c_full}))
      expect_near(y, {-7, -8, -9, -11, -16, -21});
  }
  // Larger than one register tile in every dimension, against a plain loop.
  const int64_t M = 7, K = 45, N = 37;
  std::vector<float> av(M * K), bv(K * N), cv(N);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(static_cast<int>(i * 7 % 13) - 6) * 0.25f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(static_cast<int>(i * 5 % 11) - 5) * 0.5f;
  for (size_t i = 0; i < cv.size(); ++i) cv[i] = static_cast<float>(i);
  std::vector<float> bT(K * N);  // [N, K]
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) bT[j * K + k] = bv[k * N + j];
  std::vector<float> expected(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(av[i * K + k]) * bv[k * N + j];
      expected[i * N + j] = static_cast<float>(1.5 * s + 0.25 * cv[j]);
    }
  Tensor A = Tensor::from_vector<float>(av, {M, K}), C = Tensor::from_vector<float>(cv, {N});
  Tensor B = Tensor::from_vector<float>(bv, {K, N}), BT = Tensor::from_vector<float>(bT, {N, K});
  for (int tb = 0; tb < 2; ++tb)
    for (auto& y : run_gemm_const_b(make_node("Gemm", {"a", "b", "c"}, {"y"}, alpha_beta(1.5f, 0.25f, tb)),
                                    {A, tb ? BT : B, C}))
      expect_near(y, expected, 1e-4f);
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
