// Static shape and type inference through ONNX's own inference library, so
// the optimizer knows the element types and shapes of intermediate values.
#pragma once
#include <functional>
#include <future>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace onyx {

// Replaces model.graph.value_infos by what ONNX's inference derives (with
// data propagation through Shape-computing subgraphs). Best effort: on any
// inference failure the graph keeps the value_infos it had. Returns whether
// inference ran.
bool infer_shapes(Model& model);

// Runs one node on constant inputs (the optimizer's constant folding
// evaluator); nothing when it cannot.
using NodeEvaluator = std::function<std::optional<std::vector<Tensor>>(const Node&, const std::vector<Tensor>&)>;

// infer_shapes, and where the graph computes shapes at run time from static
// ones (Shape -> Gather -> Mod -> Concat -> Pad, as exporters write window
// padding), the small values those computations make are worked out with
// `evaluate` as inference goes, so the Reshape or Pad they drive gets a
// static shape too (libonnx propagates such values through a few ops only).
bool infer_shapes(Model& model, const NodeEvaluator& evaluate);

// libonnx builds its operator schemas (~5 ms) on first use, once per
// process. This builds them now; later calls return at once.
void build_schemas();

// Starts build_schemas() on another thread, so a session can parse its model
// meanwhile; the future waits for it when destroyed. Empty when the schemas
// are already built.
std::future<void> prepare_schemas();

}  // namespace onyx
