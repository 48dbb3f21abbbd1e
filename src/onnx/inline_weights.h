// Weights stored inside a model file, used in place from the file's mapping.
#pragma once
#include <cstddef>
#include <string>

namespace onyx {

// Protobuf copies every raw_data field while parsing: for BERT-base that was
// a 435 MB copy into freshly faulted pages, about half of the load time. This
// returns the serialized ModelProto `model` with each main-graph initializer
// whose raw_data holds at least `min_bytes` turned into an external-data
// reference to `location` (the model file itself) at that data's offset, so
// the parser skips it and the tensor maps the file instead. Returns "" when
// there is nothing to rewrite or the bytes are not well-formed protobuf (the
// ordinary parser then reports the problem).
std::string point_initializers_into_file(const char* model, size_t size, const std::string& location,
                                         size_t min_bytes = 4096);

}  // namespace onyx
