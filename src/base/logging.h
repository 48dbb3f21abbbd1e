// Leveled logging. The threshold lives in the session that logs (passed in),
// not in a global; where messages go is global (onyx/logging.h: stderr or the
// application's sink).
#pragma once
#include <source_location>
#include <string>

#include "onyx/logging.h"
#include "onyx/session.h"

namespace onyx {

void log_message(LogLevel threshold, LogLevel level, const std::string& message, const std::string& logid = "",
                 std::source_location where = std::source_location::current());

// The session's threshold and logid.
inline void log_message(const SessionOptions& options, LogLevel level, const std::string& message,
                        std::source_location where = std::source_location::current()) {
  log_message(options.log_severity_level, level, message, options.logid, where);
}

}  // namespace onyx
