// ImageDecoder on tiny BMP, PNM and TIFF images built byte by byte.
#include <string>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor bytes(const std::string& s) {
  Tensor t(DataType::UInt8, {static_cast<int64_t>(s.size())});
  for (size_t i = 0; i < s.size(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(s[i]);
  return t;
}

Node decoder(const char* fmt) {
  return make_node("ImageDecoder", {"x"}, {"y"}, {{"pixel_format", attr_string(fmt)}});
}

std::vector<int64_t> pixels(const Tensor& t) { return t.to_int64_vector(); }

TEST(ImageDecoder, PpmRgbBgrAndGrayscale) {
  // 2x1 binary PPM: red, blue.
  Tensor ppm = bytes(std::string("P6\n# comment\n2 1\n255\n") + std::string("\xFF\x00\x00\x00\x00\xFF", 6));
  auto out = run_op(decoder("RGB"), {ppm}, 20);
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(pixels(out[0]), (std::vector<int64_t>{255, 0, 0, 0, 0, 255}));
  out = run_op(decoder("BGR"), {ppm}, 20);
  EXPECT_EQ(pixels(out[0]), (std::vector<int64_t>{0, 0, 255, 255, 0, 0}));
  // BT.601 luma: 0.299 * 255 = 76.2, 0.114 * 255 = 29.1.
  out = run_op(decoder("Grayscale"), {ppm}, 20);
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(pixels(out[0]), (std::vector<int64_t>{76, 29}));
  // ASCII graymap with maxval 15: 15 -> 255, 5 -> 85.
  out = run_op(decoder("RGB"), {bytes("P2 2 1 15 15 5")}, 20);
  EXPECT_EQ(pixels(out[0]), (std::vector<int64_t>{255, 255, 255, 85, 85, 85}));
}

TEST(ImageDecoder, Bmp24BottomUp) {
  // 1x2 (w=1, h=2) 24-bit BMP, rows bottom-up, each padded to 4 bytes: bottom pixel green, top pixel blue.
  std::string h = "BM";
  auto u32 = [](uint32_t v) { return std::string{char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; };
  auto u16 = [](uint32_t v) { return std::string{char(v), char(v >> 8)}; };
  std::string pix = std::string("\x00\xFF\x00\x00", 4) + std::string("\xFF\x00\x00\x00", 4);  // BGR + pad
  h += u32(54 + pix.size()) + u32(0) + u32(54) + u32(40) + u32(1) + u32(2) + u16(1) + u16(24) + u32(0) +
       u32(pix.size()) + u32(2835) + u32(2835) + u32(0) + u32(0);
  auto out = run_op(decoder("RGB"), {bytes(h + pix)}, 20);
  EXPECT_EQ(out[0].shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(pixels(out[0]), (std::vector<int64_t>{0, 0, 255, 0, 255, 0}));
}

// A little-endian baseline TIFF: one strip of 2x1 RGB pixels, `compression` as given.
std::string tiff(uint32_t compression) {
  auto u32 = [](uint32_t v) { return std::string{char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; };
  auto u16 = [](uint32_t v) { return std::string{char(v), char(v >> 8)}; };
  auto entry = [&](uint32_t tag, uint32_t type, uint32_t value) { return u16(tag) + u16(type) + u32(1) + u32(value); };
  std::string t = std::string("II*\0", 4) + u32(8) + u16(9);
  t += entry(256, 3, 2) + entry(257, 3, 1) + entry(258, 3, 8) + entry(259, 3, compression) + entry(262, 3, 2) +
       entry(273, 4, 8 + 2 + 9 * 12 + 4) + entry(277, 3, 3) + entry(278, 3, 1) + entry(279, 4, 6) + u32(0);
  return t + std::string("\x0A\x14\x1E\x28\x32\x3C", 6);
}

TEST(ImageDecoder, UncompressedTiff) {
  auto out = run_op(decoder("RGB"), {bytes(tiff(1))}, 20);
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(pixels(out[0]), (std::vector<int64_t>{10, 20, 30, 40, 50, 60}));
  EXPECT_THROW(run_op(decoder("RGB"), {bytes(tiff(5))}, 20), Error);  // LZW: not supported
}

TEST(ImageDecoder, GarbageIsEmpty) {
  auto out = run_op(decoder("RGB"), {bytes("not an image")}, 20);
  EXPECT_EQ(out[0].shape(), (Shape{0, 0, 3}));
}

// A truncated WebP / JPEG 2000 stream is corrupt (an empty result) when the
// build has the codec, and an error naming the missing library when it has not.
void expect_corrupt_or_missing_codec(const std::string& stream, const char* library) {
  try {
    auto out = run_op(decoder("RGB"), {bytes(stream)}, 20);
    EXPECT_EQ(out[0].shape(), (Shape{0, 0, 3}));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(library), std::string::npos) << e.what();
  }
}

TEST(ImageDecoder, TruncatedWebpAndJpeg2000) {
  expect_corrupt_or_missing_codec(std::string("RIFF\0\0\0\0WEBPVP8 ", 16), "libwebp");
  expect_corrupt_or_missing_codec(std::string("\0\0\0\x0CjP  \r\n\x87\n", 12), "libopenjp2");
  expect_corrupt_or_missing_codec(std::string("\xFF\x4F\xFF\x51\0\x2F", 6), "libopenjp2");
}

}  // namespace
}  // namespace onyx::test
