// The one error type of Onyx: a code that callers can branch on and a message
// that names the model, the node and the reason.
#pragma once
#include <stdexcept>
#include <string>

namespace onyx {

enum class ErrorCode {
  Fail,
  InvalidArgument,
  NoSuchFile,
  NoModel,
  InvalidGraph,
  InvalidProtobuf,
  NotImplemented,
  RuntimeException,
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] inline void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }
[[noreturn]] inline void fail(const std::string& message) { throw Error(ErrorCode::Fail, message); }

}  // namespace onyx

#define ONYX_CHECK(cond, msg)                                        \
  do {                                                               \
    if (!(cond)) ::onyx::fail(::onyx::ErrorCode::InvalidArgument, (msg)); \
  } while (0)
