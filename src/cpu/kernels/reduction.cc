#include "cpu/cpu_provider.h"

namespace onyx {

void register_reduction(KernelRegistry& r) {}

}  // namespace onyx
