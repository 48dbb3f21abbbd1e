// The int8 x 4-bit block GEMM (MatMulNBits accuracy_level 4) against the
// definition computed in double from the same per-block int8 quantization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/int4_block_gemm.h"

namespace onyx {
namespace {

struct Case {
  int64_t M, N, K, block;
  bool bias;
};

// A's block j of row m as int8 and its scale, as the kernel specifies it.
void quantize_block(const float* a, int64_t k0, int64_t k1, std::vector<int>& q, double& scale) {
  float mx = 0.f;
  for (int64_t k = k0; k < k1; ++k) mx = std::max(mx, std::fabs(a[k]));
  const float inv = mx > 0.f ? 127.f / mx : 0.f;
  q.clear();
  for (int64_t k = k0; k < k1; ++k)
    q.push_back(static_cast<int>(std::clamp(std::nearbyint(a[k] * inv), -127.f, 127.f)));
  scale = static_cast<double>(mx / 127.f);
}

void check(const Case& c, ThreadPool* pool, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-2.f, 2.f);
  const int64_t kb = (c.K + c.block - 1) / c.block, row_bytes = kb * c.block / 2;
  std::vector<uint8_t> codes(static_cast<size_t>(c.N * row_bytes));
  for (auto& v : codes) v = static_cast<uint8_t>(rng());
  std::vector<float> scales(static_cast<size_t>(c.N * kb)), zps(scales.size()), bias(static_cast<size_t>(c.N));
  for (auto& v : scales) v = 0.001f + 0.01f * static_cast<float>(rng() % 100);
  for (auto& v : zps) v = static_cast<float>(rng() % 16);
  for (auto& v : bias) v = uni(rng);
  std::vector<float> A(static_cast<size_t>(c.M * c.K));
  for (auto& v : A) v = uni(rng);
  if (c.M > 1)  // a zero row (scale 0) and a row with one large value per block
    for (int64_t k = 0; k < c.K; ++k) {
      A[k] = 0.f;
      A[c.K + k] = k % c.block == 3 ? 1000.f : A[c.K + k];
    }
  PackedInt4B b(codes.data(), row_bytes, c.N, c.K, c.block, scales.data(), zps.data());
  std::vector<float> y(static_cast<size_t>(c.M * c.N), -1.f);
  int4_block_gemm(c.M, A.data(), b, c.bias ? bias.data() : nullptr, y.data(), pool);
  std::vector<int> q;
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      double want = c.bias ? bias[n] : 0.0, magnitude = std::fabs(want);
      for (int64_t j = 0; j < kb; ++j) {
        const int64_t k0 = j * c.block, k1 = std::min(c.K, k0 + c.block);
        double sa = 0.0;
        quantize_block(A.data() + m * c.K, k0, k1, q, sa);
        const double sb = scales[n * kb + j], zb = zps[n * kb + j];
        for (int64_t k = k0; k < k1; ++k) {
          const int code = (codes[n * row_bytes + k / 2] >> (4 * (k % 2))) & 15;
          want += sa * sb * q[k - k0] * (code - zb);
          // The kernel sums the code and zero-point parts apart: its rounding scales with both.
          magnitude += sa * sb * std::abs(q[k - k0]) * (code + zb);
        }
      }
      ASSERT_NEAR(y[m * c.N + n], want, 1e-5 * magnitude + 1e-6)
          << "M" << c.M << " N" << c.N << " K" << c.K << " block " << c.block << " at " << m << "," << n;
    }
}

TEST(Int4BlockGemm, MatchesTheDefinitionOnOddShapes) {
  if (!int4_block_gemm_supported(32)) GTEST_SKIP() << "this CPU has neither AVX-512 VNNI nor AVX-VNNI";
  const Case cases[] = {{1, 1, 16, 16, false},   {1, 70, 256, 32, true},  {2, 33, 96, 32, false},
                        {3, 17, 40, 16, true},   {5, 64, 200, 64, true},  {9, 100, 128, 128, false},
                        {33, 48, 72, 16, true},  {70, 20, 64, 32, true},
                        // K ending inside a group of 8 codes
                        {3, 20, 50, 16, true},    {2, 5, 13, 32, false},
                        // big enough to split across the pool's threads
                        {1, 1000, 512, 32, true}, {40, 300, 256, 64, false}};
  ThreadPool pool(2);
  uint32_t seed = 1;
  for (const Case& c : cases) {
    check(c, nullptr, seed++);
    check(c, &pool, seed++);
  }
}

TEST(Int4BlockGemm, NeedsBlocksOfSixteen) {
  EXPECT_FALSE(int4_block_gemm_supported(8));
  EXPECT_FALSE(int4_block_gemm_supported(24));
}

}  // namespace
}  // namespace onyx
