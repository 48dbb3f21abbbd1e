// TensorProto storage of the narrow types: int4/uint4/float4e2m1 two per byte,
// int2/uint2 four per byte, float6 four per three bytes (a little-endian bit
// stream, element 0 in the lowest bits), as the ONNX spec lays them out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx/tensor_proto.h"

namespace onyx {
namespace {

std::vector<int64_t> values(const Tensor& t) { return t.to_int64_vector(); }

TEST(TensorProto, Int4PackedRawDataAndInt32Data) {
  onnx::TensorProto p;
  p.set_data_type(static_cast<int32_t>(DataType::Int4));
  p.add_dims(3);
  // Elements 1, -2, 7: bytes 0xE1 (low nibble 1, high nibble 0xE = -2), 0x07.
  p.set_raw_data(std::string("\xE1\x07", 2));
  Tensor t = tensor_from_proto(p, nullptr);
  EXPECT_EQ(values(t), (std::vector<int64_t>{1, -2, 7}));
  // The same packed bytes in int32_data, one byte per entry.
  p.clear_raw_data();
  p.add_int32_data(0xE1);
  p.add_int32_data(0x07);
  EXPECT_EQ(values(tensor_from_proto(p, nullptr)), (std::vector<int64_t>{1, -2, 7}));
  // Writing packs them again.
  onnx::TensorProto out;
  tensor_to_proto(t, &out);
  EXPECT_EQ(out.raw_data(), std::string("\xE1\x07", 2));
  // A wrong byte count is an error, not a crash.
  p.clear_int32_data();
  p.set_raw_data(std::string("\xE1", 1));
  EXPECT_THROW(tensor_from_proto(p, nullptr), Error);
}

TEST(TensorProto, UInt2AndFloat6Packing) {
  onnx::TensorProto p;
  p.set_data_type(static_cast<int32_t>(DataType::UInt2));
  p.add_dims(5);
  // 3, 0, 1, 2 | 3: 0b10'01'00'11 = 0x93, then 0x03.
  p.set_raw_data(std::string("\x93\x03", 2));
  Tensor t = tensor_from_proto(p, nullptr);
  EXPECT_EQ(values(t), (std::vector<int64_t>{3, 0, 1, 2, 3}));
  onnx::TensorProto out;
  tensor_to_proto(t, &out);
  EXPECT_EQ(out.raw_data(), std::string("\x93\x03", 2));

  onnx::TensorProto f6;
  f6.set_data_type(static_cast<int32_t>(DataType::Float6E2M3));
  f6.add_dims(2);
  // Codes 0x08 (1.0) and 0x3F (-7.5) as a 12-bit stream: 0x08 | 0x3F << 6 = 0xFC8 -> bytes C8 0F.
  f6.set_raw_data(std::string("\xC8\x0F", 2));
  Tensor t6 = tensor_from_proto(f6, nullptr);
  EXPECT_EQ(t6.float_at(0), 1.0);
  EXPECT_EQ(t6.float_at(1), -7.5);
  tensor_to_proto(t6, &out);
  EXPECT_EQ(out.raw_data(), std::string("\xC8\x0F", 2));
}

TEST(TensorProto, NewestTypesLoad) {
  onnx::TensorProto p;
  p.set_data_type(static_cast<int32_t>(DataType::Float8E8M0));
  p.add_dims(2);
  p.add_int32_data(127);
  p.add_int32_data(130);
  Tensor t = tensor_from_proto(p, nullptr);
  EXPECT_EQ(t.float_at(0), 1.0);
  EXPECT_EQ(t.float_at(1), 8.0);
  p.set_data_type(99);
  EXPECT_THROW(tensor_from_proto(p, nullptr), Error);
}

}  // namespace
}  // namespace onyx
