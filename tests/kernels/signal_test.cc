#include <cmath>

#include "op_test_util.h"

namespace onyx::test {
namespace {

TEST(Signal, DftRealInputAndInverse) {
  // x = [1, 2, 3, 4] as [1, 4, 1]
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4, 1});
  auto y = run_op(make_node("DFT", {"x"}, {"y"}), {x}, 17);
  EXPECT_EQ(y[0].shape(), (Shape{1, 4, 2}));
  expect_near(y[0], {10, 0, -2, 2, -2, 0, -2, -2}, 1e-5f);
  auto y1 = run_op(make_node("DFT", {"x"}, {"y"}, {{"onesided", attr_int(1)}}), {x}, 17);
  EXPECT_EQ(y1[0].shape(), (Shape{1, 3, 2}));
  auto back = run_op(make_node("DFT", {"x"}, {"y"}, {{"inverse", attr_int(1)}}), {y[0]}, 17);
  expect_near(back[0], {1, 0, 2, 0, 3, 0, 4, 0}, 1e-5f);
}

TEST(Signal, DftNonPowerOfTwoWithLength) {
  // length-3 transform of [1, 1] padded with a zero
  Tensor x = Tensor::from_vector<double>({1, 1}, {1, 2, 1});
  auto y = run_op(make_node("DFT", {"x", "n"}, {"y"}), {x, Tensor::scalar<int64_t>(3)}, 17);
  EXPECT_EQ(y[0].shape(), (Shape{1, 3, 2}));
  double c = std::cos(2 * M_PI / 3), s = std::sin(2 * M_PI / 3);
  expect_near(y[0], {2, 0, static_cast<float>(1 + c), static_cast<float>(-s), static_cast<float>(1 + c),
                     static_cast<float>(s)}, 1e-6f);
}

// Lengths of every factorization the mixed-radix transform takes (2^k, small
// primes, a large prime, 400 = 2^4 5^2 as Whisper's STFT), complex double input,
// forward and inverse, against the direct sum.
TEST(Signal, DftMixedRadixLengthsMatchDirectSum) {
  for (int64_t n : {1, 6, 12, 15, 16, 49, 97, 400}) {
    std::vector<double> x(2 * n);
    for (int64_t i = 0; i < 2 * n; ++i) x[i] = std::sin(0.37 * static_cast<double>(i * i % 101)) + 0.1 * (i % 7);
    for (int inverse : {0, 1}) {
      auto y = run_op(make_node("DFT", {"x"}, {"y"}, {{"inverse", attr_int(inverse)}}),
                      {Tensor::from_vector<double>(x, {1, n, 2})}, 17)[0];
      ASSERT_EQ(y.shape(), (Shape{1, n, 2}));
      const double sign = inverse ? 1.0 : -1.0;
      for (int64_t k = 0; k < n; ++k) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double a = sign * 2 * M_PI * static_cast<double>(j * k % n) / static_cast<double>(n);
          re += x[2 * j] * std::cos(a) - x[2 * j + 1] * std::sin(a);
          im += x[2 * j] * std::sin(a) + x[2 * j + 1] * std::cos(a);
        }
        if (inverse) re /= static_cast<double>(n), im /= static_cast<double>(n);
        ASSERT_NEAR(y.data<double>()[2 * k], re, 1e-9 * n) << "n " << n << " k " << k << " inverse " << inverse;
        ASSERT_NEAR(y.data<double>()[2 * k + 1], im, 1e-9 * n) << "n " << n << " k " << k << " inverse " << inverse;
      }
    }
  }
}

// Real signals take the half-length complex transform: every length kind (odd,
// even, power of two), zero padding to dft_length, one- and two-sided, inverse,
// the axis before another signal dim, and many signals spread over threads.
TEST(Signal, DftRealSignalsMatchDirectSum) {
  ThreadPool three(3);
  for (int64_t len : {1, 2, 5, 6, 16, 400}) {
    for (int64_t n : {len, len + 112}) {
      const int64_t batch = 5, inner = 2;  // signals run along axis 1 of [batch, len, inner, 1]
      std::vector<double> x(batch * len * inner);
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.71 * static_cast<double>(i * i % 89)) - 0.05 * (i % 5);
      for (int inverse : {0, 1})
        for (int onesided : {0, 1}) {
          if (inverse && onesided) continue;  // that is the IRFFT, tested below
          const std::map<std::string, Attribute> attrs = {
              {"inverse", attr_int(inverse)}, {"onesided", attr_int(onesided)}, {"axis", attr_int(1)}};
          auto y = run_op(make_node("DFT", {"x", "n"}, {"y"}, attrs),
                          {Tensor::from_vector<double>(x, {batch, len, inner, 1}), Tensor::scalar<int64_t>(n)}, 17,
                          &three)[0];
          const int64_t bins = onesided ? n / 2 + 1 : n;
          ASSERT_EQ(y.shape(), (Shape{batch, bins, inner, 2}));
          const double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
          for (int64_t b = 0; b < batch; ++b)
            for (int64_t c = 0; c < inner; ++c)
              for (int64_t k = 0; k < bins; ++k) {
                double re = 0, im = 0;
                for (int64_t j = 0; j < len; ++j) {
                  const double a = sign * 2 * M_PI * static_cast<double>(j * k % n) / static_cast<double>(n);
                  re += x[(b * len + j) * inner + c] * std::cos(a);
                  im += x[(b * len + j) * inner + c] * std::sin(a);
                }
                const double* got = y.data<double>() + ((b * bins + k) * inner + c) * 2;
                ASSERT_NEAR(got[0], re * scale, 1e-9 * n) << "len " << len << " n " << n << " k " << k;
                ASSERT_NEAR(got[1], im * scale, 1e-9 * n) << "len " << len << " n " << n << " k " << k;
              }
        }
    }
  }
}

TEST(Signal, Windows) {
  auto hann = run_op(make_node("HannWindow", {"n"}, {"y"}), {Tensor::scalar<int64_t>(4)}, 17);
  expect_near(hann[0], {0, 0.5f, 1, 0.5f});
  auto hann_sym = run_op(make_node("HannWindow", {"n"}, {"y"}, {{"periodic", attr_int(0)}}), {Tensor::scalar<int64_t>(3)}, 17);
  expect_near(hann_sym[0], {0, 1, 0});
  auto ham = run_op(make_node("HammingWindow", {"n"}, {"y"}), {Tensor::scalar<int64_t>(2)}, 17);
  expect_near(ham[0], {4.f / 46.f, 1.f});
  auto bl = run_op(make_node("BlackmanWindow", {"n"}, {"y"}, {{"output_datatype", attr_int(11)}}), {Tensor::scalar<int64_t>(2)}, 17);
  EXPECT_EQ(bl[0].dtype(), DataType::Double);
  expect_near(bl[0], {0, 1}, 1e-6f);
}

TEST(Signal, StftRectangularWindow) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {1, 5, 1});
  auto y = run_op(make_node("STFT", {"x", "step", "", "len"}, {"y"}),
                  {x, Tensor::scalar<int64_t>(2), Tensor(), Tensor::scalar<int64_t>(2)}, 17);
  // frames [1,2], [3,4]; onesided bins 2
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 2, 2}));
  expect_near(y[0], {3, 0, -1, 0, 7, 0, -1, 0});
  // a [batch, length] signal is real, as ORT reads it (onnx_asr's log-mel extractors feed that)
  auto flat = run_op(make_node("STFT", {"x", "step", "", "len"}, {"y"}),
                     {Tensor::from_vector<float>({1, 2, 3, 4, 5}, {1, 5}), Tensor::scalar<int64_t>(2), Tensor(),
                      Tensor::scalar<int64_t>(2)},
                     17);
  EXPECT_EQ(flat[0].shape(), (Shape{1, 2, 2, 2}));
  expect_near(flat[0], {3, 0, -1, 0, 7, 0, -1, 0});
  EXPECT_THROW(run_op(make_node("STFT", {"x", "step"}, {"y"}), {Tensor::from_vector<float>({1, 2, 3}, {3}),
                                                                 Tensor::scalar<int64_t>(1)}, 17),
               std::exception);
}

TEST(Signal, MelWeightMatrixShape) {
  auto y = run_op(make_node("MelWeightMatrix", {"a", "b", "c", "d", "e"}, {"y"}),
                  {Tensor::scalar<int64_t>(4), Tensor::scalar<int64_t>(16), Tensor::scalar<int64_t>(8000),
                   Tensor::scalar<float>(0.f), Tensor::scalar<float>(4000.f)},
                  17);
  EXPECT_EQ(y[0].shape(), (Shape{9, 4}));
  for (int64_t i = 0; i < y[0].numel(); ++i) {
    EXPECT_GE(y[0].data<float>()[i], 0.f);
    EXPECT_LE(y[0].data<float>()[i], 1.f);
  }
}

TEST(Signal, Errors) {
  EXPECT_THROW(run_op(make_node("DFT", {"x"}, {"y"}), {Tensor::from_vector<float>({1, 2, 3}, {1, 1, 3})}, 17), Error);
  EXPECT_THROW(run_op(make_node("STFT", {"x", "step"}, {"y"}),
                      {Tensor::from_vector<float>({1, 2}, {1, 2, 1}), Tensor::scalar<int64_t>(0)}, 17),
               Error);
}

TEST(Signal, DftInverseOnesidedIsIrfft) {
  // rfft([1, 2, 3, 4]) = [10, -2 + 2i, -2]; the IRFFT (default length 2 * (3 - 1)) gives the signal back.
  auto x = Tensor::from_vector<float>({10, 0, -2, 2, -2, 0}, {1, 3, 2});
  auto out = run_op(make_node("DFT", {"x"}, {"y"}, {{"inverse", attr_int(1)}, {"onesided", attr_int(1)}, {"axis", attr_int(1)}}),
                    {x}, 17);
  EXPECT_EQ(out[0].shape(), (Shape{1, 4, 1}));
  expect_near(out[0], {1, 2, 3, 4});
}

}  // namespace
}  // namespace onyx::test
