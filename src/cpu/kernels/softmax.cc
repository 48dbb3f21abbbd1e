#include "cpu/cpu_provider.h"

namespace onyx {

void register_softmax(KernelRegistry& r) {}

}  // namespace onyx
