// Writing the IR back to ONNX protobuf messages.
#pragma once
#include <onnx/onnx_pb.h>

#include "ir/graph.h"

namespace onyx {

void attribute_to_proto(const std::string& name, const Attribute& a, onnx::AttributeProto* proto);
void node_to_proto(const Node& node, onnx::NodeProto* proto);
void graph_to_proto(const Graph& graph, onnx::GraphProto* proto);
void model_to_proto(const Model& model, onnx::ModelProto* proto);

// Writes the model to `path`. When its weights exceed `external_threshold`
// bytes, tensors of 1 KiB and more go to one file beside it, PATH.data.
void save_model(const Model& model, const std::string& path, size_t external_threshold = size_t(1) << 30);

}  // namespace onyx
