#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Node cast_to(DataType t) { return make_node("Cast", {"x"}, {"y"}, {{"to", attr_int(static_cast<int64_t>(t))}}); }

TEST(Cast, FloatToStringLikeNumpy) {
  float inf = std::numeric_limits<float>::infinity();
  auto x = Tensor::from_vector<float>({1.5f, 3.0f, 0.1f, 1e-5f, 1e16f, 123456789.0f, -0.25f, inf, -inf}, {9});
  auto out = run_op(cast_to(DataType::String), {x});
  EXPECT_EQ(to_vector<std::string>(out[0]),
            (std::vector<std::string>{"1.5", "3.0", "0.1", "1e-05", "1e+16", "123456790.0", "-0.25", "INF", "-INF"}));
  out = run_op(cast_to(DataType::String), {Tensor::from_vector<int64_t>({-42, 7}, {2})});
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"-42", "7"}));
}

TEST(Cast, StringToNumbers) {
  auto s = Tensor::from_vector<std::string>({"NaN", "INF", "-INF", "+inf", "1e-3", " 2.5 "}, {6});
  auto out = run_op(cast_to(DataType::Float), {s});
  auto v = to_vector<float>(out[0]);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[2], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[3], std::numeric_limits<float>::infinity());
  EXPECT_FLOAT_EQ(v[4], 0.001f);
  EXPECT_FLOAT_EQ(v[5], 2.5f);
  out = run_op(cast_to(DataType::Int64), {Tensor::from_vector<std::string>({"1000", "-7", "100.5"}, {3})});
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{1000, -7, 100}));
  EXPECT_THROW(run_op(cast_to(DataType::Float), {Tensor::from_vector<std::string>({"hello"}, {1})}), onyx::Error);
}

TEST(Cast, NumericConversions) {
  auto x = Tensor::from_vector<float>({-1.7f, 0.0f, 2.9f, 300.0f}, {4});
  auto out = run_op(cast_to(DataType::Int32), {x});
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{-1, 0, 2, 300}));
  out = run_op(cast_to(DataType::UInt8), {x});
  EXPECT_EQ(to_vector<uint8_t>(out[0]), (std::vector<uint8_t>{255, 0, 2, 44}));
  out = run_op(cast_to(DataType::Bool), {x});
  EXPECT_EQ(to_vector<bool>(out[0]), (std::vector<bool>{true, false, true, true}));
  out = run_op(cast_to(DataType::Float16), {x});
  EXPECT_EQ(out[0].dtype(), DataType::Float16);
  expect_near(out[0], {-1.7f, 0, 2.9f, 300}, 1e-3f);
  out = run_op(cast_to(DataType::BFloat16), {x});
  expect_near(out[0], {-1.7f, 0, 2.9f, 300}, 1e-2f);
  out = run_op(make_node("CastLike", {"x", "like"}, {"y"}), {x, Tensor::from_vector<double>({0}, {1})});
  EXPECT_EQ(out[0].dtype(), DataType::Double);
  EXPECT_NEAR(out[0].data<double>()[0], -1.7, 1e-6);
  EXPECT_THROW(run_op(cast_to(DataType::Complex64), {x}), onyx::Error);
}

}  // namespace
}  // namespace onyx::test
