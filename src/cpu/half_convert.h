// Bulk float <-> float16 conversion (IEEE round to nearest even), with the
// F16C instructions where the CPU has them: the scalar bit-twiddling
// conversion ran Cast to float16 ~50x slower than onnxruntime.
#pragma once
#include <cstdint>

namespace onyx {

void floats_to_halves(const float* x, uint16_t* y, int64_t n);
void halves_to_floats(const uint16_t* x, float* y, int64_t n);

}  // namespace onyx
