// ImageDecoder (opset 20): an encoded image (uint8 bytes) -> a uint8 tensor
// [H, W, C] in RGB, BGR or Grayscale. BMP, the PNM family (PBM/PGM/PPM) and
// uncompressed baseline TIFF are decoded here; JPEG, PNG, JPEG 2000 and WebP
// through libjpeg, libpng, libopenjp2 and libwebp when the build found them
// (ONYX_WITH_JPEG / _PNG / _OPENJP2 / _WEBP, see src/CMakeLists.txt). A format
// whose library is missing, and compressed TIFF, are reported as not supported.
// A stream that is not a recognizable image, or is corrupt, decodes to an
// empty tensor, as the spec says.
#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"

#if ONYX_WITH_JPEG
#include <jpeglib.h>
#endif
#if ONYX_WITH_PNG
#include <png.h>
#endif
#if ONYX_WITH_OPENJP2
#include <openjpeg.h>
#endif
#if ONYX_WITH_WEBP
#include <webp/decode.h>
#endif

namespace onyx {
namespace {

struct Image {
  int64_t h = 0, w = 0, c = 0;  // c: 1 (gray) or 3 (RGB)
  std::vector<uint8_t> px;
  bool ok() const { return h > 0 && w > 0 && px.size() == static_cast<size_t>(h * w * c); }
};

struct Bytes {
  const uint8_t* p;
  size_t n;
  bool has(size_t off, size_t len) const { return off <= n && len <= n - off; }
  uint32_t u16(size_t off) const { return p[off] | (p[off + 1] << 8); }
  uint32_t u32(size_t off) const { return u16(off) | (u16(off + 2) << 16); }
};

// ---- BMP: uncompressed 1/4/8-bit (palette), 24-bit and 32-bit, bottom-up or top-down.
Image decode_bmp(const Bytes& b) {
  Image img;
  if (!b.has(0, 54)) return img;
  uint32_t data_off = b.u32(10), hdr = b.u32(14);
  if (hdr < 40 || !b.has(14, hdr)) return img;
  int32_t w = static_cast<int32_t>(b.u32(18)), h = static_cast<int32_t>(b.u32(22));
  uint32_t bpp = b.u16(28), comp = b.u32(30);
  if (w <= 0 || h == 0 || w > (1 << 16) || h > (1 << 16) || h < -(1 << 16)) return img;
  if (comp != 0 && !(comp == 3 && bpp == 32)) return img;  // BI_RGB, or BI_BITFIELDS in the usual BGRA layout
  bool top_down = h < 0;
  int64_t H = top_down ? -static_cast<int64_t>(h) : h;
  size_t row = ((static_cast<size_t>(w) * bpp + 31) / 32) * 4;
  if (!b.has(data_off, row * H)) return img;
  std::vector<uint8_t> pal;
  if (bpp <= 8) {
    uint32_t ncol = b.u32(46);
    if (ncol == 0) ncol = 1u << bpp;
    size_t pal_off = 14 + hdr;
    if (!b.has(pal_off, ncol * 4)) return img;
    pal.assign(b.p + pal_off, b.p + pal_off + ncol * 4);
  } else if (bpp != 24 && bpp != 32) {
    return img;
  }
  img.h = H, img.w = w, img.c = 3;
  img.px.resize(static_cast<size_t>(H * w * 3));
  for (int64_t y = 0; y < H; ++y) {
    const uint8_t* r = b.p + data_off + row * (top_down ? y : H - 1 - y);
    for (int64_t x = 0; x < w; ++x) {
      uint8_t* o = img.px.data() + (y * w + x) * 3;
      if (bpp >= 24) {
        const uint8_t* s = r + x * (bpp / 8);
        o[0] = s[2], o[1] = s[1], o[2] = s[0];
      } else {
        size_t bit = static_cast<size_t>(x) * bpp;
        uint32_t idx = (r[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        if (idx * 4 + 3 >= pal.size()) return Image();
        o[0] = pal[idx * 4 + 2], o[1] = pal[idx * 4 + 1], o[2] = pal[idx * 4];
      }
    }
  }
  return img;
}

// ---- PNM: P1-P6 (ASCII and binary bitmaps, graymaps, pixmaps), maxval up to 65535.
Image decode_pnm(const Bytes& b) {
  Image img;
  if (b.n < 3 || b.p[0] != 'P' || b.p[1] < '1' || b.p[1] > '6') return img;
  int kind = b.p[1] - '0';
  size_t pos = 2;
  auto skip = [&]() {
    while (pos < b.n) {
      if (b.p[pos] == '#') {
        while (pos < b.n && b.p[pos] != '\n') ++pos;
      } else if (std::isspace(b.p[pos])) {
        ++pos;
      } else {
        break;
      }
    }
  };
  auto number = [&](int64_t& v) {
    skip();
    if (pos >= b.n || !std::isdigit(b.p[pos])) return false;
    v = 0;
    while (pos < b.n && std::isdigit(b.p[pos]) && v < (1 << 24)) v = v * 10 + (b.p[pos++] - '0');
    return true;
  };
  int64_t w, h, maxval = 1;
  if (!number(w) || !number(h) || w <= 0 || h <= 0 || w > (1 << 16) || h > (1 << 16)) return img;
  bool bitmap = kind == 1 || kind == 4;
  if (!bitmap && (!number(maxval) || maxval <= 0 || maxval > 65535)) return img;
  int ch = (kind == 3 || kind == 6) ? 3 : 1;
  bool binary = kind >= 4;
  if (binary) ++pos;  // the single whitespace after the header
  img.h = h, img.w = w, img.c = ch;
  img.px.resize(static_cast<size_t>(h * w * ch));
  auto scale = [&](int64_t v) { return static_cast<uint8_t>((v * 255 + maxval / 2) / maxval); };
  if (bitmap && binary) {
    size_t row = static_cast<size_t>((w + 7) / 8);
    if (!b.has(pos, row * h)) return Image();
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        img.px[y * w + x] = ((b.p[pos + y * row + x / 8] >> (7 - x % 8)) & 1) ? 0 : 255;  // 1 is black
    return img;
  }
  size_t n = img.px.size();
  if (binary) {
    size_t bps = maxval > 255 ? 2 : 1;
    if (!b.has(pos, n * bps)) return Image();
    for (size_t i = 0; i < n; ++i) {
      int64_t v = bps == 2 ? (b.p[pos + 2 * i] << 8) | b.p[pos + 2 * i + 1] : b.p[pos + i];
      img.px[i] = scale(std::min(v, maxval));
    }
    return img;
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t v;
    if (!number(v)) return Image();
    img.px[i] = bitmap ? (v ? 0 : 255) : scale(std::min(v, maxval));
  }
  return img;
}

// ---- TIFF: baseline, uncompressed, 8 bits per sample, gray or RGB(A), chunky strips.
Image decode_tiff(const Bytes& b) {
  Image img;
  if (b.n < 8) return img;
  bool le = b.p[0] == 'I';
  auto u16 = [&](size_t off) -> uint32_t { return le ? (b.p[off] | (b.p[off + 1] << 8)) : ((b.p[off] << 8) | b.p[off + 1]); };
  auto u32 = [&](size_t off) -> uint32_t {
    return le ? (u16(off) | (u16(off + 2) << 16)) : ((u16(off) << 16) | u16(off + 2));
  };
  size_t ifd = u32(4);
  if (!b.has(ifd, 2)) return img;
  uint32_t count = u16(ifd);
  if (!b.has(ifd + 2, count * 12)) return img;
  // A field's values: inline when they fit in 4 bytes, else at an offset.
  auto values = [&](size_t entry) {
    uint32_t type = u16(entry + 2), n = u32(entry + 4);
    size_t size = type == 3 ? 2 : type == 4 ? 4 : type == 1 ? 1 : 0;
    std::vector<uint32_t> v;
    if (!size || n > (1u << 20)) return v;
    size_t at = n * size <= 4 ? entry + 8 : u32(entry + 8);
    if (!b.has(at, n * size)) return v;
    for (uint32_t i = 0; i < n; ++i)
      v.push_back(size == 1 ? b.p[at + i] : size == 2 ? u16(at + 2 * i) : u32(at + 4 * i));
    return v;
  };
  uint32_t w = 0, h = 0, compression = 1, photometric = 1, spp = 1, rows_per_strip = 0, planar = 1;
  std::vector<uint32_t> bits = {1}, offsets, counts;
  for (uint32_t i = 0; i < count; ++i) {
    size_t e = ifd + 2 + 12 * i;
    std::vector<uint32_t> v = values(e);
    if (v.empty()) continue;
    switch (u16(e)) {
      case 256: w = v[0]; break;
      case 257: h = v[0]; break;
      case 258: bits = v; break;
      case 259: compression = v[0]; break;
      case 262: photometric = v[0]; break;
      case 273: offsets = v; break;
      case 277: spp = v[0]; break;
      case 278: rows_per_strip = v[0]; break;
      case 279: counts = v; break;
      case 284: planar = v[0]; break;
      default: break;
    }
  }
  if (compression != 1)
    fail(ErrorCode::NotImplemented, "ImageDecoder: compressed TIFF (compression " + std::to_string(compression) +
                                        ") is not supported");
  for (uint32_t bv : bits)
    if (bv != 8) fail(ErrorCode::NotImplemented, "ImageDecoder: TIFF with " + std::to_string(bv) + "-bit samples is not supported");
  if (w == 0 || h == 0 || w > (1u << 16) || h > (1u << 16) || planar != 1 || photometric > 2 ||
      (photometric == 2 ? spp < 3 : spp < 1) || spp > 4 || offsets.empty())
    return img;
  if (rows_per_strip == 0 || rows_per_strip > h) rows_per_strip = h;
  size_t row = static_cast<size_t>(w) * spp;
  img.h = h, img.w = w, img.c = photometric == 2 ? 3 : 1;
  img.px.resize(static_cast<size_t>(h) * w * img.c);
  for (uint32_t y = 0; y < h; ++y) {
    size_t strip = y / rows_per_strip;
    if (strip >= offsets.size()) return Image();
    size_t at = offsets[strip] + (y % rows_per_strip) * row;
    if (!b.has(at, row)) return Image();
    for (uint32_t x = 0; x < w; ++x) {
      const uint8_t* p = b.p + at + static_cast<size_t>(x) * spp;
      uint8_t* o = img.px.data() + (static_cast<size_t>(y) * w + x) * img.c;
      if (img.c == 3) o[0] = p[0], o[1] = p[1], o[2] = p[2];
      else o[0] = photometric == 0 ? static_cast<uint8_t>(255 - p[0]) : p[0];  // WhiteIsZero
    }
  }
  return img;
}

#if ONYX_WITH_JPEG
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
};

void jpeg_error_exit(j_common_ptr cinfo) { std::longjmp(reinterpret_cast<JpegError*>(cinfo->err)->jump, 1); }
void jpeg_silent(j_common_ptr, int) {}

// libjpeg's defaults: islow DCT and "fancy" (triangle) chroma upsampling, as the spec describes.
Image decode_jpeg(const Bytes& b) {
  Image img;
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  err.mgr.emit_message = jpeg_silent;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return Image();
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, const_cast<unsigned char*>(b.p), static_cast<unsigned long>(b.n));
  jpeg_read_header(&cinfo, TRUE);
  bool gray = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  img.h = cinfo.output_height, img.w = cinfo.output_width, img.c = cinfo.output_components;
  img.px.resize(static_cast<size_t>(img.h * img.w * img.c));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img.px.data() + static_cast<size_t>(cinfo.output_scanline) * img.w * img.c;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return img;
}
#endif

#if ONYX_WITH_PNG
Image decode_png(const Bytes& b) {
  Image img;
  png_image pi;
  std::memset(&pi, 0, sizeof pi);
  pi.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&pi, b.p, b.n)) return img;
  bool gray = (pi.format & PNG_FORMAT_FLAG_COLOR) == 0;
  pi.format = gray ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;  // alpha is composed over black
  img.h = pi.height, img.w = pi.width, img.c = gray ? 1 : 3;
  img.px.resize(PNG_IMAGE_SIZE(pi));
  if (!png_image_finish_read(&pi, nullptr, img.px.data(), 0, nullptr)) {
    png_image_free(&pi);
    return Image();
  }
  return img;
}
#endif

#if ONYX_WITH_OPENJP2
// openjpeg reads through a stream of callbacks; this one walks the encoded bytes in memory.
struct MemoryStream {
  Bytes bytes;
  size_t pos = 0;
};

OPJ_SIZE_T memory_read(void* dst, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  if (s->pos >= s->bytes.n) return static_cast<OPJ_SIZE_T>(-1);  // openjpeg's end of stream
  n = std::min<OPJ_SIZE_T>(n, s->bytes.n - s->pos);
  std::memcpy(dst, s->bytes.p + s->pos, n);
  s->pos += n;
  return n;
}

// A skip must move by exactly n or fail: openjpeg retries a short skip forever.
OPJ_OFF_T memory_skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  OPJ_OFF_T target = static_cast<OPJ_OFF_T>(s->pos) + n;
  if (target < 0 || target > static_cast<OPJ_OFF_T>(s->bytes.n)) return -1;
  s->pos = static_cast<size_t>(target);
  return n;
}

OPJ_BOOL memory_seek(OPJ_OFF_T to, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  if (to < 0 || to > static_cast<OPJ_OFF_T>(s->bytes.n)) return OPJ_FALSE;
  s->pos = static_cast<size_t>(to);
  return OPJ_TRUE;
}

// Owns what one openjpeg decode allocates.
struct OpenJpegDecode {
  MemoryStream memory;
  opj_stream_t* stream = nullptr;
  opj_codec_t* codec = nullptr;
  opj_image_t* image = nullptr;
  ~OpenJpegDecode() {
    if (image) opj_image_destroy(image);
    if (codec) opj_destroy_codec(codec);
    if (stream) opj_stream_destroy(stream);
  }
};

// Decoded components (int32 samples of any precision, maybe signed) -> 8-bit
// gray or RGB. A second or fourth component is alpha and is dropped, as the
// reference (Pillow's convert("RGB")) does.
Image image_from_components(const opj_image_t& j) {
  if (j.color_space == OPJ_CLRSPC_SYCC || j.color_space == OPJ_CLRSPC_EYCC || j.color_space == OPJ_CLRSPC_CMYK)
    fail(ErrorCode::NotImplemented, "ImageDecoder: JPEG 2000 in YCC or CMYK colour is not supported");
  Image img;
  if (j.numcomps == 0) return img;
  img.c = j.numcomps >= 3 ? 3 : 1;
  const opj_image_comp_t& first = j.comps[0];
  img.h = first.h, img.w = first.w;
  for (int64_t k = 0; k < img.c; ++k) {
    const opj_image_comp_t& comp = j.comps[k];
    if (comp.w != first.w || comp.h != first.h)
      fail(ErrorCode::NotImplemented, "ImageDecoder: JPEG 2000 with subsampled components is not supported");
    if (comp.prec == 0 || comp.prec > 16)
      fail(ErrorCode::NotImplemented, "ImageDecoder: JPEG 2000 with " + std::to_string(comp.prec) +
                                          "-bit samples is not supported");
    if (!comp.data) return Image();
  }
  img.px.resize(static_cast<size_t>(img.h * img.w * img.c));
  for (int64_t k = 0; k < img.c; ++k) {
    const opj_image_comp_t& comp = j.comps[k];
    int64_t offset = comp.sgnd ? int64_t{1} << (comp.prec - 1) : 0, maxval = (int64_t{1} << comp.prec) - 1;
    for (int64_t i = 0; i < img.h * img.w; ++i) {
      int64_t v = std::clamp<int64_t>(comp.data[i] + offset, 0, maxval);
      img.px[i * img.c + k] = static_cast<uint8_t>(comp.prec == 8 ? v : (v * 255 + maxval / 2) / maxval);
    }
  }
  return img;
}

// A JP2 file or a bare J2K codestream; lossless and lossy, any number of layers.
Image decode_jpeg2000(const Bytes& b, bool jp2_file) {
  OpenJpegDecode d;
  d.memory.bytes = b;
  d.stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  if (!d.stream) return Image();
  opj_stream_set_user_data(d.stream, &d.memory, nullptr);
  opj_stream_set_user_data_length(d.stream, b.n);
  opj_stream_set_read_function(d.stream, memory_read);
  opj_stream_set_skip_function(d.stream, memory_skip);
  opj_stream_set_seek_function(d.stream, memory_seek);
  d.codec = opj_create_decompress(jp2_file ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!d.codec || !opj_setup_decoder(d.codec, &params) || !opj_read_header(d.stream, d.codec, &d.image) ||
      !opj_decode(d.codec, d.stream, d.image) || !opj_end_decompress(d.codec, d.stream))
    return Image();
  return image_from_components(*d.image);
}
#endif

#if ONYX_WITH_WEBP
// Still images, lossy or lossless, with libwebp's default ("fancy") chroma
// upsampling, as the reference (Pillow over libwebp) decodes. Alpha is dropped.
Image decode_webp(const Bytes& b) {
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(b.p, b.n, &features) != VP8_STATUS_OK) return Image();
  if (features.has_animation) fail(ErrorCode::NotImplemented, "ImageDecoder: animated WebP is not supported");
  Image img;
  img.h = features.height, img.w = features.width, img.c = 3;
  img.px.resize(static_cast<size_t>(img.h * img.w * img.c));
  if (!WebPDecodeRGBInto(b.p, b.n, img.px.data(), img.px.size(), static_cast<int>(img.w * img.c))) return Image();
  return img;
}
#endif

bool starts(const Bytes& b, const char* magic, size_t n) { return b.n >= n && std::memcmp(b.p, magic, n) == 0; }

Image decode(const Bytes& b) {
  if (starts(b, "BM", 2)) return decode_bmp(b);
  if (b.n >= 2 && b.p[0] == 'P' && b.p[1] >= '1' && b.p[1] <= '6') return decode_pnm(b);
  if (starts(b, "\xFF\xD8\xFF", 3)) {
#if ONYX_WITH_JPEG
    return decode_jpeg(b);
#else
    fail(ErrorCode::NotImplemented, "ImageDecoder: JPEG needs libjpeg, which this build of Onyx was made without");
#endif
  }
  if (starts(b, "\x89PNG\r\n\x1a\n", 8)) {
#if ONYX_WITH_PNG
    return decode_png(b);
#else
    fail(ErrorCode::NotImplemented, "ImageDecoder: PNG needs libpng, which this build of Onyx was made without");
#endif
  }
  if (starts(b, "II*\0", 4) || starts(b, "MM\0*", 4)) return decode_tiff(b);
  if (starts(b, "RIFF", 4) && b.n >= 12 && std::memcmp(b.p + 8, "WEBP", 4) == 0) {
#if ONYX_WITH_WEBP
    return decode_webp(b);
#else
    fail(ErrorCode::NotImplemented, "ImageDecoder: WebP needs libwebp, which this build of Onyx was made without");
#endif
  }
  bool jp2_file = starts(b, "\0\0\0\x0CjP  ", 8);
  if (jp2_file || starts(b, "\xFF\x4F\xFF\x51", 4)) {
#if ONYX_WITH_OPENJP2
    return decode_jpeg2000(b, jp2_file);
#else
    fail(ErrorCode::NotImplemented,
         "ImageDecoder: JPEG 2000 needs libopenjp2, which this build of Onyx was made without");
#endif
  }
  return Image();  // not an image we recognize: an empty result
}

}  // namespace

void register_image_decoder(KernelRegistry& r) {
  r.add("ImageDecoder", 20, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          std::string fmt = ic.get_string("pixel_format", "RGB");
          if (fmt != "RGB" && fmt != "BGR" && fmt != "Grayscale")
            kernel_fail("ImageDecoder: pixel_format must be RGB, BGR or Grayscale, got '" + fmt + "'");
          return [fmt](KernelContext& ctx) {
            const Tensor& in = ctx.input(0);
            if (in.dtype() != DataType::UInt8 || in.rank() != 1)
              kernel_fail("ImageDecoder: encoded_stream must be a 1-D uint8 tensor");
            Image img = decode(Bytes{in.data<uint8_t>(), static_cast<size_t>(in.numel())});
            int64_t oc = fmt == "Grayscale" ? 1 : 3;
            if (!img.ok()) {
              ctx.allocate_output(0, DataType::UInt8, {0, 0, oc});
              return;
            }
            Tensor& y = ctx.allocate_output(0, DataType::UInt8, {img.h, img.w, oc});
            uint8_t* o = y.data<uint8_t>();
            int64_t n = img.h * img.w;
            for (int64_t i = 0; i < n; ++i) {
              const uint8_t* p = img.px.data() + i * img.c;
              uint8_t r = p[0], g = img.c == 3 ? p[1] : p[0], bl = img.c == 3 ? p[2] : p[0];
              if (fmt == "RGB") {
                o[i * 3] = r, o[i * 3 + 1] = g, o[i * 3 + 2] = bl;
              } else if (fmt == "BGR") {
                o[i * 3] = bl, o[i * 3 + 1] = g, o[i * 3 + 2] = r;
              } else {  // ITU-R BT.601 luma in 16-bit fixed point, rounded
                o[i] = img.c == 1 ? p[0]
                                  : static_cast<uint8_t>((r * 19595u + g * 38470u + bl * 7471u + 0x8000u) >> 16);
              }
            }
          };
        }));
}

}  // namespace onyx
