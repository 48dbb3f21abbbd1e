#include "base/aligned_memory.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "onyx/status.h"

namespace onyx {

void* allocate_aligned(size_t bytes) {
  size_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) fail(ErrorCode::RuntimeException, "out of memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

AlignedFloats allocate_zeroed_floats(size_t n) {
  const size_t bytes = ((n ? n : 1) * sizeof(float) + 63) / 64 * 64;  // the padding of the last line too
  AlignedFloats p(static_cast<float*>(allocate_aligned(bytes)));
  std::memset(p.get(), 0, bytes);
  return p;
}

}  // namespace onyx
