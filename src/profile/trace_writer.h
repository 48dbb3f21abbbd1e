// Chrome trace event JSON (the format chrome://tracing, Perfetto and
// onnxruntime's profiler use): a JSON array of events. Complete events
// ("ph":"X") carry ts and dur in microseconds; args is a JSON object.
#pragma once
#include <cstdint>
#include <string>

namespace onyx {

// Appends `s` to `out` as a JSON string literal (quotes included).
void json_quote(std::string& out, const std::string& s);

class TraceWriter {
 public:
  // Adds a complete event; `args_json` is a JSON object ("{}" when empty).
  void complete(const std::string& cat, const std::string& name, double ts_us, double dur_us, int64_t pid, int64_t tid,
                const std::string& args_json);
  // Adds a metadata event (process_name, thread_name).
  void metadata(const std::string& name, int64_t pid, int64_t tid, const std::string& value);
  // The whole document.
  std::string finish() const { return out_ + (out_.empty() ? "[\n]\n" : "\n]\n"); }

 private:
  void begin_event();
  std::string out_;
};

}  // namespace onyx
