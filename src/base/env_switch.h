// Developer switches read from the environment, for A/B runs of a kernel
// choice without rebuilding.
#pragma once
#include <cstdlib>

namespace onyx {

// The number NAME is set to (0 off, 1 on), or -1 when it is unset or empty:
// the default policy decides. Callers read it once (a function-local static).
inline int env_switch(const char* name) {
  const char* e = std::getenv(name);
  return e && *e ? std::atoi(e) : -1;
}

}  // namespace onyx
