#include "cpu/fft.h"

#include <cmath>

namespace onyx {
namespace {

using cd = Fft::cd;

// The product written out: std::complex's operator* checks for NaN and
// infinity (a libgcc call per product), which made the transform 10x slower.
inline cd mul(cd a, cd b) {
  return cd(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}

}  // namespace

Fft::Fft(int64_t n, bool inverse, bool for_real) : n_(n), inverse_(inverse), tw_(static_cast<size_t>(n)) {
  for (int64_t k = 0; k < n; ++k) {
    const double a = -2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n);
    tw_[k] = cd(std::cos(a), std::sin(a));
  }
  if ((n & (n - 1)) == 0) {
    int bits = 0;
    while ((int64_t(1) << bits) < n) ++bits;
    bit_reverse_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = 0;
      for (int b = 0; b < bits; ++b)
        if (i & (int64_t(1) << b)) r |= int64_t(1) << (bits - 1 - b);
      bit_reverse_[r] = static_cast<int32_t>(i);
    }
  }
  if (for_real && n % 2 == 0) half_ = std::make_unique<Fft>(n / 2, false, false);
}

void Fft::forward(const cd* in, cd* out) const {
  if (bit_reverse_.empty()) return mixed_radix(in, 1, n_, out);
  for (int64_t i = 0; i < n_; ++i) out[i] = in[bit_reverse_[i]];
  for (int64_t len = 2; len <= n_; len <<= 1) {
    const int64_t half = len / 2, step = n_ / len;
    for (int64_t i = 0; i < n_; i += len)
      for (int64_t j = 0; j < half; ++j) {
        const cd u = out[i + j], v = mul(out[i + j + half], tw_[j * step]);
        out[i + j] = u + v;
        out[i + j + half] = u - v;
      }
  }
}

// out[0..n) = DFT of in[0], in[stride], ... (n values): split by the smallest
// prime factor p into p transforms of n / p (Cooley-Tukey), which land in
// out's p consecutive blocks; each output k + q (n / p) is then a p-point
// sum over those blocks' k-th values. A prime n is summed directly.
void Fft::mixed_radix(const cd* in, int64_t stride, int64_t n, cd* out) const {
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  int64_t p = 2;
  while (p * p <= n && n % p) ++p;
  if (n % p) p = n;
  const int64_t m = n / p;
  if (m == 1) {  // prime
    for (int64_t k = 0; k < n; ++k) {
      cd acc(0, 0);
      for (int64_t j = 0; j < n; ++j) acc += mul(in[j * stride], twiddle(n, j * k));
      out[k] = acc;
    }
    return;
  }
  for (int64_t r = 0; r < p; ++r) mixed_radix(in + r * stride, stride * p, m, out + r * m);
  std::vector<cd> t(static_cast<size_t>(p));
  for (int64_t k = 0; k < m; ++k) {
    for (int64_t r = 0; r < p; ++r) t[r] = mul(out[r * m + k], twiddle(n, r * k));
    for (int64_t q = 0; q < p; ++q) {
      cd acc(0, 0);
      for (int64_t r = 0; r < p; ++r) acc += mul(t[r], twiddle(p, r * q));
      out[k + q * m] = acc;
    }
  }
}

// The inverse as conj(DFT(conj(x))) / n, so one twiddle table serves both.
void Fft::complex(const cd* in, cd* out) const {
  if (!inverse_) return forward(in, out);
  std::vector<cd> conj_in(in, in + n_);
  for (auto& v : conj_in) v = std::conj(v);
  forward(conj_in.data(), out);
  const double scale = 1.0 / static_cast<double>(n_);
  for (int64_t k = 0; k < n_; ++k) out[k] = std::conj(out[k]) * scale;
}

// Even n: z[j] = x[2j] + i x[2j+1] transformed at n / 2 gives Z; the even and
// odd samples' transforms are E[k] = (Z[k] + conj Z[-k]) / 2 and
// O[k] = (Z[k] - conj Z[-k]) / 2i, and X[k] = E[k] + W_n^k O[k]. For real x
// the inverse is conj(DFT(x)) / n.
void Fft::real(const double* x, cd* out, cd* scratch) const {
  if (!half_) {
    for (int64_t j = 0; j < n_; ++j) scratch[j] = cd(x[j], 0.0);
    forward(scratch, scratch + n_);
    for (int64_t k = 0; k <= n_ / 2; ++k) out[k] = scratch[n_ + k];
  } else {
    const int64_t h = n_ / 2;
    cd* z = scratch;
    cd* zt = scratch + h;
    for (int64_t j = 0; j < h; ++j) z[j] = cd(x[2 * j], x[2 * j + 1]);
    half_->forward(z, zt);
    for (int64_t k = 0; k <= h; ++k) {
      const cd a = zt[k % h], b = std::conj(zt[(h - k) % h]);
      const cd even = 0.5 * (a + b), diff = 0.5 * (a - b);
      const cd odd(diff.imag(), -diff.real());  // diff / i
      out[k] = even + mul(tw_[k], odd);
    }
  }
  if (inverse_) {
    const double scale = 1.0 / static_cast<double>(n_);
    for (int64_t k = 0; k <= n_ / 2; ++k) out[k] = std::conj(out[k]) * scale;
  }
}

}  // namespace onyx
