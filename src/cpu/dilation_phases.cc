#include "cpu/dilation_phases.h"

#include <algorithm>

namespace onyx {

namespace {

// Calls move(image_pixel, phase_pixel) for the pixel pairs of every image row,
// in parallel over rows. Pixels are B floats.
template <class Move>
void for_each_row(const Shape& s, int64_t dh, int64_t dw, ThreadPool* pool, Move move) {
  const int64_t N = s[0], Cb = s[1], H = s[2], W = s[3], B = s[4];
  const int64_t h = H / dh, w = W / dw;
  const int64_t rows = N * Cb * H;
  parallel_for(rows * W * B > (1 << 15) ? pool : nullptr, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / (Cb * H), cb = r / H % Cb, y = r % H;
      const int64_t row_in_image = r * W * B;
      for (int64_t rw = 0; rw < dw; ++rw) {
        const int64_t phase = (n * dh + y % dh) * dw + rw;
        const int64_t row_in_phase = ((phase * Cb + cb) * h + y / dh) * w * B;
        for (int64_t j = 0; j < w; ++j) move(row_in_image + (j * dw + rw) * B, row_in_phase + j * B, B);
      }
    }
  });
}

}  // namespace

Shape dilation_phases_shape(const Shape& blocked, int64_t dh, int64_t dw) {
  return {blocked[0] * dh * dw, blocked[1], blocked[2] / dh, blocked[3] / dw, blocked[4]};
}

void image_to_dilation_phases(const float* image, const Shape& blocked, int64_t dh, int64_t dw, float* phases,
                              ThreadPool* pool) {
  for_each_row(blocked, dh, dw, pool,
               [&](int64_t at_image, int64_t at_phase, int64_t B) { std::copy_n(image + at_image, B, phases + at_phase); });
}

void dilation_phases_to_image(const float* phases, const Shape& blocked, int64_t dh, int64_t dw, float* image,
                              ThreadPool* pool) {
  for_each_row(blocked, dh, dw, pool,
               [&](int64_t at_image, int64_t at_phase, int64_t B) { std::copy_n(phases + at_phase, B, image + at_image); });
}

}  // namespace onyx
