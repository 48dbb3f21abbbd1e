#include <cmath>
#include <cstring>

#include "op_test_util.h"

namespace onyx::test {
namespace {

TEST(Quantization, QuantizeRoundsHalfToEvenAndSaturates) {
  Tensor x = Tensor::from_vector<float>({0.f, 1.f, 3.f, 5.f, -2.f, 1000.f}, {6});
  auto y = run_op(make_node("QuantizeLinear", {"x", "s", "z"}, {"y"}),
                  {x, Tensor::scalar<float>(2.f), Tensor::scalar<uint8_t>(128)}, 13);
  EXPECT_EQ(y[0].dtype(), DataType::UInt8);
  // 0.5 -> 0, 1.5 -> 2, 2.5 -> 2
  EXPECT_EQ(to_vector<uint8_t>(y[0]), (std::vector<uint8_t>{128, 128, 130, 130, 127, 255}));
  // no zero point: uint8 with zero 0
  auto y2 = run_op(make_node("QuantizeLinear", {"x", "s"}, {"y"}), {x, Tensor::scalar<float>(2.f)}, 10);
  EXPECT_EQ(to_vector<uint8_t>(y2[0]), (std::vector<uint8_t>{0, 0, 2, 2, 0, 255}));
}

TEST(Quantization, QuantizePerAxisInt8) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  auto y = run_op(make_node("QuantizeLinear", {"x", "s", "z"}, {"y"}, {{"axis", attr_int(0)}}),
                  {x, Tensor::from_vector<float>({1.f, 0.5f}, {2}), Tensor::from_vector<int8_t>({0, -10}, {2})}, 13);
  EXPECT_EQ(to_vector<int8_t>(y[0]), (std::vector<int8_t>{1, 2, -4, -2}));
}

TEST(Quantization, DequantizePerAxisAndBlocked) {
  Tensor x = Tensor::from_vector<int8_t>({1, 2, 3, 4}, {2, 2});
  auto y = run_op(make_node("DequantizeLinear", {"x", "s", "z"}, {"y"}, {{"axis", attr_int(1)}}),
                  {x, Tensor::from_vector<float>({1.f, 2.f}, {2}), Tensor::from_vector<int8_t>({1, 0}, {2})}, 13);
  expect_near(y[0], {0, 4, 2, 8});
  // blocks of 2 along axis 1 of a [1, 4] input
  Tensor xb = Tensor::from_vector<uint8_t>({1, 2, 3, 4}, {1, 4});
  auto yb = run_op(make_node("DequantizeLinear", {"x", "s"}, {"y"}, {{"axis", attr_int(1)}, {"block_size", attr_int(2)}}),
                   {xb, Tensor::from_vector<float>({1.f, 10.f}, {1, 2})}, 21);
  expect_near(yb[0], {1, 2, 30, 40});
  // int32 input
  auto yi = run_op(make_node("DequantizeLinear", {"x", "s"}, {"y"}),
                   {Tensor::from_vector<int32_t>({-100, 7}, {2}), Tensor::scalar<float>(0.5f)}, 13);
  expect_near(yi[0], {-50, 3.5f});
}

TEST(Quantization, DynamicQuantize) {
  Tensor x = Tensor::from_vector<float>({0.f, 2.f, -3.f, 1000.f, -25.5f, 0.f}, {6});
  auto y = run_op(make_node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}), {x}, 11);
  float scale = (1000.f + 25.5f) / 255.f;
  expect_near(y[1], {scale});
  uint8_t zp = static_cast<uint8_t>(std::nearbyint(25.5f / scale));
  EXPECT_EQ(y[2].data<uint8_t>()[0], zp);
  EXPECT_EQ(y[0].data<uint8_t>()[3], 255);
  EXPECT_EQ(y[0].data<uint8_t>()[4], 0);
  EXPECT_EQ(y[0].data<uint8_t>()[0], zp);
}

TEST(Quantization, QLinearConv1x1AndPadded) {
  // x: 1x1x2x2 uint8, zero point 1; w: 1x1x1x1 = 3 (zp 0); scales x 0.5, w 1, y 1 -> y = (x-1)*3*0.5 + 5
  Tensor x = Tensor::from_vector<uint8_t>({1, 3, 5, 7}, {1, 1, 2, 2});
  Tensor w = Tensor::from_vector<uint8_t>({3}, {1, 1, 1, 1});
  auto node = make_node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"});
  auto y = run_op(node, {x, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(1), w, Tensor::scalar<float>(1.f),
                         Tensor::scalar<uint8_t>(0), Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(5)},
                  10);
  EXPECT_EQ(to_vector<uint8_t>(y[0]), (std::vector<uint8_t>{5, 8, 11, 14}));
  // 2x2 kernel of ones over a padded input, int8, with bias
  Tensor xi = Tensor::from_vector<int8_t>({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor wi = Tensor::from_vector<int8_t>({1, 1, 1, 1}, {1, 1, 2, 2});
  auto node2 = make_node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"},
                         {{"pads", attr_ints({1, 1, 0, 0})}});
  auto y2 = run_op(node2, {xi, Tensor::scalar<float>(1.f), Tensor::scalar<int8_t>(0), wi,
                           Tensor::from_vector<float>({1.f}, {1}), Tensor::from_vector<int8_t>({0}, {1}),
                           Tensor::scalar<float>(1.f), Tensor::scalar<int8_t>(0), Tensor::from_vector<int32_t>({100}, {1})},
                   10);
  EXPECT_EQ(y2[0].shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(to_vector<int8_t>(y2[0]), (std::vector<int8_t>{101, 103, 104, 110}));
}

TEST(Quantization, Errors) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_THROW(run_op(make_node("QuantizeLinear", {"x", "s"}, {"y"}, {{"axis", attr_int(0)}}),
                      {x, Tensor::from_vector<float>({1.f, 2.f, 3.f}, {3})}, 13),
               Error);
  EXPECT_THROW(run_op(make_node("DequantizeLinear", {"x", "s", "z"}, {"y"}),
                      {Tensor::from_vector<int8_t>({1}, {1}), Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(0)}, 13),
               Error);
  // QLinearConv's weight zero point must have the weight's type (int8 weights, uint8 zero point).
  Tensor xq = Tensor::from_vector<uint8_t>({1, 3, 5, 7}, {1, 1, 2, 2});
  Tensor wq = Tensor::from_vector<int8_t>({3}, {1, 1, 1, 1});
  auto conv = make_node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"});
  try {
    run_op(conv, {xq, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(1), wq, Tensor::scalar<float>(1.f),
                  Tensor::scalar<uint8_t>(0), Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(5)},
           10);
    ADD_FAILURE() << "a uint8 w_zero_point for int8 weights ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w int8 with w_zero_point uint8"), std::string::npos) << e.what();
  }
}

Tensor scalar_of(DataType t, uint8_t code) {
  Tensor z(t, {});
  *static_cast<uint8_t*>(z.raw()) = code;
  return z;
}

TEST(Quantization, QuantizeToInt4Int2AndFloat8) {
  Tensor x = Tensor::from_vector<float>({-20.f, 3.4f, 5.f, 100.f}, {4});
  // int4 zero point 1: round(x / 1) + 1, saturated to [-8, 7]; 5 / 2 = 2.5 ties to 2.
  auto y = run_op(make_node("QuantizeLinear", {"x", "s", "z"}, {"y"}),
                  {x, Tensor::scalar<float>(2.f), scalar_of(DataType::Int4, 1)}, 25);
  EXPECT_EQ(y[0].dtype(), DataType::Int4);
  EXPECT_EQ(y[0].to_int64_vector(), (std::vector<int64_t>{-8, 3, 3, 7}));
  y = run_op(make_node("QuantizeLinear", {"x", "s", "z"}, {"y"}),
             {x, Tensor::scalar<float>(1.f), scalar_of(DataType::UInt2, 0)}, 25);
  EXPECT_EQ(y[0].to_int64_vector(), (std::vector<int64_t>{0, 3, 3, 3}));
  // float8: x / scale (no integer rounding), then a saturating cast. 200 ties
  // between 192 and 208 (E4M3 has 3 mantissa bits) -> 192; 2000 saturates to 448.
  Tensor xf = Tensor::from_vector<float>({-20.f, 3.f, 5.f, 100.f, 1000.f}, {5});
  y = run_op(make_node("QuantizeLinear", {"x", "s", "z"}, {"y"}),
             {xf, Tensor::scalar<float>(0.5f), scalar_of(DataType::Float8E4M3FN, 0)}, 25);
  EXPECT_EQ(y[0].dtype(), DataType::Float8E4M3FN);
  auto back = run_op(make_node("DequantizeLinear", {"x", "s"}, {"y"}), {y[0], Tensor::scalar<float>(0.5f)}, 25);
  expect_near(back[0], {-20.f, 3.f, 5.f, 96.f, 224.f});
}

TEST(Quantization, DequantizeInt4WithZeroPointAndE8M0Scale) {
  Tensor x(DataType::Int4, {3});
  int8_t vals[3] = {-8, 0, 7};
  std::memcpy(x.raw(), vals, 3);
  auto y = run_op(make_node("DequantizeLinear", {"x", "s", "z"}, {"y"}),
                  {x, Tensor::scalar<float>(0.5f), scalar_of(DataType::Int4, static_cast<uint8_t>(-1))}, 25);
  expect_near(y[0], {-3.5f, 0.5f, 4.0f});
  // A float8e8m0 scale (code 129 = 4) needs output_dtype.
  y = run_op(make_node("DequantizeLinear", {"x", "s"}, {"y"}, {{"output_dtype", attr_int(1)}}),
             {x, scalar_of(DataType::Float8E8M0, 129)}, 25);
  expect_near(y[0], {-32.f, 0.f, 28.f});
  EXPECT_THROW(run_op(make_node("DequantizeLinear", {"x", "s"}, {"y"}), {x, scalar_of(DataType::Float8E8M0, 129)}, 25),
               Error);
}

}  // namespace
}  // namespace onyx::test
