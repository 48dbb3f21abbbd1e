// Loading ONNX models (ModelProto) into the IR.
#pragma once
#include <string>

#include "ir/graph.h"
#include "onnx/external_data.h"

namespace onyx {

constexpr int64_t kMinIrVersion = 3;
// IR 11-14 add element types only (float4e2m1; float8e8m0; int2/uint2;
// float6e2m3/float6e3m2), all of which Onyx reads and writes.
constexpr int64_t kMaxIrVersion = 14;
// Every op changed in opsets 24-28 (onnx 1.23) was checked against its
// kernel's registered range (src/cpu/kernels/*.cc).
constexpr int64_t kMaxAiOnnxOpset = 28;
constexpr int64_t kMaxAiOnnxMlOpset = 5;

// External data is read from `in_memory` first, then from the model's folder (`base_dir`
// for a model in memory); `name` identifies the model in messages.
Model load_model(const std::string& path, const InMemoryFiles& in_memory = {});
Model load_model_from_bytes(const void* data, size_t size, const std::string& name, const std::string& base_dir = "",
                            const InMemoryFiles& in_memory = {});

}  // namespace onyx

namespace onnx {
class NodeProto;
class FunctionProto;
}  // namespace onnx

namespace onyx {

// Converts one NodeProto / FunctionProto (e.g. an ONNX function body) to the IR.
Node node_from_proto(const onnx::NodeProto& proto, const std::string& model_name);
Function function_from_proto(const onnx::FunctionProto& proto, const std::string& model_name);

}  // namespace onyx
