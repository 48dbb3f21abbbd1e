// UTF-8 <-> code points, for string kernels and .npy unicode arrays.
#pragma once
#include <string>

namespace onyx {

// Invalid bytes decode to themselves (read as Latin-1) rather than failing:
// string ops must accept whatever bytes a model's strings hold.
std::u32string utf8_decode(const std::string& s);
std::string utf8_encode(const std::u32string& s);

}  // namespace onyx
