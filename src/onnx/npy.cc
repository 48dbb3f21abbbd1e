#include "onnx/npy.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/utf8.h"

namespace onyx {

namespace {

struct NpyType {
  const char* descr;
  DataType dtype;
};

const NpyType kTypes[] = {
    {"<f4", DataType::Float}, {"<f8", DataType::Double}, {"<f2", DataType::Float16}, {"<i8", DataType::Int64},
    {"<i4", DataType::Int32}, {"<i2", DataType::Int16}, {"|i1", DataType::Int8},     {"<u8", DataType::UInt64},
    {"<u4", DataType::UInt32}, {"<u2", DataType::UInt16}, {"|u1", DataType::UInt8},  {"|b1", DataType::Bool},
};

std::string header_field(const std::string& header, const std::string& key, const std::string& path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) fail(ErrorCode::InvalidArgument, "'" + path + "': .npy header has no '" + key + "'");
  size_t colon = header.find(':', k);
  return header.substr(colon + 1);
}

// Fixed-width numpy strings: '<U<n>' holds n UTF-32 code units per element,
// '|S<n>' n bytes; both pad with zeros, which numpy strips on reading.
struct NpyStringType {
  bool unicode = false;
  int64_t width = 0;
};

bool parse_string_descr(const std::string& descr, NpyStringType* type) {
  if (descr.size() < 3 || (descr.compare(0, 2, "<U") != 0 && descr.compare(0, 2, "|S") != 0)) return false;
  if (descr.find_first_not_of("0123456789", 2) != std::string::npos) return false;
  type->unicode = descr[1] == 'U';
  type->width = std::stoll(descr.substr(2));
  return true;
}

void read_strings(std::ifstream& in, const NpyStringType& type, Tensor& t, const std::string& path) {
  size_t unit = type.unicode ? 4 : 1;
  std::vector<char> buffer(static_cast<size_t>(type.width) * unit);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())))
      fail(ErrorCode::InvalidArgument, "'" + path + "' is truncated");
    std::string& out = t.data<std::string>()[i];
    if (!type.unicode) {
      out.assign(buffer.data(), strnlen(buffer.data(), buffer.size()));
      continue;
    }
    std::u32string code_points(static_cast<size_t>(type.width), U'\0');
    std::memcpy(code_points.data(), buffer.data(), buffer.size());
    code_points.resize(code_points.find_last_not_of(U'\0') + 1);
    out = utf8_encode(code_points);
  }
}

// A string tensor's elements as code points, each padded to the longest ('<U<width>').
std::vector<std::u32string> padded_code_points(const Tensor& t, int64_t* width) {
  std::vector<std::u32string> elements;
  *width = 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    elements.push_back(utf8_decode(t.data<std::string>()[i]));
    *width = std::max<int64_t>(*width, static_cast<int64_t>(elements.back().size()));
  }
  for (auto& e : elements) e.resize(static_cast<size_t>(*width), U'\0');
  return elements;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::NoSuchFile, "cannot open input file '" + path + "'");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    fail(ErrorCode::InvalidArgument, "'" + path + "' is not a .npy file");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint16_t l;
    in.read(reinterpret_cast<char*>(&l), 2);
    header_len = l;
  } else {
    in.read(reinterpret_cast<char*>(&header_len), 4);
  }
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  std::string descr = header_field(header, "descr", path);
  descr = descr.substr(descr.find('\'') + 1);
  descr = descr.substr(0, descr.find('\''));
  if (descr == "<i1") descr = "|i1";
  if (descr == "<u1") descr = "|u1";
  DataType dt = DataType::Undefined;
  for (const auto& t : kTypes)
    if (descr == t.descr) dt = t.dtype;
  NpyStringType string_type;
  if (parse_string_descr(descr, &string_type)) dt = DataType::String;
  if (descr == "|O")
    fail(ErrorCode::InvalidArgument, "'" + path + "' holds a numpy object array (pickled): save strings as a "
         "fixed-width array (numpy.save(path, array.astype(str)))");
  if (dt == DataType::Undefined) fail(ErrorCode::InvalidArgument, "'" + path + "': unsupported .npy dtype '" + descr + "'");
  std::string fortran = header_field(header, "fortran_order", path);
  if (fortran.find("True") < fortran.find(','))
    fail(ErrorCode::InvalidArgument, "'" + path + "': Fortran-ordered .npy files are not supported");
  std::string shape_str = header_field(header, "shape", path);
  shape_str = shape_str.substr(shape_str.find('(') + 1);
  shape_str = shape_str.substr(0, shape_str.find(')'));
  Shape shape;
  std::stringstream ss(shape_str);
  std::string tok;
  while (std::getline(ss, tok, ','))
    if (tok.find_first_not_of(" ") != std::string::npos) shape.push_back(std::stoll(tok));
  Tensor t(dt, shape);
  if (dt == DataType::String) {
    read_strings(in, string_type, t, path);
    return t;
  }
  if (!in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes())))
    fail(ErrorCode::InvalidArgument, "'" + path + "' is truncated");
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string descr;
  int64_t string_width = 0;
  std::vector<std::u32string> strings;
  for (const auto& nt : kTypes)
    if (nt.dtype == t.dtype()) descr = nt.descr;
  if (t.dtype() == DataType::String) {
    strings = padded_code_points(t, &string_width);
    descr = "<U" + std::to_string(string_width);
  }
  if (descr.empty()) fail(ErrorCode::InvalidArgument, "cannot write " + dtype_name(t.dtype()) + " as .npy");
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(ErrorCode::NoSuchFile, "cannot write '" + path + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << header;
  if (t.dtype() == DataType::String) {
    for (const auto& s : strings)
      out.write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(string_width * 4));
  } else {
    out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  }
}

}  // namespace onyx
