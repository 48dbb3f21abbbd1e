#include <cmath>

#include "op_test_util.h"

namespace onyx::test {
namespace {

// input (N=2, C=3) log-probabilities
Tensor logp() { return Tensor::from_vector<float>({-1, -2, -3, -4, -5, -6}, {2, 3}); }
Tensor tgt(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }

TEST(Loss, NllReductions) {
  auto none = run_op(make_node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}, {{"reduction", attr_string("none")}}),
                     {logp(), tgt({2, 0})}, 13);
  EXPECT_EQ(none[0].shape(), (Shape{2}));
  expect_near(none[0], {3, 4});
  auto sum = run_op(make_node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}, {{"reduction", attr_string("sum")}}),
                    {logp(), tgt({2, 0})}, 13);
  EXPECT_EQ(sum[0].shape(), (Shape{}));
  expect_near(sum[0], {7});
  auto mean = run_op(make_node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}), {logp(), tgt({2, 0})}, 13);
  expect_near(mean[0], {3.5f});
}

TEST(Loss, NllWeightAndIgnoreIndex) {
  Tensor w = Tensor::from_vector<float>({0.5f, 1.f, 2.f}, {3});
  // weighted mean: (3*2 + 4*0.5) / (2 + 0.5)
  auto y = run_op(make_node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"y"}), {logp(), tgt({2, 0}), w}, 13);
  expect_near(y[0], {8.f / 2.5f});
  // the ignored sample adds neither loss nor weight
  auto y2 = run_op(make_node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"y"}, {{"ignore_index", attr_int(-1)}}),
                   {logp(), tgt({2, -1}), w}, 13);
  expect_near(y2[0], {3});
}

TEST(Loss, NllNdTarget) {
  // N=1, C=2, d1=2: input[0][c][d]
  Tensor x = Tensor::from_vector<float>({-1, -2, -3, -4}, {1, 2, 2});
  Tensor t = Tensor::from_vector<int64_t>({1, 0}, {1, 2});
  auto y = run_op(make_node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}, {{"reduction", attr_string("none")}}), {x, t}, 13);
  EXPECT_EQ(y[0].shape(), (Shape{1, 2}));
  expect_near(y[0], {3, 2});
}

TEST(Loss, SoftmaxCrossEntropyWithLogProb) {
  Tensor x = Tensor::from_vector<float>({0, 0, 1, 2, 3, 4}, {2, 3});
  auto y = run_op(make_node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"y", "lp"}, {{"reduction", attr_string("none")}}),
                  {x, tgt({0, 2})}, 13);
  float l0 = std::log(2.f + std::exp(1.f));
  float l1 = 4 + std::log(std::exp(-2.f) + std::exp(-1.f) + 1.f);
  expect_near(y[1], {-l0, -l0, 1 - l0, 2 - l1, 3 - l1, 4 - l1});
  expect_near(y[0], {l0, l1 - 4});
  auto m = run_op(make_node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"y"}), {x, tgt({0, 2})}, 12);
  expect_near(m[0], {(l0 + l1 - 4) / 2});
}

TEST(Loss, DoubleInput) {
  Tensor x = Tensor::from_vector<double>({-1, -2, -3, -4, -5, -6}, {2, 3});
  auto y = run_op(make_node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}, {{"reduction", attr_string("sum")}}),
                  {x, tgt({1, 1})}, 13);
  EXPECT_EQ(y[0].dtype(), DataType::Double);
  EXPECT_DOUBLE_EQ(y[0].data<double>()[0], 7.0);
}

TEST(Loss, Errors) {
  EXPECT_THROW(run_op(make_node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}), {logp(), tgt({3, 0})}, 13), Error);
  EXPECT_THROW(run_op(make_node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}), {logp(), tgt({0, 0, 0})}, 13), Error);
  EXPECT_THROW(run_op(make_node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"y"}, {{"reduction", attr_string("avg")}}),
                      {logp(), tgt({0, 0})}, 13),
               Error);
}

}  // namespace
}  // namespace onyx::test
