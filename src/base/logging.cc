#include "base/logging.h"

#include <cstdio>

namespace onyx {

void log_message(LogLevel threshold, LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < static_cast<int>(threshold)) return;
  static const char* names[] = {"verbose", "info", "warning", "error", "fatal"};
  std::fprintf(stderr, "onyx [%s] %s\n", names[static_cast<int>(level)], message.c_str());
}

}  // namespace onyx
