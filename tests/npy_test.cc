// .npy files as the CLI reads inputs: numeric arrays and numpy's fixed-width strings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "onnx/npy.h"
#include "onyx/status.h"

namespace onyx {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("onyx_npy_test_" + name)).string();
}

// A version-1 .npy file with the given header dictionary and payload, as numpy writes it.
void write_raw_npy(const std::string& path, const std::string& dict, const std::string& payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << header << payload;
}

std::string utf32(const std::u32string& s) {
  return std::string(reinterpret_cast<const char*>(s.data()), s.size() * 4);
}

TEST(Npy, UnicodeStringsDecodeToUtf8WithoutPadding) {
  std::string path = temp_path("unicode.npy");
  // numpy.array([["cat"], ["größe"]]) is '<U5': each element padded with zeros to 5 code points.
  write_raw_npy(path, "{'descr': '<U5', 'fortran_order': False, 'shape': (2, 1), }",
                utf32(std::u32string(U"cat\0\0", 5)) + utf32(U"größe"));
  Tensor t = read_npy(path);
  ASSERT_EQ(t.dtype(), DataType::String);
  EXPECT_EQ(t.shape(), (Shape{2, 1}));
  EXPECT_EQ(t.data<std::string>()[0], "cat");
  EXPECT_EQ(t.data<std::string>()[1], "gr\xC3\xB6\xC3\x9F" "e");
}

TEST(Npy, ByteStringsKeepTheirBytes) {
  std::string path = temp_path("bytes.npy");
  write_raw_npy(path, "{'descr': '|S4', 'fortran_order': False, 'shape': (3,), }",
                std::string("ab\0\0wxyz\0\0\0\0", 12));
  Tensor t = read_npy(path);
  ASSERT_EQ(t.dtype(), DataType::String);
  EXPECT_EQ(t.data<std::string>()[0], "ab");
  EXPECT_EQ(t.data<std::string>()[1], "wxyz");
  EXPECT_EQ(t.data<std::string>()[2], "");
}

TEST(Npy, StringTensorRoundTrips) {
  std::string path = temp_path("roundtrip.npy");
  Tensor t(DataType::String, {3});
  t.data<std::string>()[0] = "";
  t.data<std::string>()[1] = "\xE2\x82\xAC 5";  // "€ 5": one 3-byte code point
  t.data<std::string>()[2] = "longest";
  write_npy(path, t);
  Tensor back = read_npy(path);
  ASSERT_EQ(back.dtype(), DataType::String);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back.data<std::string>()[i], t.data<std::string>()[i]);
}

TEST(Npy, ObjectArraysAndTruncatedStringsAreClearErrors) {
  std::string object_path = temp_path("object.npy");
  write_raw_npy(object_path, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "pickle");
  try {
    read_npy(object_path);
    FAIL() << "object array accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("object array"), std::string::npos) << e.what();
  }
  std::string short_path = temp_path("short.npy");
  write_raw_npy(short_path, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", utf32(U"abc"));
  EXPECT_THROW(read_npy(short_path), Error);
}

}  // namespace
}  // namespace onyx
