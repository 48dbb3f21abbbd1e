// The 8-bit GEMM against the plain definition, for every kernel this CPU runs.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cpu/int8_gemm.h"
#include "onyx/status.h"

namespace onyx {
namespace {

struct Case {
  int64_t M, N, K;
  bool a_signed, b_signed, trans_a, trans_b;
  std::vector<int32_t> a_zp, b_zp;
};

int32_t value(const std::vector<uint8_t>& v, size_t i, bool is_signed) {
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(v[i])) : static_cast<int32_t>(v[i]);
}

int32_t zp_at(const std::vector<int32_t>& zp, int64_t i) { return zp.empty() ? 0 : zp[zp.size() == 1 ? 0 : i]; }

// Operand bytes with the extremes of both types mixed in.
std::vector<uint8_t> random_bytes(size_t n, std::mt19937& rng) {
  std::vector<uint8_t> v(n);
  const uint8_t extremes[] = {0, 255, 128, 127};
  for (size_t i = 0; i < n; ++i) v[i] = rng() % 5 == 0 ? extremes[rng() % 4] : static_cast<uint8_t>(rng());
  return v;
}

// int8_gemm_requantized against requantize_rows_8bit of the plain sums:
// equal bytes, uint8 and int8 outputs, a bias, per-column multipliers.
void check_requantized(const Case& c, const Int8A& op, const PackedInt8B& pb, const std::vector<int32_t>& want,
                       std::mt19937& rng) {
  std::vector<int32_t> bias(static_cast<size_t>(c.N));
  std::vector<float> mult(static_cast<size_t>(c.N));
  for (int64_t n = 0; n < c.N; ++n) {
    bias[n] = static_cast<int32_t>(rng() % 20001) - 10000;
    mult[n] = (0.5f + static_cast<float>(n % 7) * 0.25f) / static_cast<float>(c.K * 96 + 16);
  }
  for (bool is_signed : {false, true}) {
    const Int8Requant rq{bias.data(), mult.data(), is_signed ? -5.f : 120.f, is_signed};
    std::vector<uint8_t> expect(static_cast<size_t>(c.M * c.N));
    requantize_rows_8bit(want.data(), c.M, c.N, c.N, rq.bias, rq.mult, rq.zero, is_signed, expect.data(), c.N);
    for (int isa = 0; isa <= static_cast<int>(int8_gemm_best_isa()); ++isa) {
      const int64_t ldy = c.N + 5;
      std::vector<uint8_t> y(static_cast<size_t>(c.M * ldy), 0xA5);
      int8_gemm_requantized(c.M, op, c.a_zp, pb, c.b_zp, rq, y.data(), ldy, nullptr, static_cast<Int8Isa>(isa));
      for (int64_t m = 0; m < c.M; ++m) {
        for (int64_t n = 0; n < c.N; ++n)
          ASSERT_EQ(y[m * ldy + n], expect[m * c.N + n]) << "requantized, isa " << isa << " signed " << is_signed
                                                         << " M" << c.M << " N" << c.N << " K" << c.K << " at " << m
                                                         << "," << n;
        for (int64_t n = c.N; n < ldy; ++n) ASSERT_EQ(y[m * ldy + n], 0xA5) << "isa " << isa << " wrote past row " << m;
      }
    }
  }
}

// int8_gemm_to_float against float(sum) * scale + bias of the plain sums:
// equal floats (multiplied, then added), with and without a bias.
void check_to_float(const Case& c, const Int8A& op, const PackedInt8B& pb, const std::vector<int32_t>& want,
                    std::mt19937& rng) {
  std::vector<float> scale(static_cast<size_t>(c.N)), bias(static_cast<size_t>(c.N));
  for (int64_t n = 0; n < c.N; ++n) {
    scale[n] = 1e-3f * static_cast<float>(1 + rng() % 1000);
    bias[n] = static_cast<float>(static_cast<int32_t>(rng() % 2001) - 1000) * 0.37f;
  }
  for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())})
    for (int isa = 0; isa <= static_cast<int>(int8_gemm_best_isa()); ++isa) {
      const int64_t ldy = c.N + 2;
      std::vector<float> y(static_cast<size_t>(c.M * ldy), -3.5f);
      int8_gemm_to_float(c.M, op, c.a_zp, pb, c.b_zp, scale.data(), b, y.data(), ldy, nullptr,
                         static_cast<Int8Isa>(isa));
      for (int64_t m = 0; m < c.M; ++m) {
        for (int64_t n = 0; n < c.N; ++n) {
          volatile float product = static_cast<float>(want[m * c.N + n]) * scale[n];  // not fused with the add
          const float expect = product + (b ? b[n] : 0.f);
          ASSERT_EQ(y[m * ldy + n], expect) << "to float, isa " << isa << " bias " << (b != nullptr) << " M" << c.M
                                            << " N" << c.N << " K" << c.K << " at " << m << "," << n;
        }
        for (int64_t n = c.N; n < ldy; ++n)
          ASSERT_EQ(y[m * ldy + n], -3.5f) << "isa " << isa << " wrote past row " << m;
      }
    }
}

void check(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> a = random_bytes(static_cast<size_t>(c.M * c.K), rng);
  std::vector<uint8_t> b = random_bytes(static_cast<size_t>(c.K * c.N), rng);
  std::vector<int32_t> want(static_cast<size_t>(c.M * c.N));
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      int32_t s = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        int32_t av = value(a, c.trans_a ? k * c.M + m : m * c.K + k, c.a_signed) - zp_at(c.a_zp, m);
        int32_t bv = value(b, c.trans_b ? n * c.K + k : k * c.N + n, c.b_signed) - zp_at(c.b_zp, n);
        s += av * bv;
      }
      want[m * c.N + n] = s;
    }
  PackedInt8B pb(b.data(), c.b_signed, c.K, c.N, c.trans_b ? c.K : c.N, c.trans_b);
  Int8A op{a.data(), c.a_signed, c.trans_a ? c.M : c.K, c.trans_a};
  for (int isa = 0; isa <= static_cast<int>(int8_gemm_best_isa()); ++isa) {
    const int64_t ldy = c.N + 3;  // a gap after each row must stay untouched
    std::vector<int32_t> y(static_cast<size_t>(c.M * ldy), -7);
    int8_gemm(c.M, op, c.a_zp, pb, c.b_zp, y.data(), ldy, nullptr, static_cast<Int8Isa>(isa));
    for (int64_t m = 0; m < c.M; ++m) {
      for (int64_t n = 0; n < c.N; ++n)
        ASSERT_EQ(y[m * ldy + n], want[m * c.N + n]) << "isa " << isa << " M" << c.M << " N" << c.N << " K" << c.K
                                                     << " at " << m << "," << n;
      for (int64_t n = c.N; n < ldy; ++n) ASSERT_EQ(y[m * ldy + n], -7) << "isa " << isa << " wrote past row " << m;
    }
  }
  check_requantized(c, op, pb, want, rng);
  check_to_float(c, op, pb, want, rng);
}

TEST(Int8Gemm, OddSizesAllSignMixesMatchThePlainLoop) {
  const int64_t sizes[][3] = {{1, 1, 1}, {7, 13, 1}, {5, 17, 3}, {13, 65, 9}, {6, 64, 4}, {97, 33, 31}, {2, 130, 67}};
  uint32_t seed = 1;
  for (auto& s : sizes)
    for (int mix = 0; mix < 4; ++mix) {
      bool as = mix & 1, bs = mix & 2;
      std::vector<int32_t> za = {as ? -128 : 255}, zb = {bs ? 127 : 0};
      check({s[0], s[1], s[2], as, bs, false, false, za, zb}, seed++);
      check({s[0], s[1], s[2], as, bs, false, false, {}, {}}, seed++);
    }
}

TEST(Int8Gemm, PerRowAndPerColumnZeroPointsAtExtremes) {
  const int64_t M = 11, N = 37, K = 21;
  std::vector<int32_t> za(M), zb(N);
  for (int64_t m = 0; m < M; ++m) za[m] = m % 2 ? 0 : 255;
  for (int64_t n = 0; n < N; ++n) zb[n] = n % 3 == 0 ? -128 : n % 3 == 1 ? 127 : 0;
  check({M, N, K, false, true, false, false, za, zb}, 7);
  for (auto& z : za) z = z == 255 ? 127 : -128;
  for (auto& z : zb) z = z < 0 ? 0 : 255;
  check({M, N, K, true, false, false, false, za, zb}, 8);
}

TEST(Int8Gemm, TransposedOperands) {
  check({9, 19, 14, false, true, true, false, {3}, {-2}}, 11);
  check({9, 19, 14, true, false, false, true, {-5}, {200}}, 12);
  check({70, 81, 129, false, false, true, true, {128}, {1}}, 13);
}

// Column ranges (panel-aligned) write their columns only, and together
// the whole requantized product.
TEST(Int8Gemm, RequantizedColumnRangesCoverTheProduct) {
  const int64_t M = 7, N = 150, K = 21;
  std::mt19937 rng(5);
  std::vector<uint8_t> a = random_bytes(static_cast<size_t>(M * K), rng);
  std::vector<uint8_t> b = random_bytes(static_cast<size_t>(K * N), rng);
  PackedInt8B pb(b.data(), true, K, N, N, false);
  const Int8A op{a.data(), false, K, false};
  std::vector<float> mult(static_cast<size_t>(N), 1.f / 2000.f);
  const Int8Requant rq{nullptr, mult.data(), 100.f, false};
  for (int isa = 0; isa <= static_cast<int>(int8_gemm_best_isa()); ++isa) {
    std::vector<uint8_t> whole(static_cast<size_t>(M * N)), parts(whole.size(), 0xA5);
    int8_gemm_requantized(M, op, {3}, pb, {}, rq, whole.data(), N, nullptr, static_cast<Int8Isa>(isa));
    int8_gemm_requantized(M, op, {3}, pb, {}, rq, parts.data(), N, nullptr, static_cast<Int8Isa>(isa), 64, 128);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        ASSERT_EQ(parts[m * N + n], n >= 64 && n < 128 ? whole[m * N + n] : 0xA5)
            << "isa " << isa << " at " << m << "," << n;
    int8_gemm_requantized(M, op, {3}, pb, {}, rq, parts.data(), N, nullptr, static_cast<Int8Isa>(isa), 0, 64);
    int8_gemm_requantized(M, op, {3}, pb, {}, rq, parts.data(), N, nullptr, static_cast<Int8Isa>(isa), 128, N);
    EXPECT_EQ(parts, whole) << "isa " << isa;
  }
  std::vector<uint8_t> y(static_cast<size_t>(M * N));
  EXPECT_THROW(int8_gemm_requantized(M, op, {3}, pb, {}, rq, y.data(), N, nullptr, Int8Isa::Scalar, 10, 64), Error);
  EXPECT_THROW(int8_gemm_requantized(M, op, {3}, pb, {}, rq, y.data(), N, nullptr, Int8Isa::Scalar, 0, 100), Error);
}

TEST(Int8Gemm, EmptyKGivesZeros) {
  std::vector<uint8_t> none;
  PackedInt8B pb(none.data(), true, 0, 5, 5, false);
  std::vector<int32_t> y(10, 9);
  int8_gemm(2, Int8A{none.data(), false, 0, false}, {4}, pb, {3}, y.data(), 5, nullptr);
  for (int32_t v : y) EXPECT_EQ(v, 0);
}

}  // namespace
}  // namespace onyx
