// Static shape and type inference through ONNX's own inference library, so
// the optimizer knows the element types and shapes of intermediate values.
#pragma once
#include "ir/graph.h"

namespace onyx {

// Replaces model.graph.value_infos by what ONNX's inference derives (with
// data propagation through Shape-computing subgraphs). Best effort: on any
// inference failure the graph keeps the value_infos it had. Returns whether
// inference ran.
bool infer_shapes(Model& model);

}  // namespace onyx
