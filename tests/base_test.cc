#include <gtest/gtest.h>

#include <cmath>

#include "kernels/broadcast.h"
#include "onyx/tensor.h"

namespace onyx {

TEST(DType, HalfRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) EXPECT_EQ(half_to_float(float_to_half(f)), f);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);
  EXPECT_EQ(half_to_float(0xfc00), -INFINITY);
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(BFloat16(1.00390625f).bits, 0x3f80);  // halfway, rounds to even
  EXPECT_EQ(BFloat16(1.01171875f).bits, 0x3f82);
}

TEST(Tensor, ReshapeSharesData) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = t.reshaped({3, 2});
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_THROW(t.reshaped({4}), Error);
}

// Element counts past int64 wrapped (2^40 x 2^40 to 0) into a tiny buffer; they are refused.
TEST(Tensor, ShapesPastInt64AreRefused) {
  EXPECT_THROW(Tensor(DataType::Float, {int64_t{1} << 40, int64_t{1} << 40}), Error);
  EXPECT_THROW(Tensor(DataType::Double, {int64_t{1} << 31, int64_t{1} << 31}), Error);  // 2^62 elements, 2^65 bytes
  EXPECT_EQ(Tensor(DataType::Float, {int64_t{1} << 40, int64_t{1} << 40, 0}).numel(), 0);
}

TEST(Tensor, StringsCloneDeeply) {
  Tensor t(DataType::String, {2});
  t.data<std::string>()[0] = "a";
  t.data<std::string>()[1] = "bc";
  Tensor c = t.clone();
  t.data<std::string>()[0] = "z";
  EXPECT_EQ(c.data<std::string>()[0], "a");
  EXPECT_EQ(c.data<std::string>()[1], "bc");
}

TEST(Broadcast, Shapes) {
  EXPECT_EQ(broadcast_shapes({{2, 1, 3}, {4, 1}}), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_shapes({{}, {5}}), (Shape{5}));
  EXPECT_THROW(broadcast_shapes({{2, 3}, {4}}), Error);
}

TEST(Broadcast, Offsets) {
  std::vector<int64_t> offs = broadcast_offsets({3, 1}, {3, 2});
  EXPECT_EQ(offs, (std::vector<int64_t>{0, 0, 1, 1, 2, 2}));
}

}  // namespace onyx
