// int32 sums to 8-bit outputs: the same int32 and float operations as
// requantize in quant_round.h, 16 at a time where the CPU has AVX-512.
#pragma once
#include <cstdint>

namespace onyx {

// Per output column c: saturate(round((acc + bias[c]) * mult[c]) + zero) as
// uint8, or int8 when is_signed; bias may be null.
struct Int8Requant {
  const int32_t* bias = nullptr;
  const float* mult = nullptr;
  float zero = 0;
  bool is_signed = false;
};

// out[i] = requantize(acc[i] + bias[j], mult[j]) with j = per_element ? i : 0
// (bias may be null) into uint8, or int8 when is_signed.
void requantize_8bit(const int32_t* acc, int64_t n, const int32_t* bias, const float* mult, bool per_element,
                     float zero, bool is_signed, uint8_t* out);

// requantize_8bit of each row r < rows: out[r * ldo + c] from acc[r * lda + c]
// with bias[c] (may be null) and mult[c].
void requantize_rows_8bit(const int32_t* acc, int64_t rows, int64_t cols, int64_t lda, const int32_t* bias,
                          const float* mult, float zero, bool is_signed, uint8_t* out, int64_t ldo);

}  // namespace onyx
