// Resolving SessionOptions::providers / provider_options into provider
// objects: names in any spelling ("cuda", "CUDA", "CUDAExecutionProvider"),
// options validated, and a device provider without a device (or missing from
// the build) replaced by a warning and the CPU.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/execution_provider.h"
#include "onyx/session.h"

namespace onyx {

// "CUDA", "CPU" or the name of a registered provider; throws for others.
std::string canonical_provider_name(const std::string& name);

struct ResolvedProviders {
  std::vector<std::shared_ptr<ExecutionProvider>> devices;  // usable device providers, in priority order
  std::vector<std::string> warnings;                        // logged by the session
};

ResolvedProviders resolve_providers(const SessionOptions& options, const std::string& model_name);

// Extra providers by name (tests register a fake device provider). The
// factory returns null and sets `why` when the device is not usable.
using ProviderFactory = std::function<std::shared_ptr<ExecutionProvider>(const ProviderOptions&, std::string* why)>;
void register_provider_factory(const std::string& name, ProviderFactory factory);

}  // namespace onyx
