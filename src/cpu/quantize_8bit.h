// Vectorized float <-> 8-bit linear quantization loops, bit-identical to the
// scalar definitions (std::nearbyint in the current rounding mode, ties to
// even by default; NaN -> 0; saturation to the 8-bit range).
#pragma once
#include <cstdint>

namespace onyx {

// y[i] = clamp(nearbyint(nearbyint(x[i] / scale) + zp)), int8 when is_signed.
void quantize_8bit(const float* x, int64_t n, float scale, float zp, bool is_signed, uint8_t* y);

// y[i] = (float(q[i]) - zp) * scale, q int8 when is_signed.
void dequantize_8bit(const uint8_t* q, int64_t n, bool is_signed, float zp, float scale, float* y);

// lo = min(0, x...), hi = max(0, x...), NaN ignored, as std::min/std::max folds from 0.
void min_max_with_zero(const float* x, int64_t n, float& lo, float& hi);

// y = x quantized to uint8 per tensor as ONNX Runtime's dynamic quantization
// (DynamicQuantizeMatMul, DynamicQuantizeLSTM) does: [min(0, x), max(0, x)]
// over 255 steps, scale 1 when x is all zero. Returns the scale; the zero
// point goes into zero_point.
float quantize_u8_dynamic(const float* x, int64_t n, uint8_t* y, uint8_t& zero_point);

// QLinearAdd's element step in ONNX Runtime's order of float operations:
// y[i] = saturate(nearbyint(fma(a[i], ra, fma(b[i], rb, fixed)))), with a, b
// int8 when is_signed and fma rounding once (as its AVX2 kernels do).
void qlinear_add_8bit(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, float ra, float rb, float fixed,
                      uint8_t* y);

// QLinearMul's element step in ONNX Runtime's order: y[i] = saturate(nearbyint(
// float((a[i] - za) * (b[i] - zb)) * ratio + zc)), the product exact, then a multiply and an
// add each rounded (no FMA), with a, b int8 when is_signed.
void qlinear_mul_8bit(const uint8_t* a, const uint8_t* b, int64_t n, bool is_signed, float za, float zb, float ratio,
                      float zc, uint8_t* y);

// y[i] = table[x[i]]: any function of one 8-bit value, precomputed for its 256 codes
// (indexed by the byte's bits, so int8 -1 reads table[255]).
void lookup_8bit(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y);

// Channel-last rows of `channels` values, each channel c with its own table:
// y[r, c] = tables[c * 256 + x[r, c]].
void lookup_8bit_channels(const uint8_t* tables, int64_t channels, const uint8_t* x, int64_t rows, uint8_t* y);

}  // namespace onyx
