#include "profile/trace_writer.h"

#include <cstdio>

namespace onyx {

void json_quote(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void TraceWriter::begin_event() { out_ += out_.empty() ? "[\n" : ",\n"; }

void TraceWriter::complete(const std::string& cat, const std::string& name, double ts_us, double dur_us, int64_t pid,
                           int64_t tid, const std::string& args_json) {
  begin_event();
  out_ += "{\"cat\":";
  json_quote(out_, cat);
  out_ += ",\"name\":";
  json_quote(out_, name);
  char buf[160];
  std::snprintf(buf, sizeof buf, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%lld,\"tid\":%lld,\"args\":", ts_us,
                dur_us, static_cast<long long>(pid), static_cast<long long>(tid));
  out_ += buf;
  out_ += args_json.empty() ? "{}" : args_json;
  out_ += '}';
}

void TraceWriter::metadata(const std::string& name, int64_t pid, int64_t tid, const std::string& value) {
  begin_event();
  out_ += "{\"name\":";
  json_quote(out_, name);
  char buf[96];
  std::snprintf(buf, sizeof buf, ",\"ph\":\"M\",\"pid\":%lld,\"tid\":%lld,\"args\":{\"name\":", static_cast<long long>(pid),
                static_cast<long long>(tid));
  out_ += buf;
  json_quote(out_, value);
  out_ += "}}";
}

}  // namespace onyx
