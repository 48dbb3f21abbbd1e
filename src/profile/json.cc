#include "profile/json.h"

#include <cstdlib>
#include <cstring>

#include "onyx/status.h"

namespace onyx {

const Json* Json::get(const std::string& key) const {
  if (type != Type::Object) return nullptr;
  for (auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

std::string Json::str(const std::string& key, const std::string& def) const {
  const Json* v = get(key);
  return v && v->type == Type::String ? v->string : def;
}

double Json::num(const std::string& key, double def) const {
  const Json* v = get(key);
  return v && v->type == Type::Number ? v->number : def;
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& t) : s_(t) {}

  Json document() {
    Json v = value(0);
    skip_ws();
    if (i_ != s_.size()) bad("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void bad(const std::string& why) {
    fail(ErrorCode::InvalidArgument, "invalid JSON at offset " + std::to_string(i_) + ": " + why);
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) bad(std::string("expected '") + c + "'");
  }

  Json value(int depth) {
    if (depth > 200) bad("nested too deeply");
    skip_ws();
    if (i_ >= s_.size()) bad("unexpected end");
    Json v;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.type = Json::Type::Object;
      if (eat('}')) return v;
      do {
        skip_ws();
        if (i_ >= s_.size() || s_[i_] != '"') bad("expected a key");
        std::string key = string();
        expect(':');
        v.object.emplace_back(std::move(key), value(depth + 1));
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.type = Json::Type::Array;
      if (eat(']')) return v;
      do v.array.push_back(value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.type = Json::Type::String;
      v.string = string();
    } else if (s_.compare(i_, 4, "true") == 0) {
      i_ += 4;
      v.type = Json::Type::Bool;
      v.boolean = true;
    } else if (s_.compare(i_, 5, "false") == 0) {
      i_ += 5;
      v.type = Json::Type::Bool;
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const char* start = s_.c_str() + i_;
      char* end = nullptr;
      v.type = Json::Type::Number;
      v.number = std::strtod(start, &end);
      if (end == start) bad("bad number");
      i_ += end - start;
    } else {
      bad(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  unsigned hex4() {
    if (i_ + 4 > s_.size()) bad("short \\u escape");
    unsigned cp = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[i_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= h - '0';
      else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
      else bad("bad \\u escape");
    }
    return cp;
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    while (true) {
      if (i_ >= s_.size()) bad("unterminated string");
      char c = s_[i_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) bad("unterminated string");
      char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && i_ + 1 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') {
            i_ += 2;
            unsigned lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: bad("bad escape");
      }
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

Json parse_json(const std::string& text) { return Parser(text).document(); }

}  // namespace onyx
