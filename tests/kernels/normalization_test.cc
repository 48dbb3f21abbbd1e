#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/thread_pool.h"
#include "op_test_util.h"

namespace onyx::test {

// Two channels, by hand: float takes the vectorized path, double the generic one.
template <class T>
void check_small_batchnorm() {
  Tensor x = Tensor::from_vector<T>({1, 2, 3, 4}, {1, 2, 2});
  Tensor s = Tensor::from_vector<T>({1, 2}, {2});
  Tensor b = Tensor::from_vector<T>({0, 1}, {2});
  Tensor m = Tensor::from_vector<T>({1, 3}, {2});
  Tensor v = Tensor::from_vector<T>({4, 1}, {2});
  auto y = run_op(make_node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {{"epsilon", attr_float(0)}}),
                  {x, s, b, m, v}, 15)[0];
  EXPECT_EQ(y.dtype(), DataTypeOf<T>::value);
  expect_near(y, {0, 0.5, 1, 3});
}

TEST(BatchNormalization, Inference) {
  check_small_batchnorm<float>();
  check_small_batchnorm<double>();
}

TEST(BatchNormalization, TrainingModeRunningStats) {
  Tensor x = Tensor::from_vector<float>({1, 3}, {2, 1});  // N=2, C=1: mean 2, var 1
  Tensor one = Tensor::from_vector<float>({1}, {1}), zero = Tensor::from_vector<float>({0}, {1});
  auto out = run_op(make_node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "rm", "rv"},
                              {{"epsilon", attr_float(0)}, {"training_mode", attr_int(1)}, {"momentum", attr_float(0.5)}}),
                    {x, one, zero, zero, one}, 15);
  expect_near(out[0], {-1, 1});
  expect_near(out[1], {1});
  expect_near(out[2], {1});
}

TEST(LayerNormalization, MeanAndInvStdDev) {
  Tensor x = Tensor::from_vector<float>({1, 3, 0, 4}, {2, 2});
  Tensor s = Tensor::from_vector<float>({2, 1}, {2});
  Tensor b = Tensor::from_vector<float>({0, 1}, {2});
  auto out = run_op(make_node("LayerNormalization", {"x", "s", "b"}, {"y", "mean", "inv"}, {{"epsilon", attr_float(0)}}),
                    {x, s, b}, 17);
  expect_near(out[0], {-2, 2, -2, 2});
  EXPECT_EQ(out[1].shape(), (Shape{2, 1}));
  expect_near(out[1], {2, 2});
  expect_near(out[2], {1, 0.5});
  // also loads at older opsets
  EXPECT_NO_THROW(run_op(make_node("LayerNormalization", {"x", "s"}, {"y"}), {x, s}, 11));
}

// Scale and B may broadcast to all of X (the function body's Mul / Add; onnxruntime
// accepts it): a value per row here, [2, 1] over X [2, 2].
TEST(LayerNormalization, ScaleAndBiasBroadcastToX) {
  Tensor x = Tensor::from_vector<float>({1, 3, 0, 4}, {2, 2});
  Tensor s = Tensor::from_vector<float>({2, 3}, {2, 1});
  Tensor b = Tensor::from_vector<float>({0, 1, 2, 3}, {2, 2});
  auto y = run_op(make_node("LayerNormalization", {"x", "s", "b"}, {"y"}, {{"epsilon", attr_float(0)}}), {x, s, b}, 17);
  expect_near(y[0], {-2, 3, -1, 6});
  Tensor wide = Tensor::from_vector<float>({1, 1, 1}, {3, 1});
  EXPECT_THROW(run_op(make_node("LayerNormalization", {"x", "s"}, {"y"}), {x, wide}, 17), Error);
}

TEST(InstanceNormalization, PerChannel) {
  Tensor x = Tensor::from_vector<float>({1, 3, 5, 9}, {1, 2, 2});
  Tensor s = Tensor::from_vector<float>({1, 1}, {2});
  Tensor b = Tensor::from_vector<float>({0, 7}, {2});
  auto y = run_op(make_node("InstanceNormalization", {"x", "s", "b"}, {"y"}, {{"epsilon", attr_float(0)}}), {x, s, b})[0];
  expect_near(y, {-1, 1, 6, 8});
}

TEST(GroupNormalization, PerGroupScaleBroadcast) {
  Tensor x = Tensor::from_vector<float>({1, 3, 10, 12}, {1, 4, 1});  // groups {1,3}, {10,12}
  Tensor s = Tensor::from_vector<float>({2, 2}, {2});
  Tensor b = Tensor::from_vector<float>({0, 5}, {2});
  auto y = run_op(make_node("GroupNormalization", {"x", "s", "b"}, {"y"},
                            {{"num_groups", attr_int(2)}, {"epsilon", attr_float(0)}}),
                  {x, s, b}, 18)[0];
  expect_near(y, {-2, 2, 3, 7});
}

// Float groups (vectorized statistics) against the same values in double
// (scalar loops), groups of 70 values with a 16-wide tail, per-channel scale.
TEST(GroupNormalization, FloatMatchesDouble) {
  const Shape shape = {2, 6, 5, 7};
  std::vector<double> vd(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < vd.size(); ++i) vd[i] = static_cast<double>((i * 7919) % 101) * 0.05 + (i % 70 == 3 ? 40.0 : 0.0);
  std::vector<double> sd = {0.5, 1, 1.5, 2, -1, 3}, bd = {0, 1, 2, 3, 4, 5};
  Node node = make_node("GroupNormalization", {"x", "s", "b"}, {"y"}, {{"num_groups", attr_int(3)}});
  auto yd = run_op(node, {Tensor::from_vector<double>(vd, shape), Tensor::from_vector<double>(sd, {6}),
                          Tensor::from_vector<double>(bd, {6})}, 21)[0];
  auto yf = run_op(node, {Tensor::from_vector<float>(std::vector<float>(vd.begin(), vd.end()), shape),
                          Tensor::from_vector<float>(std::vector<float>(sd.begin(), sd.end()), {6}),
                          Tensor::from_vector<float>(std::vector<float>(bd.begin(), bd.end()), {6})}, 21)[0];
  ASSERT_EQ(yf.shape(), shape);
  for (int64_t i = 0; i < yf.numel(); ++i) ASSERT_NEAR(yf.float_at(i), yd.float_at(i), 1e-5) << i;
}

TEST(LRN, ChannelWindow) {
  Tensor x = Tensor::from_vector<float>({1, 2}, {1, 2, 1, 1});
  auto y = run_op(make_node("LRN", {"x"}, {"y"},
                            {{"size", attr_int(2)}, {"alpha", attr_float(2)}, {"beta", attr_float(1)}, {"bias", attr_float(1)}}),
                  {x})[0];
  // c0 window {0,1}: 1 + 1*(1+4) = 6; c1 window {1}: 1 + 1*4 = 5
  expect_near(y, {1.0f / 6, 2.0f / 5});
}

TEST(MeanVarianceNormalization, DefaultAxes) {
  Tensor x = Tensor::from_vector<float>({1, 3, 0, 0}, {2, 2, 1, 1});  // channel 0: {1, 0}, channel 1: {3, 0}
  auto y = run_op(make_node("MeanVarianceNormalization", {"x"}, {"y"}), {x}, 13)[0];
  expect_near(y, {1, 1, -1, -1}, 1e-4f);
}

// MVN-1: across_channels picks axes {0, 2, 3} or {0, 1, 2, 3}; normalize_variance 0 only centres.
TEST(MeanVarianceNormalization, ExperimentalAttributes) {
  Tensor x = Tensor::from_vector<float>({1, 3, 0, 0}, {2, 2, 1, 1});  // channel 0: {1, 0}, channel 1: {3, 0}
  auto centred = run_op(make_node("MeanVarianceNormalization", {"x"}, {"y"}, {{"normalize_variance", attr_int(0)}}),
                        {x}, 7)[0];
  expect_near(centred, {0.5f, 1.5f, -0.5f, -1.5f});
  auto across = run_op(make_node("MeanVarianceNormalization", {"x"}, {"y"},
                                 {{"across_channels", attr_int(1)}, {"normalize_variance", attr_int(0)}}),
                       {x}, 7)[0];
  expect_near(across, {0, 2, -1, -1});  // one mean, 1, over all four values
  auto scaled = run_op(make_node("MeanVarianceNormalization", {"x"}, {"y"}, {{"across_channels", attr_int(1)}}), {x}, 7)[0];
  float sd = std::sqrt((0 + 4 + 1 + 1) / 4.0f);
  expect_near(scaled, {0, 2 / sd, -1 / sd, -1 / sd}, 1e-5f);
}

// ImageScaler (experimental): scale * x + bias per channel.
TEST(ImageScaler, ScaleAndChannelBias) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2});
  auto y = run_op(make_node("ImageScaler", {"x"}, {"y"}, {{"scale", attr_float(2)}, {"bias", attr_floats({1, -1})}}),
                  {x}, 8)[0];
  expect_near(y, {3, 5, 7, 9, 9, 11, 13, 15});
  EXPECT_THROW(run_op(make_node("ImageScaler", {"x"}, {"y"}, {{"bias", attr_floats({1, 2, 3})}}), {x}, 8), Error);
}

TEST(BatchNormalization, WrongParamSizeThrows) {
  Tensor x = Tensor::zeros(DataType::Float, {1, 3, 2});
  Tensor p = Tensor::zeros(DataType::Float, {2});
  EXPECT_THROW(run_op(make_node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}), {x, p, p, p, p}, 15),
               onyx::Error);
}

TEST(RMSNormalization, LastAxisWithScale) {
  // [3, 4]: mean of squares 12.5, rms sqrt(12.5 + 1e-5); scale [1, 2].
  auto x = Tensor::from_vector<float>({3, 4, 0, 0}, {2, 2});
  auto scale = Tensor::from_vector<float>({1, 2}, {2});
  auto out = run_op(make_node("RMSNormalization", {"x", "s"}, {"y"}), {x, scale}, 23);
  expect_near(out[0], {0.8485278f, 2 * 1.1313704f, 0, 0});
  // axis 0 normalizes over the whole tensor: mean of squares 6.25.
  out = run_op(make_node("RMSNormalization", {"x", "s"}, {"y"}, {{"axis", attr_int(0)}}), {x, scale}, 23);
  expect_near(out[0], {1.2f, 3.2f, 0, 0}, 1e-4f);
  // A scale of as many values as a row that still varies along the rows ([2, 1]).
  auto x2 = Tensor::from_vector<float>({3, 4, 6, 8}, {2, 2});
  out = run_op(make_node("RMSNormalization", {"x", "s"}, {"y"}), {x2, Tensor::from_vector<float>({1, 2}, {2, 1})}, 23);
  expect_near(out[0], {0.8485278f, 1.1313704f, 2 * 0.8485278f, 2 * 1.1313704f}, 1e-4f);
}

// Float rows (the vector path) against the double reference, rows long enough
// for the 16-lane sums and their tails.
TEST(RMSNormalization, FloatRowsMatchDouble) {
  Tensor x = pattern({3, 2, 37}, 1), scale = pattern({37}, 2);
  Tensor xd(DataType::Double, x.shape()), sd(DataType::Double, scale.shape());
  for (int64_t i = 0; i < x.numel(); ++i) xd.data<double>()[i] = x.data<float>()[i];
  for (int64_t i = 0; i < scale.numel(); ++i) sd.data<double>()[i] = scale.data<float>()[i];
  Node node = make_node("RMSNormalization", {"x", "s"}, {"y"}, {{"epsilon", attr_float(1e-3f)}});
  auto got = run_op(node, {x, scale}, 23), want = run_op(node, {xd, sd}, 23);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_NEAR(got[0].data<float>()[i], want[0].data<double>()[i], 1e-5) << i;
}

TEST(LpNormalization, L1L2AndZeroNorm) {
  auto x = Tensor::from_vector<float>({3, 4, 0, 0}, {2, 2});
  auto out = run_op(make_node("LpNormalization", {"x"}, {"y"}), {x}, 22);
  expect_near(out[0], {0.6f, 0.8f, 0, 0});  // a zero norm gives zeros
  out = run_op(make_node("LpNormalization", {"x"}, {"y"}, {{"p", attr_int(1)}, {"axis", attr_int(0)}}), {x}, 22);
  expect_near(out[0], {1, 1, 0, 0});
  EXPECT_THROW(run_op(make_node("LpNormalization", {"x"}, {"y"}, {{"p", attr_int(3)}}), {x}, 22), Error);
}

// ---- vectorized / threaded float paths against double references ----

// Deterministic test data with a nonzero mean (so a wrong mean shows) and an
// irregular pattern (so a wrong lane or tail element shows).
std::vector<float> norm_test_data(int64_t n, float offset) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = offset + 2.0f * static_cast<float>(std::sin(0.37 * i)) + 0.25f * static_cast<float>((i * 7919) % 13);
  return v;
}

// Mean and 1 / sqrt(variance + eps) of n floats, in double.
struct RowStats {
  double mean, inv_std;
};
RowStats row_stats(const float* x, int64_t n, double eps) {
  double mu = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mu += x[i];
  mu /= n;
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mu) * (x[i] - mu);
  return {mu, 1.0 / std::sqrt(var / n + eps)};
}

// LayerNormalization over the last `inner` elements of each of `rows` rows,
// Scale / B of length inner, compared with a double-precision reference.
void check_layernorm_rows(int64_t rows, int64_t inner, bool with_bias, ThreadPool* pool) {
  SCOPED_TRACE("rows " + std::to_string(rows) + " inner " + std::to_string(inner));
  auto xv = norm_test_data(rows * inner, 3.0f);
  std::vector<float> sv(inner), bv(inner);
  for (int64_t i = 0; i < inner; ++i) {
    sv[i] = 0.5f + 0.01f * static_cast<float>(i % 17);
    bv[i] = -0.3f + 0.02f * static_cast<float>(i % 11);
  }
  Tensor x = Tensor::from_vector<float>(xv, {rows, inner});
  Tensor s = Tensor::from_vector<float>(sv, {inner});
  Tensor b = Tensor::from_vector<float>(bv, {inner});
  const float eps = 1e-5f;
  auto node = with_bias ? make_node("LayerNormalization", {"x", "s", "b"}, {"y"}, {{"epsilon", attr_float(eps)}})
                        : make_node("LayerNormalization", {"x", "s"}, {"y"}, {{"epsilon", attr_float(eps)}});
  auto y = run_op(node, with_bias ? std::vector<Tensor>{x, s, b} : std::vector<Tensor>{x, s}, 17, pool)[0];
  ASSERT_EQ(y.shape(), x.shape());
  const float* yp = y.data<float>();
  int bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xp = xv.data() + r * inner;
    auto [mu, inv] = row_stats(xp, inner, eps);
    for (int64_t i = 0; i < inner && bad < 5; ++i) {
      double want = (xp[i] - mu) * inv * sv[i] + (with_bias ? bv[i] : 0.0);
      double got = yp[r * inner + i];
      if (std::abs(got - want) > 1e-5 * std::max(1.0, std::abs(want))) {
        ADD_FAILURE() << "row " << r << " index " << i << ": got " << got << ", want " << want;
        ++bad;
      }
    }
  }
}

TEST(LayerNormalization, VectorRowsMatchDoubleReference) {
  ThreadPool pool(3);
  // lengths below, at and around the 16-float vector width, many rows so the
  // threaded split is taken (more than 32768 elements)
  for (int64_t inner : {1, 5, 16, 37, 96, 768}) {
    int64_t rows = std::max<int64_t>(4, 40000 / inner + 3);
    check_layernorm_rows(rows, inner, true, &pool);
    check_layernorm_rows(rows, inner, false, &pool);
  }
  check_layernorm_rows(7, 37, true, nullptr);  // few rows, no pool
}

TEST(LayerNormalization, BroadcastScaleOverSeveralAxesThreaded) {
  // axis 1 of [R, 3, 37]: rows of 111, Scale [37] and B [3, 1] broadcast over them
  ThreadPool pool(3);
  const int64_t R = 400, A = 3, L = 37, inner = A * L;
  auto xv = norm_test_data(R * inner, -1.5f);
  std::vector<float> sv(L), bv(A);
  for (int64_t i = 0; i < L; ++i) sv[i] = 1.0f + 0.05f * static_cast<float>(i % 5);
  for (int64_t i = 0; i < A; ++i) bv[i] = 0.1f * static_cast<float>(i + 1);
  auto out = run_op(make_node("LayerNormalization", {"x", "s", "b"}, {"y"}, {{"axis", attr_int(1)}}),
                    {Tensor::from_vector<float>(xv, {R, A, L}), Tensor::from_vector<float>(sv, {L}),
                     Tensor::from_vector<float>(bv, {A, 1})},
                    17, &pool);
  const float* yp = out[0].data<float>();
  for (int64_t r = 0; r < R; ++r) {
    const float* xp = xv.data() + r * inner;
    auto [mu, inv] = row_stats(xp, inner, 1e-5);
    for (int64_t i = 0; i < inner; ++i) {
      double want = (xp[i] - mu) * inv * sv[i % L] + bv[i / L];
      ASSERT_NEAR(yp[r * inner + i], want, 1e-5 * std::max(1.0, std::abs(want))) << "row " << r << " index " << i;
    }
  }
}

TEST(LayerNormalization, FullScaleOverSeveralAxesReadInPlace) {
  // axis -2 of [3, 32, 50]: rows of 1600 with Scale and B of that whole shape
  const int64_t R = 3, A = 32, L = 50, inner = A * L;
  auto xv = norm_test_data(R * inner, 0.5f);
  std::vector<float> sv(inner), bv(inner);
  for (int64_t i = 0; i < inner; ++i) {
    sv[i] = 0.5f + 0.01f * static_cast<float>(i % 97);
    bv[i] = 0.001f * static_cast<float>(i);
  }
  auto out = run_op(make_node("LayerNormalization", {"x", "s", "b"}, {"y"}, {{"axis", attr_int(-2)}}),
                    {Tensor::from_vector<float>(xv, {R, A, L}), Tensor::from_vector<float>(sv, {A, L}),
                     Tensor::from_vector<float>(bv, {A, L})},
                    17);
  for (int64_t r = 0; r < R; ++r) {
    const float* xp = xv.data() + r * inner;
    auto [mu, inv] = row_stats(xp, inner, 1e-5);
    for (int64_t i = 0; i < inner; ++i) {
      double want = (xp[i] - mu) * inv * sv[i] + bv[i];
      ASSERT_NEAR(out[0].data<float>()[r * inner + i], want, 1e-5 * std::max(1.0, std::abs(want))) << r << "," << i;
    }
  }
}

TEST(LayerNormalization, MeanAndInvStdDevThreaded) {
  // the optional statistics outputs with many rows on a pool
  ThreadPool pool(3);
  const int64_t rows = 500, inner = 96;
  auto xv = norm_test_data(rows * inner, 2.0f);
  auto out = run_op(make_node("LayerNormalization", {"x", "s"}, {"y", "mean", "inv"}),
                    {Tensor::from_vector<float>(xv, {rows, inner}),
                     Tensor::from_vector<float>(std::vector<float>(inner, 1.0f), {inner})},
                    17, &pool);
  ASSERT_EQ(out[1].shape(), (Shape{rows, 1}));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xp = xv.data() + r * inner;
    auto [mu, inv] = row_stats(xp, inner, 1e-5);
    ASSERT_NEAR(out[1].data<float>()[r], mu, 1e-5 * std::abs(mu));
    ASSERT_NEAR(out[2].data<float>()[r], inv, 1e-5 * inv);
    ASSERT_NEAR(out[0].data<float>()[r * inner + 5], (xp[5] - mu) * inv, 1e-5);
  }
}

// Inference BatchNormalization on X of `shape`, compared with a double reference.
void check_batchnorm(const Shape& shape, ThreadPool* pool) {
  SCOPED_TRACE("shape " + shape_to_string(shape));
  int64_t N = shape[0], C = shape[1], inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  auto xv = norm_test_data(N * C * inner, 1.0f);
  std::vector<float> sv(C), bv(C), mv(C), vv(C);
  for (int64_t c = 0; c < C; ++c) {
    sv[c] = 0.5f + 0.1f * static_cast<float>(c);
    bv[c] = 0.2f * static_cast<float>(c) - 0.4f;
    mv[c] = 0.3f * static_cast<float>(c % 4);
    vv[c] = 0.5f + 0.25f * static_cast<float>(c % 3);
  }
  const float eps = 1e-3f;
  auto y = run_op(
      make_node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {{"epsilon", attr_float(eps)}}),
      {Tensor::from_vector<float>(xv, shape), Tensor::from_vector<float>(sv, {C}), Tensor::from_vector<float>(bv, {C}),
       Tensor::from_vector<float>(mv, {C}), Tensor::from_vector<float>(vv, {C})},
      15, pool)[0];
  ASSERT_EQ(y.shape(), shape);
  const float* yp = y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t k = (n * C + c) * inner + i;
        double want = (xv[k] - mv[c]) / std::sqrt(static_cast<double>(vv[c]) + eps) * sv[c] + bv[c];
        ASSERT_NEAR(yp[k], want, 1e-5 * std::max(1.0, std::abs(want))) << "n " << n << " c " << c << " i " << i;
      }
}

TEST(BatchNormalization, VectorPlanesMatchDoubleReference) {
  ThreadPool pool(3);
  check_batchnorm({2, 5, 7, 9}, nullptr);    // small, odd plane of 63
  check_batchnorm({2, 5, 7, 9}, &pool);      // below the threading threshold
  check_batchnorm({2, 7, 61, 83}, &pool);    // planes of 5063: task blocks start mid-plane
  check_batchnorm({1, 3, 150, 150}, &pool);  // few large planes split over the pool
  check_batchnorm({3, 37, 5, 7, 3}, &pool);  // rank 5, many small planes
  check_batchnorm({300, 131}, &pool);        // rank 2: one element per channel and row
  check_batchnorm({4, 3}, nullptr);
}

}  // namespace onyx::test

namespace onyx::test {
namespace {

// Onyx's fused Add + LayerNormalization (the optimizer's SkipLayerNormalization) where one
// addend repeats over rows, as position embeddings over the batch, or over the last axis.
TEST(OnyxSkipLayerNorm, BroadcastRowsAndElementsMatchTheUnfusedForm) {
  auto node = make_node("SkipLayerNormalization", {"x", "s", "g", "b"}, {"y"}, {{"epsilon", attr_float(0)}},
                        "com.onyx");
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 9}, {2, 2, 2});
  Tensor g = Tensor::from_vector<float>({1, 2}, {2}), b = Tensor::from_vector<float>({0, 1}, {2});
  // Rows of x + [[0, 1], [3, 0]]: [1, 3], [6, 4], [5, 7], [10, 9] -> +-1 each, then * g + b.
  Tensor skip = Tensor::from_vector<float>({0, 1, 3, 0}, {1, 2, 2});
  Tensor rows = run_op(node, {x, skip, g, b})[0];
  EXPECT_EQ(rows.shape(), (Shape{2, 2, 2}));
  expect_near(rows, {-1, 3, 1, -1, -1, 3, 1, -1});
  // The skip first: [1, 2, 2] + [2, 2, 2] broadcasts the other way round.
  expect_near(run_op(node, {skip, x, g, b})[0], {-1, 3, 1, -1, -1, 3, 1, -1});
  // A skip of one column repeats along the normalized axis: [1, 2] + 1, ... -> each row [-1, 1].
  Tensor col = run_op(node, {x, Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2, 1}), g, b})[0];
  expect_near(col, {-1, 3, -1, 3, -1, 3, -1, 3});
}

}  // namespace
}  // namespace onyx::test
