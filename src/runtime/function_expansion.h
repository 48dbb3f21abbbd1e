// Replacing nodes that have no kernel by the body of their function: a
// model-local function, or the function body the ONNX spec gives the op.
#pragma once
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace onyx {

// Returns the nodes that replace `node`, or nothing when no function defines
// it. `value_types` gives known input types (context-dependent bodies need them).
std::optional<std::vector<Node>> expand_function(const Node& node, const Model& model,
                                                 const std::unordered_map<std::string, TypeInfo>& value_types,
                                                 int unique_id);

}  // namespace onyx
