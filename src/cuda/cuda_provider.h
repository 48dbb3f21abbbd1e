// The CUDA execution provider (built only when CUDA, cuBLAS and cuDNN are
// found; see src/CMakeLists.txt). This header is plain C++: the runtime
// includes it without the CUDA headers.
#pragma once
#include <memory>
#include <string>

#include "kernels/execution_provider.h"

namespace onyx {

// The provider for options.device_id, or null with `why` set (the CUDA
// runtime's error string) when no CUDA device can be used. Throws for a
// device_id beyond the devices present.
std::shared_ptr<ExecutionProvider> create_cuda_provider(const CudaProviderOptions& options, std::string* why);

// Whether a CUDA device is present; `why` says why not.
bool cuda_device_available(std::string* why);

// The CUDA kernel registry (every family in src/cuda/kernels registers here).
const KernelRegistry& cuda_kernel_registry();

}  // namespace onyx
