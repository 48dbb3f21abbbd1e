// Discrete Fourier transforms in double precision for the signal ops (DFT,
// STFT): a radix-2 FFT for powers of two, a mixed-radix one over the prime
// factors otherwise, and real input through a complex transform of half the
// length.
#pragma once
#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

namespace onyx {

class Fft {
 public:
  using cd = std::complex<double>;

  // A transform of length n >= 1 (the inverse scaled by 1 / n). `for_real`:
  // also what `real` needs (for even n, the forward transform of n / 2).
  Fft(int64_t n, bool inverse, bool for_real = true);

  int64_t size() const { return n_; }
  // Scratch values `real` needs.
  int64_t real_scratch_size() const { return half_ ? n_ : 2 * n_; }

  // out[0..n) = the transform of in[0..n); out must not alias in.
  void complex(const cd* in, cd* out) const;
  // out[0..n/2] = bins 0..n/2 of the transform of the real x[0..n) (the rest
  // are their conjugates); `scratch` holds real_scratch_size() values. Needs
  // for_real.
  void real(const double* x, cd* out, cd* scratch) const;

 private:
  void forward(const cd* in, cd* out) const;
  void mixed_radix(const cd* in, int64_t stride, int64_t n, cd* out) const;
  cd twiddle(int64_t n, int64_t e) const { return tw_[(e % n) * (n_ / n)]; }

  int64_t n_;
  bool inverse_;
  std::vector<cd> tw_;                // W_n^k = exp(-2 pi i k / n), the forward transform's
  std::vector<int32_t> bit_reverse_;  // powers of two: the input order of the butterflies
  std::unique_ptr<Fft> half_;         // even n, for_real: the forward transform of n / 2 that `real` runs
};

}  // namespace onyx
