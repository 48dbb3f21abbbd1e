// Reading numpy .npy files (little-endian, C order) into tensors.
#pragma once
#include <string>

#include "onyx/tensor.h"

namespace onyx {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace onyx
