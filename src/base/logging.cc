#include "base/logging.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <string_view>

namespace onyx {

namespace {

std::mutex g_sink_mutex;
// Held by shared_ptr so a thread that is calling the sink keeps it alive while
// another thread replaces it.
std::shared_ptr<const LogSink> g_sink;

std::shared_ptr<const LogSink> current_sink() {
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  return g_sink;
}

// "src/runtime/session.cc", "void onyx::Session::Impl::initialize()" -> "session.cc:111 initialize",
// the shape of onnxruntime's code locations.
std::string code_location(const std::source_location& where) {
  std::string_view file = where.file_name();
  if (size_t slash = file.find_last_of("/\\"); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  std::string_view function = where.function_name();
  if (size_t paren = function.find('('); paren != std::string_view::npos) function = function.substr(0, paren);
  if (size_t start = function.find_last_of(": "); start != std::string_view::npos) function.remove_prefix(start + 1);
  return std::string(file) + ":" + std::to_string(where.line()) + " " + std::string(function);
}

}  // namespace

void set_log_sink(LogSink sink) {
  auto next = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  std::shared_ptr<const LogSink> previous;
  {
    std::lock_guard<std::mutex> lock(g_sink_mutex);
    previous = std::move(g_sink);
    g_sink = std::move(next);
  }
  // `previous` is released here, outside the lock: its destructor may need
  // locks of its own (the Python module's takes the GIL).
}

void print_log_record(const LogRecord& record) {
  static const char* names[] = {"verbose", "info", "warning", "error", "fatal"};
  std::fprintf(stderr, "onyx [%s] %s\n", names[static_cast<int>(record.severity)], record.message.c_str());
}

void emit_log_record(const LogRecord& record) {
  if (auto sink = current_sink()) {
    (*sink)(record);
  } else {
    print_log_record(record);
  }
}

void log_message(LogLevel threshold, LogLevel level, const std::string& message, const std::string& logid,
                 std::source_location where) {
  if (static_cast<int>(level) < static_cast<int>(threshold)) return;
  emit_log_record({level, "onyx", logid, code_location(where), message});
}

}  // namespace onyx
