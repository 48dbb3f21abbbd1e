// Where Onyx's log messages go. Each message at or above the severity of the
// session that logs it is printed to stderr ("onyx [warning] ..."), unless the
// application installs a sink: the Python module does, for onnxruntime's
// set_default_logger_callback.
#pragma once
#include <functional>
#include <string>

namespace onyx {

enum class LogLevel { Verbose = 0, Info = 1, Warning = 2, Error = 3, Fatal = 4 };

struct LogRecord {
  LogLevel severity = LogLevel::Warning;
  std::string category;       // "onyx"
  std::string logid;          // the session's SessionOptions::logid ("" when unset)
  std::string code_location;  // "session.cc:111 initialize"
  std::string message;
};

// Receives every message that passes its session's threshold. It may be
// called from any thread, from several at once, and must not throw.
using LogSink = std::function<void(const LogRecord&)>;

// Installs `sink` for the messages logged from now on; an empty function
// restores the stderr printer. Safe to call while other threads log.
void set_log_sink(LogSink sink);

// The stderr printer (what a sink can fall back to).
void print_log_record(const LogRecord& record);

// Sends a record to the sink (or stderr), whatever its severity: the caller
// has applied its threshold. Onyx's own messages come this way.
void emit_log_record(const LogRecord& record);

}  // namespace onyx
