#include <cmath>
#include <cstring>
#include <limits>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Node cast_to(DataType t) { return make_node("Cast", {"x"}, {"y"}, {{"to", attr_int(static_cast<int64_t>(t))}}); }

// The bulk float16 conversions (F16C where present) against the scalar
// reference, bit for bit: rounding ties, subnormals, overflow, infinities,
// and a length that leaves a tail after the 8-wide loop.
TEST(Cast, Float16BulkMatchesScalarReference) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, 1e6f, -1e6f, 6.1e-5f, 5.96e-8f, 2.98e-8f, 1e-9f,
                          1.0009765625f, 1.00048828125f, 1.00146484375f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (int i = 0; i < 1000; ++i) v.push_back(std::ldexp(static_cast<float>(i % 37) - 18.5f, i % 40 - 30));
  const int64_t n = static_cast<int64_t>(v.size());
  Tensor h = run_op(make_node("Cast", {"x"}, {"y"}, {{"to", attr_int(10)}}), {Tensor::from_vector<float>(v, {n})}, 13)[0];
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(h.raw());
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) {
      EXPECT_TRUE((bits[i] & 0x7c00) == 0x7c00 && (bits[i] & 0x3ff)) << "NaN stays NaN";
      continue;
    }
    ASSERT_EQ(bits[i], float_to_half(v[i])) << "at " << i << " x = " << v[i];
  }
  Tensor back = run_op(make_node("Cast", {"x"}, {"y"}, {{"to", attr_int(1)}}), {h}, 13)[0];
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) continue;
    ASSERT_EQ(back.float_at(i), half_to_float(bits[i])) << "at " << i;
  }
}

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

// A tensor of a one-byte-per-element narrow type from its codes / values.
Tensor narrow(DataType t, std::vector<uint8_t> codes) {
  Tensor x(t, {static_cast<int64_t>(codes.size())});
  std::memcpy(x.raw(), codes.data(), codes.size());
  return x;
}

std::vector<uint8_t> codes(const Tensor& t) {
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  return std::vector<uint8_t>(p, p + t.numel());
}

TEST(Cast, FloatToFloat8RoundsToNearestEvenAndSaturates) {
  float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // 0.47892547 = 1.9157 * 2^-2: 3 mantissa bits round to 1.875 (exponent 5, mantissa 7) = 0x2F.
  // 1e6 and inf saturate to 448 (0x7E); NaN is 0x7F; -0 stays -0 (0x80); 0.5 + 2^-5 is a tie -> 0.5.
  auto x = Tensor::from_vector<float>({0.47892547f, 1e6f, inf, -inf, nan, -0.0f, 0.53125f, 1e-7f}, {8});
  auto out = run_op(cast_to(DataType::Float8E4M3FN), {x}, 25);
  EXPECT_EQ(codes(out[0]), (std::vector<uint8_t>{0x2F, 0x7E, 0x7E, 0xFE, 0x7F, 0x80, 0x30, 0x00}));
  // Without saturation out-of-range and infinities become NaN (E4M3FN) or inf (E5M2).
  auto ns = make_node("Cast", {"x"}, {"y"},
                      {{"to", attr_int(static_cast<int64_t>(DataType::Float8E4M3FN))}, {"saturate", attr_int(0)}});
  out = run_op(ns, {x}, 25);
  EXPECT_EQ(codes(out[0])[1], 0x7F);
  EXPECT_EQ(codes(out[0])[3], 0xFF);
  ns.attributes["to"] = attr_int(static_cast<int64_t>(DataType::Float8E5M2));
  out = run_op(ns, {x}, 25);
  EXPECT_EQ(codes(out[0])[1], 0x7C);  // +inf
  EXPECT_EQ(codes(out[0])[3], 0xFC);  // -inf
  // FNUZ types have no negative zero and one NaN (0x80); max E4M3FNUZ is 240.
  out = run_op(cast_to(DataType::Float8E4M3FNUZ), {x}, 25);
  EXPECT_EQ(codes(out[0])[1], 0x7F);
  EXPECT_EQ(codes(out[0])[4], 0x80);
  EXPECT_EQ(codes(out[0])[5], 0x00);
  EXPECT_EQ(small_float_to_float(DataType::Float8E4M3FNUZ, 0x7F), 240.0f);
  EXPECT_EQ(small_float_to_float(DataType::Float8E5M2, 0x01), std::ldexp(1.0f, -16));  // smallest subnormal
  EXPECT_EQ(small_float_to_float(DataType::Float8E5M2FNUZ, 0x7F), 57344.0f);
}

TEST(Cast, Float8ToFloatAndFloat16) {
  auto x = narrow(DataType::Float8E4M3FN, {0x2F, 0x7E, 0xFE, 0x7F, 0x01});
  auto out = run_op(cast_to(DataType::Float), {x}, 25);
  auto v = to_vector<float>(out[0]);
  EXPECT_EQ(v[0], 0.46875f);
  EXPECT_EQ(v[1], 448.0f);
  EXPECT_EQ(v[2], -448.0f);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[4], std::ldexp(1.0f, -9));  // subnormal: 1/8 * 2^-6
  out = run_op(cast_to(DataType::Float16), {x}, 25);
  EXPECT_EQ(static_cast<float>(out[0].data<Float16>()[1]), 448.0f);
}

TEST(Cast, Float4AndFloat6) {
  float inf = std::numeric_limits<float>::infinity();
  // E2M1 values: 0, 0.5, 1, 1.5, 2, 3, 4, 6. 3.5 ties to 4 (even mantissa); 9 and inf saturate to 6.
  auto x = Tensor::from_vector<float>({0.25f, 1.05f, -3.5f, 9.0f, inf, -0.0f}, {6});
  auto out = run_op(cast_to(DataType::Float4E2M1), {x}, 25);
  EXPECT_EQ(codes(out[0]), (std::vector<uint8_t>{0x0, 0x2, 0xE, 0x7, 0x7, 0x8}));
  // E2M3 max 7.5, E3M2 max 28.
  out = run_op(cast_to(DataType::Float6E2M3), {x}, 28);
  expect_near(run_op(cast_to(DataType::Float), {out[0]}, 28)[0], {0.25f, 1.0f, -3.5f, 7.5f, 7.5f, 0.0f});
  out = run_op(cast_to(DataType::Float6E3M2), {x}, 28);
  expect_near(run_op(cast_to(DataType::Float), {out[0]}, 28)[0], {0.25f, 1.0f, -3.5f, 8.0f, 28.0f, 0.0f});
}

TEST(Cast, IntegersToInt4AndInt2Wrap) {
  auto x = Tensor::from_vector<float>({-9, -8, 7, 8, 15, 2.7f}, {6});
  auto out = run_op(cast_to(DataType::Int4), {x}, 25);
  EXPECT_EQ(out[0].dtype(), DataType::Int4);
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{7, -8, 7, -8, -1, 2}));
  out = run_op(cast_to(DataType::UInt4), {x}, 25);
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{7, 8, 7, 8, 15, 2}));
  out = run_op(cast_to(DataType::Int2), {Tensor::from_vector<int32_t>({-3, -2, 1, 2, 3}, {5})}, 25);
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{1, -2, 1, -2, -1}));
  out = run_op(cast_to(DataType::Int8), {out[0]}, 25);
  EXPECT_EQ(to_vector<int8_t>(out[0]), (std::vector<int8_t>{1, -2, 1, -2, -1}));
}

TEST(Cast, Float8E8M0RoundModes) {
  auto x = Tensor::from_vector<float>({3.0f, 2.9f, 4.0f, 1e-3f}, {4});
  auto node = [](const char* mode) {
    return make_node("Cast", {"x"}, {"y"},
                     {{"to", attr_int(static_cast<int64_t>(DataType::Float8E8M0))}, {"round_mode", attr_string(mode)}});
  };
  // 3 = 1.5 * 2^1: up -> 4 (code 129), down -> 2 (128), nearest (ties up) -> 4; 2.9 nearest -> 2.
  EXPECT_EQ(codes(run_op(node("up"), {x}, 25)[0])[0], 129);
  EXPECT_EQ(codes(run_op(node("down"), {x}, 25)[0])[0], 128);
  EXPECT_EQ(codes(run_op(node("nearest"), {x}, 25)[0]), (std::vector<uint8_t>{129, 128, 129, 117}));
  EXPECT_EQ(small_float_to_float(DataType::Float8E8M0, 127), 1.0f);
  EXPECT_TRUE(std::isnan(small_float_to_float(DataType::Float8E8M0, 255)));
  EXPECT_THROW(run_op(node("sideways"), {x}, 25), onyx::Error);
}

TEST(BitCast, SameWidthTypes) {
  auto x = Tensor::from_vector<float>({1.0f, -2.0f}, {2});
  auto out = run_op(make_node("BitCast", {"x"}, {"y"}, {{"to", attr_int(static_cast<int64_t>(DataType::Int32))}}), {x}, 26);
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{0x3F800000, static_cast<int32_t>(0xC0000000u)}));
  auto u4 = narrow(DataType::UInt4, {15, 8, 7});
  out = run_op(make_node("BitCast", {"x"}, {"y"}, {{"to", attr_int(static_cast<int64_t>(DataType::Int4))}}), {u4}, 26);
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{-1, -8, 7}));
  EXPECT_THROW(run_op(make_node("BitCast", {"x"}, {"y"}, {{"to", attr_int(static_cast<int64_t>(DataType::Int64))}}), {x}, 26),
               onyx::Error);
}

}  // namespace
}  // namespace onyx::test
