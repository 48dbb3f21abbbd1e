// Running one node outside a graph: constant folding at load, and kernel tests.
#pragma once
#include <vector>

#include "kernels/registry.h"

namespace onyx {

// Creates the node's kernel from `registry` (every input is offered to it as a
// constant) and runs it once. Throws when there is no kernel or it fails.
std::vector<Value> evaluate_node(const Node& node, int64_t opset, const std::vector<Value>& inputs,
                                 const KernelRegistry& registry);

}  // namespace onyx
