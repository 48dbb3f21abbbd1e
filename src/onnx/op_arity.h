// The inputs, outputs and attributes the ONNX schemas require of each node,
// checked before the optimizer runs: its passes read the inputs a well-formed
// node has (a Conv's weights, a Gemm's B), and ONNX shape inference reads
// required attributes unchecked (a Scan without num_scan_inputs crashes it),
// so a malformed node must be refused first, with an error that names it.
#pragma once
#include "ir/graph.h"

namespace onyx {

// Throws Error(InvalidGraph) naming the model, the node and the required input,
// output or attribute it lacks. Nodes of the ai.onnx, ai.onnx.ml and training domains are
// checked (in subgraphs too) at the model's opset; other ops, and opsets newer
// than the table, are left to their kernels.
void check_node_arity(const Model& model);

// Throws Error(InvalidGraph) for a node (any domain, subgraphs too) whose
// strides, dilations or kernel_shape hold a value below 1: ONNX's shape
// inference divides by them (a zero stride was a SIGFPE inside libonnx).
void check_window_attributes(const Model& model);

}  // namespace onyx
