#include "onnx/inline_weights.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace onyx {

namespace {

// Field numbers from onnx.proto.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorDataType = 2;
constexpr uint32_t kTensorRawData = 9;
constexpr uint32_t kTensorExternalData = 13;
constexpr uint32_t kTensorDataLocation = 14;
constexpr uint32_t kEntryKey = 1, kEntryValue = 2;
constexpr int kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5;
constexpr uint64_t kLocationExternal = 1;

// Element types whose raw_data is a plain little-endian array the tensor can
// point at: no strings, complex or sub-byte packed types.
bool plain_element_type(uint64_t t) {
  switch (t) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 9: case 10: case 11: case 12: case 13: case 16:
      return true;
    default:
      return false;
  }
}

struct Field {
  uint32_t number = 0;
  int wire_type = 0;
  uint64_t varint = 0;        // value of a varint field
  std::string_view payload;   // contents of a length-delimited field
  std::string_view whole;     // tag and value, as stored
};

// Reads protobuf fields one at a time; stops (ok() false) at anything malformed.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return pos_ >= bytes_.size() || !ok_; }
  bool ok() const { return ok_; }

  std::optional<Field> next() {
    size_t start = pos_;
    Field f;
    std::optional<uint64_t> tag = varint();
    if (!tag || (*tag >> 3) == 0 || (*tag >> 3) > UINT32_MAX) return fail();
    f.number = static_cast<uint32_t>(*tag >> 3);
    f.wire_type = static_cast<int>(*tag & 7);
    switch (f.wire_type) {
      case kVarint: {
        auto v = varint();
        if (!v) return fail();
        f.varint = *v;
        break;
      }
      case kFixed64: if (!skip(8)) return fail(); break;
      case kFixed32: if (!skip(4)) return fail(); break;
      case kBytes: {
        auto n = varint();
        if (!n || *n > bytes_.size() - pos_) return fail();
        f.payload = bytes_.substr(pos_, *n);
        pos_ += *n;
        break;
      }
      default: return fail();  // groups are not used by onnx.proto
    }
    f.whole = bytes_.substr(start, pos_ - start);
    return f;
  }

 private:
  std::optional<uint64_t> varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && pos_ < bytes_.size(); shift += 7) {
      uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return std::nullopt;
  }
  bool skip(size_t n) {
    if (n > bytes_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  std::nullopt_t fail() {
    ok_ = false;
    return std::nullopt;
  }

  std::string_view bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_bytes(std::string& out, uint32_t number, std::string_view payload) {
  put_varint(out, (static_cast<uint64_t>(number) << 3) | kBytes);
  put_varint(out, payload.size());
  out.append(payload);
}

void put_entry(std::string& out, std::string_view key, std::string_view value) {
  std::string entry;
  put_bytes(entry, kEntryKey, key);
  put_bytes(entry, kEntryValue, value);
  put_bytes(out, kTensorExternalData, entry);
}

class Rewriter {
 public:
  Rewriter(const char* base, std::string_view location, size_t min_bytes)
      : base_(base), location_(location), min_bytes_(min_bytes) {}
  bool ok = true;
  size_t rewritten = 0;

  std::string model(std::string_view bytes) {
    return rewrite_fields(bytes, kModelGraph, [this](std::string_view g) { return graph(g); });
  }

 private:
  std::string graph(std::string_view bytes) {
    return rewrite_fields(bytes, kGraphInitializer, [this](std::string_view t) { return tensor(t); });
  }

  // Copies `bytes` field by field, replacing the payload of each field number
  // `target` by `change(payload)`.
  template <typename Change>
  std::string rewrite_fields(std::string_view bytes, uint32_t target, Change change) {
    std::string out;
    WireReader in(bytes);
    while (!in.done()) {
      std::optional<Field> f = in.next();
      if (!f) break;
      if (f->number == target && f->wire_type == kBytes) put_bytes(out, target, change(f->payload));
      else out.append(f->whole);
    }
    if (!in.ok()) ok = false;
    return out;
  }

  std::string tensor(std::string_view bytes) {
    std::optional<Field> raw;
    uint64_t data_type = 0;
    bool has_location = false;
    WireReader scan(bytes);
    while (!scan.done()) {
      std::optional<Field> f = scan.next();
      if (!f) break;
      if (f->number == kTensorDataType && f->wire_type == kVarint) data_type = f->varint;
      if (f->number == kTensorRawData && f->wire_type == kBytes) raw = f;
      if (f->number == kTensorExternalData || f->number == kTensorDataLocation) has_location = true;
    }
    if (!scan.ok()) ok = false;
    if (!scan.ok() || !raw || raw->payload.size() < min_bytes_ || has_location || !plain_element_type(data_type))
      return std::string(bytes);
    std::string out;
    WireReader copy(bytes);
    while (!copy.done()) {
      std::optional<Field> f = copy.next();
      if (f && f->whole.data() != raw->whole.data()) out.append(f->whole);
    }
    put_entry(out, "location", location_);
    put_entry(out, "offset", std::to_string(raw->payload.data() - base_));
    put_entry(out, "length", std::to_string(raw->payload.size()));
    put_varint(out, (static_cast<uint64_t>(kTensorDataLocation) << 3) | kVarint);
    put_varint(out, kLocationExternal);
    ++rewritten;
    return out;
  }

  const char* base_;
  std::string_view location_;
  size_t min_bytes_;
};

}  // namespace

std::string point_initializers_into_file(const char* model, size_t size, const std::string& location,
                                         size_t min_bytes) {
  Rewriter r(model, location, min_bytes);
  std::string out = r.model(std::string_view(model, size));
  if (!r.ok || r.rewritten == 0) return "";
  return out;
}

}  // namespace onyx
