// Signal processing: DFT, STFT, the Hann / Hamming / Blackman windows and
// MelWeightMatrix (opset 17; DFT's axis became an input at 20).
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/fft.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

using cd = std::complex<double>;

int64_t scalar_int(const Tensor& t, const char* what) {
  if (t.numel() != 1) kernel_fail(std::string(what) + " must be a scalar, got shape " + shape_to_string(t.shape()));
  return t.int_at(0);
}

// ---------------------------------------------------------------- DFT

KernelFactory dft_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    bool inverse = ic.get_int("inverse", 0) != 0;
    bool onesided = ic.get_int("onesided", 0) != 0;
    int64_t opset = ic.opset();
    int64_t axis_attr = ic.get_int("axis", 1);
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      const int r = X.rank();
      if (r < 2 || (X.dim(r - 1) != 1 && X.dim(r - 1) != 2))
        kernel_fail("DFT input must be [..., 1] (real) or [..., 2] (complex), got " + shape_to_string(X.shape()));
      int64_t axis = axis_attr;
      if (opset >= 20) axis = ctx.has_input(2) ? scalar_int(ctx.input(2), "axis") : -2;
      // the axis counts over the signal dims (the last dim holds real/imag)
      if (axis < 0) axis += r;
      if (axis < 0 || axis >= r - 1)
        kernel_fail("DFT axis " + std::to_string(axis) + " is out of range for input " + shape_to_string(X.shape()));
      const int64_t in_len = X.dim(static_cast<int>(axis));
      const bool complex_in = X.dim(r - 1) == 2;
      // onesided + inverse is the IRFFT: a one-sided complex spectrum in, the
      // full real signal out (the missing bins are the conjugates of the given
      // ones); its default length is 2 * (bins - 1).
      const bool irfft = onesided && inverse;
      if (irfft && !complex_in) kernel_fail("DFT: an inverse one-sided DFT (IRFFT) needs complex input [..., 2]");
      int64_t n = irfft ? 2 * (in_len - 1) : in_len;
      if (ctx.has_input(1)) {
        n = scalar_int(ctx.input(1), "dft_length");
        if (n <= 0) kernel_fail("dft_length must be positive, got " + std::to_string(n));
      }
      if (n <= 0) kernel_fail("DFT: the signal length must be positive");
      int64_t out_len = irfft ? n : onesided ? n / 2 + 1 : n;
      Shape yshape = X.shape();
      yshape[axis] = out_len;
      yshape[r - 1] = irfft ? 1 : 2;
      Tensor& Y = ctx.allocate_output(0, X.dtype(), yshape);
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < axis; ++i) outer *= X.dim(i);
      for (int i = static_cast<int>(axis) + 1; i < r - 1; ++i) inner *= X.dim(i);
      const int64_t comp = X.dim(r - 1);
      const Fft fft(n, inverse);
      const bool real_in = !complex_in && !irfft;
      // Signals are independent: spread them over the threads, each with its own buffers.
      const int64_t signals = outer * inner;
      ThreadPool* pool = signals > 1 && n * signals >= 4096 ? ctx.thread_pool() : nullptr;
      dispatch_float(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        parallel_for(pool, signals, [&](int64_t s0, int64_t s1) {
          std::vector<cd> in(static_cast<size_t>(n)), out(static_cast<size_t>(n)),
              scratch(static_cast<size_t>(fft.real_scratch_size()));
          std::vector<double> re(real_in ? static_cast<size_t>(n) : 0);
          for (int64_t s = s0; s < s1; ++s) {
            const int64_t o = s / inner, i = s % inner;
            auto at = [&](int64_t k) { return x + ((o * in_len + k) * inner + i) * comp; };
            if (real_in) {
              for (int64_t k = 0; k < n; ++k) re[k] = k < in_len ? to_d(at(k)[0]) : 0.0;
              fft.real(re.data(), out.data(), scratch.data());
              for (int64_t k = n / 2 + 1; k < out_len; ++k) out[k] = std::conj(out[n - k]);
            } else {
              for (int64_t k = 0; k < n; ++k) {
                if (k < in_len && (!irfft || k <= n / 2)) {
                  in[k] = cd(to_d(at(k)[0]), complex_in ? to_d(at(k)[1]) : 0.0);
                } else if (irfft && n - k < in_len) {  // conjugate symmetry: X[k] = conj(X[n - k])
                  in[k] = cd(to_d(at(n - k)[0]), -to_d(at(n - k)[1]));
                } else {
                  in[k] = cd(0, 0);
                }
              }
              if (irfft) {  // the imaginary parts of bins 0 and n/2 (even n) do not contribute to a real signal
                in[0] = cd(in[0].real(), 0);
                if (n % 2 == 0) in[n / 2] = cd(in[n / 2].real(), 0);
              }
              fft.complex(in.data(), out.data());
            }
            if (irfft) {
              for (int64_t k = 0; k < out_len; ++k) y[(o * out_len + k) * inner + i] = from_d<T>(out[k].real());
              continue;
            }
            for (int64_t k = 0; k < out_len; ++k) {
              T* p = y + ((o * out_len + k) * inner + i) * 2;
              p[0] = from_d<T>(out[k].real());
              p[1] = from_d<T>(out[k].imag());
            }
          }
        });
      });
    };
  });
}

// ---------------------------------------------------------------- STFT

KernelFactory stft_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    bool onesided = ic.get_int("onesided", 1) != 0;
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      // [batch, length] is a real signal too, as ORT accepts it (onnx_asr's feature extractors rely on it).
      if (!(X.rank() == 2 || (X.rank() == 3 && (X.dim(2) == 1 || X.dim(2) == 2))))
        kernel_fail("STFT signal must be [batch, length] or [batch, length, 1 or 2], got " +
                    shape_to_string(X.shape()));
      const int64_t B = X.dim(0), L = X.dim(1), comp = X.rank() == 3 ? X.dim(2) : 1;
      int64_t step = scalar_int(ctx.input(1), "frame_step");
      if (step <= 0) kernel_fail("frame_step must be positive, got " + std::to_string(step));
      const Tensor* win = ctx.has_input(2) ? &ctx.input(2) : nullptr;
      if (win && win->rank() != 1) kernel_fail("window must be 1-D, got " + shape_to_string(win->shape()));
      int64_t flen;
      if (ctx.has_input(3)) {
        flen = scalar_int(ctx.input(3), "frame_length");
        if (win && win->dim(0) != flen)
          kernel_fail("window length " + std::to_string(win->dim(0)) + " differs from frame_length " +
                      std::to_string(flen));
      } else if (win) {
        flen = win->dim(0);
      } else {
        flen = L;
      }
      if (flen <= 0 || flen > L)
        kernel_fail("frame_length " + std::to_string(flen) + " must be in [1, signal length " + std::to_string(L) + "]");
      if (onesided && comp == 2) kernel_fail("onesided STFT needs a real signal");
      const int64_t frames = (L - flen) / step + 1;
      const int64_t bins = onesided ? flen / 2 + 1 : flen;
      Tensor& Y = ctx.allocate_output(0, X.dtype(), {B, frames, bins, 2});
      std::vector<double> w(static_cast<size_t>(flen), 1.0);
      if (win)
        for (int64_t i = 0; i < flen; ++i) w[i] = win->float_at(i);
      const Fft fft(flen, false);
      ThreadPool* pool = B * frames > 1 && flen * B * frames >= 4096 ? ctx.thread_pool() : nullptr;
      dispatch_float(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        parallel_for(pool, B * frames, [&](int64_t f0, int64_t f1) {
          std::vector<cd> in(static_cast<size_t>(flen)), out(static_cast<size_t>(flen)),
              scratch(static_cast<size_t>(fft.real_scratch_size()));
          std::vector<double> re(static_cast<size_t>(flen));
          for (int64_t bf = f0; bf < f1; ++bf) {
            const T* frame = x + ((bf / frames) * L + (bf % frames) * step) * comp;
            if (comp == 1) {
              for (int64_t k = 0; k < flen; ++k) re[k] = to_d(frame[k]) * w[k];
              fft.real(re.data(), out.data(), scratch.data());
              for (int64_t k = flen / 2 + 1; k < bins; ++k) out[k] = std::conj(out[flen - k]);
            } else {
              for (int64_t k = 0; k < flen; ++k) in[k] = cd(to_d(frame[2 * k]), to_d(frame[2 * k + 1])) * w[k];
              fft.complex(in.data(), out.data());
            }
            T* o = y + bf * bins * 2;
            for (int64_t k = 0; k < bins; ++k) {
              o[2 * k] = from_d<T>(out[k].real());
              o[2 * k + 1] = from_d<T>(out[k].imag());
            }
          }
        });
      });
    };
  });
}

// ---------------------------------------------------------------- windows

template <class F>
decltype(auto) dispatch_output_type(int64_t dt, F&& f) {
  DataType t = static_cast<DataType>(dt);
  if (t == DataType::Bool || t == DataType::String) unsupported_type(t, "a numeric output_datatype");
  return dispatch_numeric(t, std::forward<F>(f));
}

enum class WindowKind { Hann, Hamming, Blackman };

KernelFactory window_factory(WindowKind kind) {
  return lambda_factory([kind](const KernelInitContext& ic) {
    int64_t out_dt = ic.get_int("output_datatype", 1);
    bool periodic = ic.get_int("periodic", 1) != 0;
    return [=](KernelContext& ctx) {
      int64_t size = scalar_int(ctx.input(0), "size");
      if (size < 0) kernel_fail("window size must be non-negative, got " + std::to_string(size));
      Tensor& Y = ctx.allocate_output(0, static_cast<DataType>(out_dt), {size});
      double N = periodic ? static_cast<double>(size) : static_cast<double>(size - 1);
      dispatch_output_type(out_dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* y = Y.data<T>();
        for (int64_t i = 0; i < size; ++i) {
          double a = N == 0 ? 0.0 : 2.0 * M_PI * static_cast<double>(i) / N;
          double v;
          switch (kind) {
            case WindowKind::Hann: v = 0.5 - 0.5 * std::cos(a); break;
            case WindowKind::Hamming: v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(a); break;
            default: v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a); break;
          }
          y[i] = from_d<T>(v);
        }
      });
    };
  });
}

// ---------------------------------------------------------------- MelWeightMatrix

KernelFactory mel_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    int64_t out_dt = ic.get_int("output_datatype", 1);
    return [=](KernelContext& ctx) {
      int64_t mels = scalar_int(ctx.input(0), "num_mel_bins");
      int64_t dft_len = scalar_int(ctx.input(1), "dft_length");
      int64_t rate = scalar_int(ctx.input(2), "sample_rate");
      if (ctx.input(3).numel() != 1 || ctx.input(4).numel() != 1)
        kernel_fail("lower_edge_hertz and upper_edge_hertz must be scalars");
      double lo = ctx.input(3).float_at(0), hi = ctx.input(4).float_at(0);
      if (mels <= 0 || dft_len <= 0 || rate <= 0)
        kernel_fail("num_mel_bins, dft_length and sample_rate must be positive");
      const int64_t spec_bins = dft_len / 2 + 1;
      auto hz_to_mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
      double lo_mel = hz_to_mel(lo), hi_mel = hz_to_mel(hi);
      double step = (hi_mel - lo_mel) / static_cast<double>(mels + 2);
      std::vector<int64_t> bins(static_cast<size_t>(mels + 2));
      for (int64_t i = 0; i < mels + 2; ++i) {
        double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595.0) - 1.0);
        bins[i] = static_cast<int64_t>(std::floor((static_cast<double>(dft_len) + 1.0) * hz / static_cast<double>(rate)));
      }
      std::vector<double> m(static_cast<size_t>(spec_bins * mels), 0.0);
      auto put = [&](int64_t j, int64_t i, double v) {
        if (j >= 0 && j < spec_bins) m[j * mels + i] = v;
      };
      for (int64_t i = 0; i < mels; ++i) {
        int64_t l = bins[i], c = bins[i + 1], h = bins[i + 2];
        if (c - l == 0) {
          put(c, i, 1.0);
        } else {
          for (int64_t j = l; j <= c; ++j) put(j, i, static_cast<double>(j - l) / static_cast<double>(c - l));
        }
        if (h - c > 0)
          for (int64_t j = c; j < h; ++j) put(j, i, static_cast<double>(h - j) / static_cast<double>(h - c));
      }
      Tensor& Y = ctx.allocate_output(0, static_cast<DataType>(out_dt), {spec_bins, mels});
      dispatch_output_type(out_dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* y = Y.data<T>();
        for (size_t i = 0; i < m.size(); ++i) y[i] = from_d<T>(m[i]);
      });
    };
  });
}

}  // namespace

void register_signal(KernelRegistry& r) {
  r.add("DFT", 17, kMaxOpset, dft_factory());
  r.add("STFT", 17, kMaxOpset, stft_factory());
  r.add("HannWindow", 17, kMaxOpset, window_factory(WindowKind::Hann));
  r.add("HammingWindow", 17, kMaxOpset, window_factory(WindowKind::Hamming));
  r.add("BlackmanWindow", 17, kMaxOpset, window_factory(WindowKind::Blackman));
  r.add("MelWeightMatrix", 17, kMaxOpset, mel_factory());
}

}  // namespace onyx
