// Vectorized float math used by the GEMM epilogues and the transformer
// kernels (softmax, GELU, layer normalization). Each function picks an
// AVX-512 or a portable scalar implementation once per CPU.
//
// Accuracy: exp within ~2 ulp over its range (inputs below -87.3 give 0,
// above 88.7 give +inf); erf within 2e-7 absolute.
#pragma once
#include <cstdint>

namespace onyx::vm {

// y[i] = exp(x[i]); in place allowed.
void exp(const float* x, float* y, int64_t n);
// y[i] = 1 / (1 + exp(-x[i])); in place allowed.
void sigmoid(const float* x, float* y, int64_t n);
// y[i] = x[i] * sigmoid(alpha * x[i]) (Swish; SiLU for alpha 1); in place allowed.
void swish(const float* x, float* y, int64_t n, float alpha = 1.0f);
// y[i] = scale * (x[i] > 0 ? x[i] : alpha * (exp(x[i]) - 1)) (Elu; Selu with its
// gamma as scale), exp - 1 without cancellation near 0; in place allowed.
void elu(const float* x, float* y, int64_t n, float alpha, float scale = 1.0f);
// y[i] = log(x[i]) (within ~2 ulp; log(0) = -inf, negative -> NaN); in place allowed.
void log(const float* x, float* y, int64_t n);
// y[i] = log(1 + exp(x[i])) (Softplus, no overflow for large x); in place allowed.
void softplus(const float* x, float* y, int64_t n);
// y[i] = x[i] * tanh(softplus(x[i])) (Mish); in place allowed.
void mish(const float* x, float* y, int64_t n);
// y[i] = max(0, min(1, alpha x[i] + beta)) (HardSigmoid), times x[i] when
// `times_x` (HardSwish: alpha 1/6, beta 1/2); in place allowed.
void hard_sigmoid(const float* x, float* y, int64_t n, float alpha, float beta, bool times_x);
// y[i] = floor / ceil / round-half-to-even of x[i]; in place allowed.
void floor(const float* x, float* y, int64_t n);
void ceil(const float* x, float* y, int64_t n);
void round_even(const float* x, float* y, int64_t n);
// y[i] = erf(x[i]) (absolute error below 3e-7); in place allowed.
void erf(const float* x, float* y, int64_t n);
// y[i] = tanh(x[i]) (within 6 ulp); in place allowed.
void tanh(const float* x, float* y, int64_t n);
// y[i] = sin / cos / atan of x[i] (within ~2e-7 relative; sin and cos near
// multiples of pi too); in place allowed.
void sin(const float* x, float* y, int64_t n);
void cos(const float* x, float* y, int64_t n);
void atan(const float* x, float* y, int64_t n);
// y[i] = x[i] > 0 ? x[i] : alpha (exp(x[i] / alpha) - 1) (Celu); in place allowed.
void celu(const float* x, float* y, int64_t n, float alpha);
// y[i] = 0.5 x (1 + erf(x / sqrt 2)); in place allowed.
void gelu_erf(const float* x, float* y, int64_t n);
// y[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); in place allowed.
void gelu_tanh(const float* x, float* y, int64_t n);
// y = softmax(x) over n values (max-subtracted); in place allowed.
void softmax(const float* x, float* y, int64_t n);
// Softmax (log-softmax when `log`) of row-major [n, inner] along n, for each
// of the `inner` columns; in place allowed.
void softmax_columns(const float* x, float* y, int64_t n, int64_t inner, bool log);
// y = (x - mean) / sqrt(var + eps) * gamma + beta over n values (beta may be
// null); in place allowed. With `skip` (may be null), x + skip is normalized.
void layer_norm(const float* x, const float* skip, float* y, int64_t n, const float* gamma, const float* beta,
                float eps);

}  // namespace onyx::vm
