// Depthwise 8-bit convolution (one input and one output channel per group)
// on channel-last input: int32 sums of (x - x_zp) * (w - w_zp), equal to the
// plain loop, one output row of pixels at a time.
#pragma once
#include <memory>
#include <vector>

#include "cpu/geometry_2d.h"
#include "cpu/int8_conv.h"

namespace onyx {

// What the kernels need from the weights and their zero points (w.depthwise
// holds one made at load time when the zero points are constants).
std::shared_ptr<const Int8DepthwisePlan> plan_int8_depthwise(const Int8ConvWeights& w,
                                                             const std::vector<int32_t>& wzp);

void int8_depthwise_channels_last(const Int8ConvInput& x, const Geo2& g, const Int8ConvWeights& w,
                                  const std::vector<int32_t>& wzp, const Int8ConvSink& sink, ThreadPool* pool,
                                  Int8Isa isa);

}  // namespace onyx
