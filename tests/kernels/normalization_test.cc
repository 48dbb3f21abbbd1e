#include <gtest/gtest.h>

#include <cmath>

#include "op_test_util.h"

namespace onyx::test {

TEST(BatchNormalization, Inference) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 2, 2});
  Tensor s = Tensor::from_vector<float>({1, 2}, {2});
  Tensor b = Tensor::from_vector<float>({0, 1}, {2});
  Tensor m = Tensor::from_vector<float>({1, 3}, {2});
  Tensor v = Tensor::from_vector<float>({4, 1}, {2});
  auto y = run_op(make_node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {{"epsilon", attr_float(0)}}),
                  {x, s, b, m, v}, 15)[0];
  expect_near(y, {0, 0.5, 1, 3});
}

TEST(BatchNormalization, TrainingModeRunningStats) {
  Tensor x = Tensor::from_vector<float>({1, 3}, {2, 1});  // N=2, C=1: mean 2, var 1
  Tensor one = Tensor::from_vector<float>({1}, {1}), zero = Tensor::from_vector<float>({0}, {1});
  auto out = run_op(make_node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "rm", "rv"},
                              {{"epsilon", attr_float(0)}, {"training_mode", attr_int(1)}, {"momentum", attr_float(0.5)}}),
                    {x, one, zero, zero, one}, 15);
  expect_near(out[0], {-1, 1});
  expect_near(out[1], {1});
  expect_near(out[2], {1});
}

TEST(LayerNormalization, MeanAndInvStdDev) {
  Tensor x = Tensor::from_vector<float>({1, 3, 0, 4}, {2, 2});
  Tensor s = Tensor::from_vector<float>({2, 1}, {2});
  Tensor b = Tensor::from_vector<float>({0, 1}, {2});
  auto out = run_op(make_node("LayerNormalization", {"x", "s", "b"}, {"y", "mean", "inv"}, {{"epsilon", attr_float(0)}}),
                    {x, s, b}, 17);
  expect_near(out[0], {-2, 2, -2, 2});
  EXPECT_EQ(out[1].shape(), (Shape{2, 1}));
  expect_near(out[1], {2, 2});
  expect_near(out[2], {1, 0.5});
  // also loads at older opsets
  EXPECT_NO_THROW(run_op(make_node("LayerNormalization", {"x", "s"}, {"y"}), {x, s}, 11));
}

TEST(InstanceNormalization, PerChannel) {
  Tensor x = Tensor::from_vector<float>({1, 3, 5, 9}, {1, 2, 2});
  Tensor s = Tensor::from_vector<float>({1, 1}, {2});
  Tensor b = Tensor::from_vector<float>({0, 7}, {2});
  auto y = run_op(make_node("InstanceNormalization", {"x", "s", "b"}, {"y"}, {{"epsilon", attr_float(0)}}), {x, s, b})[0];
  expect_near(y, {-1, 1, 6, 8});
}

TEST(GroupNormalization, PerGroupScaleBroadcast) {
  Tensor x = Tensor::from_vector<float>({1, 3, 10, 12}, {1, 4, 1});  // groups {1,3}, {10,12}
  Tensor s = Tensor::from_vector<float>({2, 2}, {2});
  Tensor b = Tensor::from_vector<float>({0, 5}, {2});
  auto y = run_op(make_node("GroupNormalization", {"x", "s", "b"}, {"y"},
                            {{"num_groups", attr_int(2)}, {"epsilon", attr_float(0)}}),
                  {x, s, b}, 18)[0];
  expect_near(y, {-2, 2, 3, 7});
}

TEST(LRN, ChannelWindow) {
  Tensor x = Tensor::from_vector<float>({1, 2}, {1, 2, 1, 1});
  auto y = run_op(make_node("LRN", {"x"}, {"y"},
                            {{"size", attr_int(2)}, {"alpha", attr_float(2)}, {"beta", attr_float(1)}, {"bias", attr_float(1)}}),
                  {x})[0];
  // c0 window {0,1}: 1 + 1*(1+4) = 6; c1 window {1}: 1 + 1*4 = 5
  expect_near(y, {1.0f / 6, 2.0f / 5});
}

TEST(MeanVarianceNormalization, DefaultAxes) {
  Tensor x = Tensor::from_vector<float>({1, 3, 0, 0}, {2, 2, 1, 1});  // channel 0: {1, 0}, channel 1: {3, 0}
  auto y = run_op(make_node("MeanVarianceNormalization", {"x"}, {"y"}), {x}, 13)[0];
  expect_near(y, {1, 1, -1, -1}, 1e-4f);
}

TEST(BatchNormalization, WrongParamSizeThrows) {
  Tensor x = Tensor::zeros(DataType::Float, {1, 3, 2});
  Tensor p = Tensor::zeros(DataType::Float, {2});
  EXPECT_THROW(run_op(make_node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}), {x, p, p, p, p}, 15),
               onyx::Error);
}

TEST(RMSNormalization, LastAxisWithScale) {
  // [3, 4]: mean of squares 12.5, rms sqrt(12.5 + 1e-5); scale [1, 2].
  auto x = Tensor::from_vector<float>({3, 4, 0, 0}, {2, 2});
  auto scale = Tensor::from_vector<float>({1, 2}, {2});
  auto out = run_op(make_node("RMSNormalization", {"x", "s"}, {"y"}), {x, scale}, 23);
  expect_near(out[0], {0.8485278f, 2 * 1.1313704f, 0, 0});
  // axis 0 normalizes over the whole tensor: mean of squares 6.25.
  out = run_op(make_node("RMSNormalization", {"x", "s"}, {"y"}, {{"axis", attr_int(0)}}), {x, scale}, 23);
  expect_near(out[0], {1.2f, 3.2f, 0, 0}, 1e-4f);
}

TEST(LpNormalization, L1L2AndZeroNorm) {
  auto x = Tensor::from_vector<float>({3, 4, 0, 0}, {2, 2});
  auto out = run_op(make_node("LpNormalization", {"x"}, {"y"}), {x}, 22);
  expect_near(out[0], {0.6f, 0.8f, 0, 0});  // a zero norm gives zeros
  out = run_op(make_node("LpNormalization", {"x"}, {"y"}, {{"p", attr_int(1)}, {"axis", attr_int(0)}}), {x}, 22);
  expect_near(out[0], {1, 1, 0, 0});
  EXPECT_THROW(run_op(make_node("LpNormalization", {"x"}, {"y"}, {{"p", attr_int(3)}}), {x}, 22), Error);
}

}  // namespace onyx::test
