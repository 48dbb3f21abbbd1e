#include "runtime/model_overrides.h"

#include "base/logging.h"

namespace onyx {

namespace {

// The override for a dimension, or -1.
int64_t override_for(const Dim& dim, const SessionOptions& options) {
  if (!dim.symbol.empty()) {
    auto it = options.free_dimension_overrides_by_name.find(dim.symbol);
    if (it != options.free_dimension_overrides_by_name.end()) return it->second;
  }
  if (!dim.denotation.empty()) {
    auto it = options.free_dimension_overrides_by_denotation.find(dim.denotation);
    if (it != options.free_dimension_overrides_by_denotation.end()) return it->second;
  }
  return -1;
}

void fix_dims(std::vector<ValueInfo>& values, const SessionOptions& options) {
  for (ValueInfo& v : values) {
    for (Dim& dim : v.type.shape) {
      if (dim.value >= 0) continue;
      int64_t size = override_for(dim, options);
      if (size < 0) continue;
      dim.value = size;
      dim.symbol.clear();
    }
  }
}

void check_sizes(const std::map<std::string, int64_t>& overrides, const std::string& kind, const Model& model) {
  for (const auto& [key, size] : overrides)
    if (size < 0)
      fail(ErrorCode::InvalidArgument, "model '" + model.path + "': free dimension override " + kind + " '" + key +
                                           "' has negative size " + std::to_string(size));
}

}  // namespace

void apply_free_dimension_overrides(Model& model, const SessionOptions& options) {
  check_sizes(options.free_dimension_overrides_by_name, "by name", model);
  check_sizes(options.free_dimension_overrides_by_denotation, "by denotation", model);
  if (options.free_dimension_overrides_by_name.empty() && options.free_dimension_overrides_by_denotation.empty()) return;
  fix_dims(model.graph.inputs, options);
  fix_dims(model.graph.outputs, options);
  fix_dims(model.graph.value_infos, options);
}

void apply_initializer_overrides(Model& model, const SessionOptions& options) {
  for (const auto& [name, value] : options.initializer_overrides) {
    auto it = model.graph.initializers.find(name);
    if (it == model.graph.initializers.end()) {
      // onnxruntime ignores such names too; the warning says the value is unused.
      log_message(options, LogLevel::Warning,
                  "model '" + model.path + "': initializer override '" + name +
                      "' names no initializer of the model; it is not used");
      continue;
    }
    if (value.dtype() != it->second.dtype())
      fail(ErrorCode::InvalidArgument, "model '" + model.path + "': initializer override '" + name + "' is " +
                                           dtype_name(value.dtype()) + ", the model's initializer is " +
                                           dtype_name(it->second.dtype()));
    it->second = value;
  }
}

}  // namespace onyx
