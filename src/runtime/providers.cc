#include "runtime/providers.h"

#include <algorithm>
#include <map>
#include <mutex>

#if ONYX_WITH_CUDA
#include "cuda/cuda_provider.h"
#endif

namespace onyx {

namespace {

std::mutex& factories_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, ProviderFactory>& factories() {
  static std::map<std::string, ProviderFactory> f;
  return f;
}

}  // namespace

void register_provider_factory(const std::string& name, ProviderFactory factory) {
  std::lock_guard<std::mutex> lock(factories_mutex());
  factories()[name] = std::move(factory);
}

std::string canonical_provider_name(const std::string& name) {
  if (name == "cuda" || name == "CUDA" || name == "CUDAExecutionProvider") return "CUDA";
  if (name == "cpu" || name == "CPU" || name == "CPUExecutionProvider") return "CPU";
  {
    std::lock_guard<std::mutex> lock(factories_mutex());
    if (factories().count(name)) return name;
  }
  fail(ErrorCode::InvalidArgument, "unknown execution provider '" + name +
                                       "' (known: CUDAExecutionProvider or cuda, CPUExecutionProvider or cpu)");
}

std::vector<std::string> available_providers() {
#if ONYX_WITH_CUDA
  return {"CUDAExecutionProvider", "CPUExecutionProvider"};
#else
  return {"CPUExecutionProvider"};
#endif
}

ResolvedProviders resolve_providers(const SessionOptions& options, const std::string& model_name) {
  ResolvedProviders out;
  std::map<std::string, ProviderOptions> opts;  // canonical name -> options
  for (auto& [name, kv] : options.provider_options) {
    std::string c = canonical_provider_name(name);
    for (auto& [k, v] : kv) opts[c][k] = v;
  }
  // Validate every provider's options, used or not, device or not.
  CudaProviderOptions cuda_options = parse_cuda_provider_options(opts["CUDA"]);
  for (auto& [k, v] : opts["CPU"])
    fail(ErrorCode::InvalidArgument,
         "provider 'CPUExecutionProvider': unknown option '" + k + "' (value '" + v + "'); it takes no options");

  std::vector<std::string> seen;
  for (auto& requested : options.providers) {
    std::string name = canonical_provider_name(requested);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    if (name == "CPU") break;  // the CPU takes everything: later providers would get nothing
    std::string why;
    std::shared_ptr<ExecutionProvider> p;
    if (name == "CUDA") {
#if ONYX_WITH_CUDA
      p = create_cuda_provider(cuda_options, &why);
      if (!p)
        out.warnings.push_back("model '" + model_name + "': CUDA provider requested but no CUDA device is available (" + why +
                               "); running on the CPU");
#else
      (void)cuda_options;
      out.warnings.push_back("model '" + model_name +
                             "': CUDA provider requested but this build has no CUDA provider; running on the CPU");
#endif
    } else {
      ProviderFactory f;
      {
        std::lock_guard<std::mutex> lock(factories_mutex());
        f = factories().at(name);
      }
      p = f(opts[name], &why);
      if (!p)
        out.warnings.push_back("model '" + model_name + "': " + name + " provider requested but its device is not available (" +
                               why + "); running on the CPU");
    }
    if (p) out.devices.push_back(std::move(p));
  }
  return out;
}

}  // namespace onyx
