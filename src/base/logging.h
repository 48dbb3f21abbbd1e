// Minimal leveled logging to stderr. The threshold lives in the session that
// logs (passed in), not in a global.
#pragma once
#include <string>

#include "onyx/session.h"

namespace onyx {

void log_message(LogLevel threshold, LogLevel level, const std::string& message);

}  // namespace onyx
