// Conversions between ONNX protobuf messages and Onyx values and types.
#pragma once
#include <onnx/onnx_pb.h>
#include <onnx/onnx-data.pb.h>

#include "ir/graph.h"
#include "onnx/external_data.h"
#include "onyx/value.h"

namespace onyx {

// FunctionProto.attribute_proto (attributes with defaults, IR 9) is newer than the
// ONNX headers Onyx builds with: it is read and written as this unknown field.
constexpr int kFunctionAttributeProtoField = 11;

// Decodes a TensorProto in any encoding (raw_data, typed fields, external
// data). `external` may be null when external data is not allowed.
Tensor tensor_from_proto(const onnx::TensorProto& proto, ExternalDataFiles* external);
// Like tensor_from_proto, but takes over the proto's raw_data buffer instead of
// copying it (the proto is left without data).
Tensor take_tensor_from_proto(onnx::TensorProto& proto, ExternalDataFiles* external);
Tensor sparse_tensor_from_proto(const onnx::SparseTensorProto& proto, ExternalDataFiles* external);
void tensor_to_proto(const Tensor& t, onnx::TensorProto* proto);

TypeInfo type_from_proto(const onnx::TypeProto& proto);
void type_to_proto(const TypeInfo& type, onnx::TypeProto* proto);

Value value_from_sequence_proto(const onnx::SequenceProto& proto);
Value value_from_optional_proto(const onnx::OptionalProto& proto);
void sequence_to_proto(const Sequence& seq, onnx::SequenceProto* proto);
Map map_from_proto(const onnx::MapProto& proto);  // keys int64 or string
void map_to_proto(const Map& map, onnx::MapProto* proto);
void optional_to_proto(const Optional& opt, onnx::OptionalProto* proto);

// Reads a .pb test-data file as the given declared type (tensor, sequence or optional).
Value read_value_pb(const std::string& path, const TypeInfo& type);
// Writes a value as TensorProto / SequenceProto / OptionalProto / MapProto to `path`.
void write_value_pb(const std::string& path, const Value& value, const std::string& name);

}  // namespace onyx
