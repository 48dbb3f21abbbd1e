// The vectorized 8-bit (de)quantization loops against their scalar definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/quantize_8bit.h"

namespace onyx {
namespace {

// Ties, NaN, infinities, signed zeros, values far out of range, and noise.
std::vector<float> awkward_values(size_t n) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, 127.5f, -128.5f, 254.5f, 255.5f, nan,
                          inf,  -inf, 0.f,  -0.f,  3e9f,  -3e9f,  1e30f,  -1e-30f, 16777217.f};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-400.f, 400.f);
  while (v.size() < n) v.push_back(rng() % 3 ? d(rng) : std::round(d(rng)) + 0.5f);
  v.resize(n);
  return v;
}

TEST(Quantize8bit, MatchesNearbyintAndSaturation) {
  for (size_t n : {1, 7, 8, 9, 61, 200}) {
    std::vector<float> x = awkward_values(n);
    for (bool is_signed : {false, true})
      for (float scale : {1.f, 0.5f, 0.37f, 3.f})
        for (float zp : is_signed ? std::vector<float>{-128.f, 0.f, 127.f} : std::vector<float>{0.f, 128.f, 255.f}) {
          std::vector<uint8_t> y(n);
          quantize_8bit(x.data(), static_cast<int64_t>(n), scale, zp, is_signed, y.data());
          const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
          for (size_t i = 0; i < n; ++i) {
            float r = std::nearbyint(std::nearbyint(x[i] / scale) + zp);
            int32_t want = std::isnan(r) ? 0 : static_cast<int32_t>(std::min(std::max(r, lo), hi));
            int32_t got = is_signed ? static_cast<int8_t>(y[i]) : y[i];
            ASSERT_EQ(got, want) << "x=" << x[i] << " scale=" << scale << " zp=" << zp << " signed=" << is_signed;
          }
        }
  }
}

TEST(Quantize8bit, DequantizeMatchesScalar) {
  std::vector<uint8_t> q(259);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<uint8_t>(i * 37 + 11);
  for (bool is_signed : {false, true}) {
    std::vector<float> y(q.size());
    dequantize_8bit(q.data(), static_cast<int64_t>(q.size()), is_signed, 3.f, 0.0173f, y.data());
    for (size_t i = 0; i < q.size(); ++i) {
      float v = is_signed ? static_cast<float>(static_cast<int8_t>(q[i])) : static_cast<float>(q[i]);
      float want = (v - 3.f) * 0.0173f;
      ASSERT_EQ(std::memcmp(&y[i], &want, sizeof(float)), 0) << i;
    }
  }
}

TEST(Quantize8bit, MinMaxFoldsFromZeroIgnoringNaN) {
  for (size_t n : {1, 8, 13, 100}) {
    std::vector<float> x = awkward_values(n);
    for (auto& v : x)
      if (std::isinf(v)) v = 7.f;
    float lo, hi, want_lo = 0.f, want_hi = 0.f;
    min_max_with_zero(x.data(), static_cast<int64_t>(n), lo, hi);
    for (float v : x) {
      want_lo = std::min(want_lo, v);
      want_hi = std::max(want_hi, v);
    }
    EXPECT_EQ(lo, want_lo);
    EXPECT_EQ(hi, want_hi);
    EXPECT_FALSE(std::signbit(lo) && lo == 0.f);
  }
  float pos = 2.f, neg = -2.f;
  float lo, hi;
  min_max_with_zero(&pos, 1, lo, hi);
  EXPECT_EQ(lo, 0.f);
  EXPECT_EQ(hi, 2.f);
  min_max_with_zero(&neg, 1, lo, hi);
  EXPECT_EQ(lo, -2.f);
  EXPECT_EQ(hi, 0.f);
}

// a[i], b[i] run through all 65536 pairs of byte values.
void every_byte_pair(std::vector<uint8_t>& a, std::vector<uint8_t>& b) {
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < 256; ++j) {
      a.push_back(static_cast<uint8_t>(i));
      b.push_back(static_cast<uint8_t>(j));
    }
}

// QLinearAdd's step: every (a, b) byte pair, with ratios that put results on
// rounding ties and far outside the range, against fma by definition.
TEST(Quantize8bit, QLinearAddMatchesFmaDefinition) {
  std::vector<uint8_t> a, b;
  every_byte_pair(a, b);
  a.push_back(7);  // an odd length, so the scalar tail runs too
  b.push_back(250);
  const int64_t n = static_cast<int64_t>(a.size());
  for (bool is_signed : {false, true})
    for (auto [ra, rb, fixed] : std::vector<std::array<float, 3>>{{0.5f, 0.5f, 0.f}, {1.25f, 0.75f, -3.5f}, {0.013f, 2.7f, 9.f}}) {
      std::vector<uint8_t> y(a.size());
      qlinear_add_8bit(a.data(), b.data(), n, is_signed, ra, rb, fixed, y.data());
      for (int64_t i = 0; i < n; ++i) {
        float va = is_signed ? static_cast<int8_t>(a[i]) : a[i], vb = is_signed ? static_cast<int8_t>(b[i]) : b[i];
        float r = std::nearbyint(std::fma(va, ra, std::fma(vb, rb, fixed)));
        int32_t want = static_cast<int32_t>(std::min(std::max(r, is_signed ? -128.f : 0.f), is_signed ? 127.f : 255.f));
        int32_t got = is_signed ? static_cast<int8_t>(y[i]) : y[i];
        ASSERT_EQ(got, want) << "a " << va << " b " << vb << " ratios " << ra << " " << rb << " " << fixed;
      }
    }
}

// QLinearMul's step: every (a, b) byte pair; the product times the ratio and
// the zero point's add each rounded (a fused multiply-add moves hundreds of
// results by one step at a zero point of -50.5).
TEST(Quantize8bit, QLinearMulRoundsMultiplyAndAddApart) {
  std::vector<uint8_t> a, b;
  every_byte_pair(a, b);
  for (int i = 0; i < 13; ++i) {  // 13 past the whole 16-lane vectors: the 8-lane and scalar tails
    a.push_back(static_cast<uint8_t>(i * 19));
    b.push_back(static_cast<uint8_t>(250 - i));
  }
  const int64_t n = static_cast<int64_t>(a.size());
  for (bool is_signed : {false, true})
    for (auto [za, zb, ratio, zc] : std::vector<std::array<float, 4>>{
             {0.f, 0.f, 0.01f, -50.5f}, {3.f, -7.f, 0.0037f, 100.3f}, {128.f, 120.f, 1.f / 3.f, -50.5f}}) {
      std::vector<uint8_t> y(a.size());
      qlinear_mul_8bit(a.data(), b.data(), n, is_signed, za, zb, ratio, zc, y.data());
      for (int64_t i = 0; i < n; ++i) {
        const float va = is_signed ? static_cast<int8_t>(a[i]) : a[i], vb = is_signed ? static_cast<int8_t>(b[i]) : b[i];
        volatile float scaled = (va - za) * (vb - zb) * ratio;  // volatile: no contraction into an fma
        const float r = std::nearbyint(scaled + zc);
        const int32_t want =
            static_cast<int32_t>(std::min(std::max(r, is_signed ? -128.f : 0.f), is_signed ? 127.f : 255.f));
        const int32_t got = is_signed ? static_cast<int8_t>(y[i]) : y[i];
        ASSERT_EQ(got, want) << "a " << va << " b " << vb << " ratio " << ratio << " zc " << zc;
      }
    }
}

}  // namespace
}  // namespace onyx
