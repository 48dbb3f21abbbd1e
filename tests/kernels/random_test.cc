#include "op_test_util.h"

namespace onyx::test {

TEST(Random, UniformIsInRangeAndSeeded) {
  Node n = make_node("RandomUniform", {}, {"y"},
                     {{"shape", attr_ints({1000})}, {"low", attr_float(2.0f)}, {"high", attr_float(3.0f)},
                      {"seed", attr_float(5.0f)}});
  auto a = run_op(n, {});
  auto b = run_op(n, {});
  ASSERT_EQ(a[0].shape(), (Shape{1000}));
  double sum = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    float v = a[0].data<float>()[i];
    EXPECT_GE(v, 2.0f);
    EXPECT_LT(v, 3.0f);
    EXPECT_EQ(v, b[0].data<float>()[i]);  // same seed, same draws
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, 2.5, 0.05);
}

TEST(Random, NormalLikeTakesInputShapeAndType) {
  Tensor x = Tensor::zeros(DataType::Double, {50, 40});
  auto out = run_op(make_node("RandomNormalLike", {"x"}, {"y"}, {{"mean", attr_float(10.0f)}}), {x});
  ASSERT_EQ(out[0].dtype(), DataType::Double);
  ASSERT_EQ(out[0].shape(), (Shape{50, 40}));
  double sum = 0;
  for (int64_t i = 0; i < out[0].numel(); ++i) sum += out[0].data<double>()[i];
  EXPECT_NEAR(sum / out[0].numel(), 10.0, 0.2);
}

TEST(Random, MultinomialPicksTheOnlyLikelyClass) {
  Tensor logits = Tensor::from_vector<float>({-100, 0, -100}, {1, 3});
  auto out = run_op(make_node("Multinomial", {"x"}, {"y"}, {{"sample_size", attr_int(5)}}), {logits});
  ASSERT_EQ(out[0].shape(), (Shape{1, 5}));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[0].data<int32_t>()[i], 1);
  EXPECT_THROW(run_op(make_node("Multinomial", {"x"}, {"y"}), {Tensor::zeros(DataType::Float, {3})}), Error);
}

}  // namespace onyx::test
