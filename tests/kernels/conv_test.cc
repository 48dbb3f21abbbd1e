#include <gtest/gtest.h>

#include "cpu/gemm.h"
#include "op_test_util.h"

namespace onyx::test {

TEST(Gemm, BlockedMatchesReference) {
  for (auto [M, N, K, ta, tb] : std::vector<std::tuple<int, int, int, bool, bool>>{
           {7, 19, 13, false, false}, {7, 19, 13, true, false}, {13, 35, 300, false, true}, {1, 5, 3, true, true}}) {
    std::vector<float> A(M * K), B(K * N), C(M * N, 1.0f), R(M * N, 1.0f);
    for (int i = 0; i < M * K; ++i) A[i] = static_cast<float>((i * 7) % 11) - 5;
    for (int i = 0; i < K * N; ++i) B[i] = static_cast<float>((i * 5) % 13) - 6;
    int lda = ta ? M : K, ldb = tb ? K : N;
    gemm_f32(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, C.data(), N);
    gemm_ref<float>(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, R.data(), N);
    for (int i = 0; i < M * N; ++i) ASSERT_NEAR(C[i], R[i], 1e-3f) << M << "x" << N << "x" << K;
  }
}

TEST(Conv, Basic2DWithPaddingAndBias) {
  // x = 0..8 as 3x3, 2x2 kernel of ones, pads 1 on top/left only
  Tensor x = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 3, 3});
  Tensor w = Tensor::from_vector<float>({1, 1, 1, 1}, {1, 1, 2, 2});
  Tensor b = Tensor::from_vector<float>({10}, {1});
  auto out = run_op(make_node("Conv", {"x", "w", "b"}, {"y"}, {{"pads", attr_ints({1, 1, 0, 0})}}), {x, w, b}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 3, 3}));
  expect_near(out[0], {10, 11, 13, 13, 18, 22, 19, 30, 34});
}

TEST(Conv, StridedSameUpperAndGroups) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 4});  // 1-D, 2 channels
  Tensor w = Tensor::from_vector<float>({1, 1, 2, 2}, {2, 1, 2});                 // depthwise, k=2
  auto out = run_op(make_node("Conv", {"x", "w"}, {"y"},
                              {{"group", attr_int(2)}, {"strides", attr_ints({2})}, {"auto_pad", attr_string("SAME_UPPER")}}),
                    {x, w}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 2}));
  expect_near(out[0], {3, 7, 60, 140});
}

TEST(ConvTranspose, StrideTwo) {
  Tensor x = Tensor::from_vector<float>({1, 2}, {1, 1, 2});
  Tensor w = Tensor::from_vector<float>({1, 10, 100}, {1, 1, 3});
  auto out = run_op(make_node("ConvTranspose", {"x", "w"}, {"y"}, {{"strides", attr_ints({2})}}), {x, w}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 5}));
  expect_near(out[0], {1, 10, 102, 20, 200});
}

TEST(ConvInteger, ZeroPoints) {
  Tensor x = Tensor::from_vector<uint8_t>({2, 3, 4, 5}, {1, 1, 2, 2});
  Tensor w = Tensor::from_vector<uint8_t>({1, 1, 1, 1}, {1, 1, 2, 2});
  Tensor xz = Tensor::scalar<uint8_t>(1);
  auto out = run_op(make_node("ConvInteger", {"x", "w", "xz"}, {"y"}), {x, w, xz}, 10);
  EXPECT_EQ(out[0].dtype(), DataType::Int32);
  EXPECT_EQ(out[0].data<int32_t>()[0], 10);
}

TEST(Conv, ChannelMismatchThrows) {
  Tensor x = Tensor::zeros(DataType::Float, {1, 3, 4, 4});
  Tensor w = Tensor::zeros(DataType::Float, {2, 2, 3, 3});
  EXPECT_THROW(run_op(make_node("Conv", {"x", "w"}, {"y"}), {x, w}, 11), onyx::Error);
}

}  // namespace onyx::test
