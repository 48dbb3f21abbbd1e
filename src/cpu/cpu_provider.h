// The CPU provider's kernel registry (its kernel families: cpu/kernel_families.h).
#pragma once
#include "kernels/registry.h"

namespace onyx {

const KernelRegistry& cpu_kernel_registry();

}  // namespace onyx
