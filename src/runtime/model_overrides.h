// What SessionOptions changes in a model before it is optimized: free
// dimensions fixed to a size, initializers replaced by the application's values.
#pragma once
#include "ir/graph.h"
#include "onyx/session.h"

namespace onyx {

// Fixes the symbolic dimensions named in the options (by dim_param or by
// denotation) in the graph's inputs, outputs and value infos.
void apply_free_dimension_overrides(Model& model, const SessionOptions& options);

// Replaces initializers by the options' values of the same name; warns about
// names the model does not have, fails on an element type other than the model's.
void apply_initializer_overrides(Model& model, const SessionOptions& options);

}  // namespace onyx
