#include "cpu/cpu_provider.h"

namespace onyx {

void register_einsum(KernelRegistry& r) {}

}  // namespace onyx
