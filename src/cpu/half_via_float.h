// Running a float-only kernel on float16 / bfloat16 tensors, as onnxruntime's CPU
// provider does for ops it computes in float only (it inserts Casts around them):
// half inputs widen to float, the float kernel runs, and its outputs narrow back to
// the inputs' half type, except the ones the op defines as float (statistics such
// as LayerNormalization's mean). Float inputs run the float kernel directly.
#pragma once
#include <set>

#include "kernels/kernel.h"

namespace onyx {

KernelFactory half_via_float(KernelFactory float_kernel, std::set<size_t> float_outputs = {});

}  // namespace onyx
