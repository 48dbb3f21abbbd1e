// Sums and extrema of contiguous float runs, vectorized (AVX-512 / AVX2 /
// baseline clones picked at load time). The scalar loops of the reduction
// and global pooling kernels ran 3-7x slower than onnxruntime.
#pragma once
#include <cstdint>

namespace onyx::rr {

// Sum of x[0..n), accumulated in double lanes (the reductions' precision).
double sum(const float* x, int64_t n);
// Sum of (x[i] - mean)^2, in double lanes (variances).
double sum_squared_deviation(const float* x, int64_t n, double mean);
// Largest / smallest of x[0..n) (n >= 1); NaN if any element is NaN.
float max(const float* x, int64_t n);
float min(const float* x, int64_t n);
// Index of the largest (kMax) or smallest of x[0..n) (n >= 1), the first
// one, or the last when `last`; -1 when x holds a NaN (the caller decides
// what a NaN means) or n reaches 2^31.
int64_t arg_extreme(const float* x, int64_t n, bool is_max, bool last);
// Lane-wise across rows: acc[i] += x[i] or x[i]^2 (double lanes), and
// m[i] = max / min(m[i], x[i]) (NaN once either is NaN), for i in [0, n).
void add_into(const float* x, double* acc, int64_t n);
void add_squares_into(const float* x, double* acc, int64_t n);
void max_into(const float* x, float* m, int64_t n);
void min_into(const float* x, float* m, int64_t n);
// y = x / sqrt(mean(x^2) + eps) * scale over one row of n (RMS normalization);
// returns the inverse RMS. The mean square is taken in double lanes.
float rms_normalize(const float* x, float* y, int64_t n, const float* scale, float eps);

}  // namespace onyx::rr
