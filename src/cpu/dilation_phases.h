// A stride-1 convolution with dilation (dh, dw) and "same" padding reads, for
// output row h, only input rows h + dh * k: the rows of one residue mod dh.
// Over an image whose sides divide by the dilation it is therefore dh * dw
// independent undilated convolutions, one per phase (rh, rw): the pixels
// (i * dh + rh, j * dw + rw). These functions move a blocked tensor between
// the image and its phases, batched as [N * dh * dw, Cb, H / dh, W / dw, B]
// (phase (n, rh, rw) at index (n * dh + rh) * dw + rw), so the undilated
// convolution (Winograd, which has no dilated form) runs on them as a batch.
#pragma once
#include <cstdint>

#include "base/thread_pool.h"
#include "onyx/tensor.h"

namespace onyx {

// The phases' shape for a blocked image of shape `blocked` ([N, Cb, H, W, B]).
Shape dilation_phases_shape(const Shape& blocked, int64_t dh, int64_t dw);

// image [N, Cb, H, W, B] -> phases; H % dh == 0 and W % dw == 0.
void image_to_dilation_phases(const float* image, const Shape& blocked, int64_t dh, int64_t dw, float* phases,
                              ThreadPool* pool);

// phases -> image [N, Cb, H, W, B] (the inverse).
void dilation_phases_to_image(const float* phases, const Shape& blocked, int64_t dh, int64_t dw, float* image,
                              ThreadPool* pool);

}  // namespace onyx
