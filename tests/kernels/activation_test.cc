#include <algorithm>
#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor F(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, s); }

TEST(Activation, ReluSigmoidTanh) {
  auto out = run_op(make_node("Relu", {"x"}, {"y"}), {F({-1, 0, 2}, {3})});
  expect_near(out[0], {0, 0, 2});
  out = run_op(make_node("Sigmoid", {"x"}, {"y"}), {F({0, 2, -2, -100}, {4})});
  expect_near(out[0], {0.5f, 0.8807970779f, 0.1192029220f, 0});
  out = run_op(make_node("Tanh", {"x"}, {"y"}), {F({0, 0.1f, -1, 20}, {4})});
  expect_near(out[0], {0, 0.0996679946f, -0.7615941559f, 1});
  out = run_op(make_node("Relu", {"x"}, {"y"}), {Tensor::from_vector<int32_t>({-3, 4}, {2})});
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{0, 4}));
}

// The vectorized float paths, split across threads: every element (tails of
// each chunk and of the whole tensor included) against the libm formula,
// within ~4 ulp.
TEST(Activation, SigmoidTanhLongInputsMatchLibm) {
  const int64_t n = 100003;  // several chunks of 8192 and a ragged tail
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -60.0f + 120.0f * static_cast<float>(i) / n;
  x[17] = 1e-6f, x[18] = -3e-4f, x[19] = 0.3f, x[20] = -100.0f;
  ThreadPool three(3);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
    auto sig = run_op(make_node("Sigmoid", {"x"}, {"y"}), {F(x, {n})}, 13, pool);
    auto th = run_op(make_node("Tanh", {"x"}, {"y"}), {F(x, {n})}, 13, pool);
    for (int64_t i = 0; i < n; ++i) {
      double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))), t = std::tanh(static_cast<double>(x[i]));
      ASSERT_NEAR(sig[0].float_at(i), s, 5e-7 * s + 1e-30) << "Sigmoid at x = " << x[i];
      ASSERT_NEAR(th[0].float_at(i), t, 5e-7 * std::abs(t) + 1e-30) << "Tanh at x = " << x[i];
    }
  }
}

// Relu over a pool (chunks of 4096, a ragged tail), float and int32: every element.
TEST(Activation, ReluLongInputsOnAPool) {
  const int64_t n = 70001;
  std::vector<float> x(n);
  std::vector<int32_t> xi(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 37) % 201 - 100), xi[i] = static_cast<int32_t>(x[i]);
  ThreadPool three(3);
  auto yf = run_op(make_node("Relu", {"x"}, {"y"}), {F(x, {n})}, 14, &three);
  auto yi = run_op(make_node("Relu", {"x"}, {"y"}), {Tensor::from_vector<int32_t>(xi, {n})}, 14, &three);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(yf[0].data<float>()[i], std::max(x[i], 0.0f)) << i;
    ASSERT_EQ(yi[0].data<int32_t>()[i], std::max(xi[i], 0)) << i;
  }
}

// Exp and Erf run vectorized routines for float: every element of a long
// input against libm (Exp within a few ulp, Erf within 3e-7 absolute and,
// near 0, 1e-6 relative).
TEST(Activation, ExpErfLongInputsMatchLibm) {
  const int64_t n = 50003;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -20.0f + 40.0f * static_cast<float>(i) / n;
  x[5] = 1e-5f, x[6] = -3e-3f, x[7] = 0.49f, x[8] = 0.51f;  // tiny: relative accuracy matters
  ThreadPool three(3);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
    auto ex = run_op(make_node("Exp", {"x"}, {"y"}), {F(x, {n})}, 13, pool);
    auto er = run_op(make_node("Erf", {"x"}, {"y"}), {F(x, {n})}, 13, pool);
    for (int64_t i = 0; i < n; ++i) {
      double e = std::exp(static_cast<double>(x[i])), f = std::erf(static_cast<double>(x[i]));
      ASSERT_NEAR(ex[0].float_at(i), e, 5e-7 * e) << "Exp at x = " << x[i];
      ASSERT_NEAR(er[0].float_at(i), f, std::min(3e-7, 1e-6 * std::abs(f))) << "Erf at x = " << x[i];
    }
  }
}

// Elu, Selu and Celu on float (Elu and Selu vectorized, split across threads):
// every element against libm's expm1, relatively close also near 0, where
// exp(x) - 1 would cancel; NaN stays NaN.
TEST(Activation, EluFamilyLongInputsMatchLibm) {
  const int64_t n = 40003;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -30.0f + 40.0f * static_cast<float>(i) / n;
  x[3] = -1e-7f, x[4] = -3e-4f, x[5] = -0.499f, x[6] = -0.501f, x[7] = 0.0f, x[8] = -0.0f;
  const float alpha = 0.7f, gamma = 1.3f;
  ThreadPool three(3);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
    auto elu = run_op(make_node("Elu", {"x"}, {"y"}, {{"alpha", attr_float(alpha)}}), {F(x, {n})}, 13, pool);
    auto selu = run_op(make_node("Selu", {"x"}, {"y"}, {{"alpha", attr_float(alpha)}, {"gamma", attr_float(gamma)}}),
                       {F(x, {n})}, 13, pool);
    auto celu = run_op(make_node("Celu", {"x"}, {"y"}, {{"alpha", attr_float(alpha)}}), {F(x, {n})}, 13, pool);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i], e = v > 0 ? v : alpha * std::expm1(v), c = v > 0 ? v : alpha * std::expm1(v / alpha);
      ASSERT_NEAR(elu[0].float_at(i), e, 5e-7 * std::abs(e)) << "Elu at x = " << x[i];
      ASSERT_NEAR(selu[0].float_at(i), gamma * e, 6e-7 * std::abs(gamma * e)) << "Selu at x = " << x[i];
      ASSERT_NEAR(celu[0].float_at(i), c, 5e-7 * std::abs(c)) << "Celu at x = " << x[i];
    }
  }
  auto nan = run_op(make_node("Elu", {"x"}, {"y"}), {F({std::nanf(""), -2.0f}, {2})});
  EXPECT_TRUE(std::isnan(nan[0].float_at(0)));
  EXPECT_NEAR(nan[0].float_at(1), std::expm1(-2.0), 1e-6);
}

// Log, Softplus, Mish, Floor, Ceil and Round run vectorized routines for
// float: every element of a long input against libm (Log within ~2 ulp,
// Softplus and Mish within 1e-6 relative), and the special values.
TEST(Activation, LogSoftplusMishRoundingLongInputsMatchLibm) {
  const int64_t n = 30011;
  std::vector<float> x(n), pos(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = -40.0f + 80.0f * static_cast<float>(i) / n;
    pos[i] = std::ldexp(1.0f + static_cast<float>(i % 977) / 977.0f, static_cast<int>(i % 250) - 140);  // subnormals too
  }
  x[1] = 0.5f, x[2] = 1.5f, x[3] = 2.5f, x[4] = -0.5f, x[5] = -2.5f, x[6] = 1e-7f, x[7] = -1e-7f, x[8] = 100.0f;
  ThreadPool three(3);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
    auto run = [&](const char* op, const std::vector<float>& in) {
      return run_op(make_node(op, {"x"}, {"y"}), {F(in, {n})}, 18, pool)[0];
    };
    Tensor lg = run("Log", pos), sp = run("Softplus", x), mi = run("Mish", x);
    Tensor fl = run("Floor", x), ce = run("Ceil", x), ro = run("Round", x);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i], l = std::log(static_cast<double>(pos[i]));
      const double s = std::max(v, 0.0) + std::log1p(std::exp(-std::abs(v))), m = v * std::tanh(s);
      ASSERT_NEAR(lg.float_at(i), l, 2.5e-7 * std::abs(l) + 1e-7) << "Log at x = " << pos[i];
      ASSERT_NEAR(sp.float_at(i), s, 1e-6 * s + 1e-37) << "Softplus at x = " << x[i];
      ASSERT_NEAR(mi.float_at(i), m, 1e-6 * std::abs(m) + 1e-37) << "Mish at x = " << x[i];
      ASSERT_EQ(fl.float_at(i), std::floor(x[i])) << "Floor at x = " << x[i];
      ASSERT_EQ(ce.float_at(i), std::ceil(x[i])) << "Ceil at x = " << x[i];
      ASSERT_EQ(ro.float_at(i), std::nearbyint(x[i])) << "Round at x = " << x[i];
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  auto special = run_op(make_node("Log", {"x"}, {"y"}), {F({0.0f, -1.0f, inf, std::nanf(""), 1.0f}, {5})})[0];
  EXPECT_EQ(special.float_at(0), -inf);
  EXPECT_TRUE(std::isnan(special.float_at(1)));
  EXPECT_EQ(special.float_at(2), inf);
  EXPECT_TRUE(std::isnan(special.float_at(3)));
  EXPECT_EQ(special.float_at(4), 0.0f);
  auto soft = run_op(make_node("Softplus", {"x"}, {"y"}), {F({std::nanf(""), inf, -inf}, {3})})[0];
  EXPECT_TRUE(std::isnan(soft.float_at(0)));
  EXPECT_EQ(soft.float_at(1), inf);
  EXPECT_EQ(soft.float_at(2), 0.0f);
}

// Sin, Cos and Atan run vectorized routines for float: every element of a long
// input against libm within 2.5e-7 relative, also next to multiples of pi / 2
// (where the range reduction must not cancel) and beyond |x| = 1e5; special values.
TEST(Activation, SinCosAtanLongInputsMatchLibm) {
  const int64_t n = 40009;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -700.0f + 1400.0f * static_cast<float>(i) / n;
  for (int64_t k = 0; k < 200; ++k) x[k] = static_cast<float>(1.5707963267948966 * static_cast<double>(k - 100));
  x[300] = 1e-30f, x[301] = -2e-8f, x[302] = 3e5f, x[303] = -7.5e7f, x[304] = 1e38f;
  const float inf = std::numeric_limits<float>::infinity();
  ThreadPool three(3);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
    auto run = [&](const char* op) { return run_op(make_node(op, {"x"}, {"y"}), {F(x, {n})}, 13, pool)[0]; };
    Tensor sn = run("Sin"), cs = run("Cos"), at = run("Atan");
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i], s = std::sin(v), c = std::cos(v), a = std::atan(v);
      ASSERT_NEAR(sn.float_at(i), s, 2.5e-7 * std::abs(s) + 1e-37) << "Sin at x = " << x[i];
      ASSERT_NEAR(cs.float_at(i), c, 2.5e-7 * std::abs(c) + 1e-37) << "Cos at x = " << x[i];
      ASSERT_NEAR(at.float_at(i), a, 2.5e-7 * std::abs(a) + 1e-37) << "Atan at x = " << x[i];
    }
  }
  std::vector<float> special = {inf, -inf, std::nanf(""), 0.0f, -0.0f};
  auto run = [&](const char* op) { return run_op(make_node(op, {"x"}, {"y"}), {F(special, {5})}, 13)[0]; };
  Tensor sn = run("Sin"), cs = run("Cos"), at = run("Atan");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(sn.float_at(i)) && std::isnan(cs.float_at(i))) << i;
  EXPECT_FLOAT_EQ(at.float_at(0), 1.5707963f);
  EXPECT_FLOAT_EQ(at.float_at(1), -1.5707963f);
  EXPECT_TRUE(std::isnan(at.float_at(2)));
  EXPECT_EQ(sn.float_at(3), 0.0f);
  EXPECT_EQ(cs.float_at(4), 1.0f);
  EXPECT_TRUE(std::signbit(sn.float_at(4)) && std::signbit(at.float_at(4)));
}

// HardSigmoid and HardSwish, vectorized for float: a long input (ragged tail)
// against the formula, NaN kept.
TEST(Activation, HardSigmoidHardSwishLongInputs) {
  const int64_t n = 20011;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -8.0f + 16.0f * static_cast<float>(i) / n;
  x[0] = std::nanf("");
  auto hsig = run_op(make_node("HardSigmoid", {"x"}, {"y"}, {{"alpha", attr_float(0.3f)}, {"beta", attr_float(0.4f)}}),
                     {F(x, {n})})[0];
  auto hswish = run_op(make_node("HardSwish", {"x"}, {"y"}), {F(x, {n})}, 14)[0];
  EXPECT_TRUE(std::isnan(hsig.float_at(0)) && std::isnan(hswish.float_at(0)));
  for (int64_t i = 1; i < n; ++i) {
    const double v = x[i], s = std::clamp(0.3 * v + 0.4, 0.0, 1.0), w = v * std::clamp(v / 6 + 0.5, 0.0, 1.0);
    ASSERT_NEAR(hsig.float_at(i), s, 1e-6) << "HardSigmoid at x = " << x[i];
    ASSERT_NEAR(hswish.float_at(i), w, 1e-6 * (1 + std::abs(w))) << "HardSwish at x = " << x[i];
  }
}

TEST(Activation, ParametrizedOps) {
  auto out = run_op(make_node("LeakyRelu", {"x"}, {"y"}, {{"alpha", attr_float(0.1f)}}), {F({-2, 3}, {2})});
  expect_near(out[0], {-0.2f, 3});
  out = run_op(make_node("Elu", {"x"}, {"y"}), {F({-1, 1}, {2})});
  expect_near(out[0], {std::exp(-1.0f) - 1, 1});
  out = run_op(make_node("HardSigmoid", {"x"}, {"y"}), {F({-5, 0, 1, 5}, {4})});
  expect_near(out[0], {0, 0.5f, 0.7f, 1});
  out = run_op(make_node("HardSwish", {"x"}, {"y"}), {F({-4, 1, 4}, {3})});
  expect_near(out[0], {0, 1 * (1.0f / 6 + 0.5f), 4});
  out = run_op(make_node("Shrink", {"x"}, {"y"}, {{"lambd", attr_float(1.5f)}, {"bias", attr_float(1.0f)}}),
               {F({-2, -1, 0, 1, 2}, {5})});
  expect_near(out[0], {-1, 0, 0, 0, 1});
  out = run_op(make_node("Softplus", {"x"}, {"y"}), {F({0, 100}, {2})});
  expect_near(out[0], {std::log(2.0f), 100});
}

// The experimental activations of opsets 1-9.
TEST(Activation, ExperimentalOps) {
  auto x = F({-2, 0, 0.5f, 3}, {4});
  auto out = run_op(make_node("Affine", {"x"}, {"y"}, {{"alpha", attr_float(2)}, {"beta", attr_float(1)}}), {x}, 7);
  expect_near(out[0], {-3, 1, 2, 7});
  out = run_op(make_node("Scale", {"x"}, {"y"}, {{"scale", attr_float(-0.5f)}}), {x}, 7);
  expect_near(out[0], {1, 0, -0.25f, -1.5f});
  out = run_op(make_node("ScaledTanh", {"x"}, {"y"}, {{"alpha", attr_float(2)}, {"beta", attr_float(0.5f)}}), {x}, 7);
  expect_near(out[0], {2 * std::tanh(-1.0f), 0, 2 * std::tanh(0.25f), 2 * std::tanh(1.5f)});
  out = run_op(make_node("ParametricSoftplus", {"x"}, {"y"}, {{"alpha", attr_float(2)}, {"beta", attr_float(0.5f)}}),
               {x}, 7);
  expect_near(out[0], {2 * std::log1p(std::exp(-1.0f)), 2 * std::log(2.0f), 2 * std::log1p(std::exp(0.25f)),
                       2 * std::log1p(std::exp(1.5f))});
  out = run_op(make_node("ThresholdedRelu", {"x"}, {"y"}, {{"alpha", attr_float(0.5f)}}), {x}, 7);
  expect_near(out[0], {0, 0, 0, 3});
  EXPECT_THROW(run_op(make_node("ScaledTanh", {"x"}, {"y"}, {{"alpha", attr_float(2)}}), {x}, 7), Error);
}

TEST(Activation, ClipAttributesAndInputs) {
  Node legacy = make_node("Clip", {"x"}, {"y"}, {{"min", attr_float(-1)}, {"max", attr_float(1)}});
  auto out = run_op(legacy, {F({-3, 0.5f, 3}, {3})}, 6);
  expect_near(out[0], {-1, 0.5f, 1});
  out = run_op(make_node("Clip", {"x", "", "max"}, {"y"}), {F({-3, 0.5f, 3}, {3}), Tensor(), F({0}, {})});
  expect_near(out[0], {-3, 0, 0});
  out = run_op(make_node("Clip", {"x", "min"}, {"y"}),
               {Tensor::from_vector<int8_t>({-100, 5}, {2}), Tensor::from_vector<int8_t>({-10}, {})});
  EXPECT_EQ(to_vector<int8_t>(out[0]), (std::vector<int8_t>{-10, 5}));
  EXPECT_THROW(run_op(make_node("Clip", {"x", "min"}, {"y"}), {F({1, 2}, {2}), F({0, 1}, {2})}), onyx::Error);
}

TEST(Activation, PReluBroadcast) {
  auto out = run_op(make_node("PRelu", {"x", "s"}, {"y"}), {F({-1, -1, 2, -4}, {2, 2}), F({0.5f, 0.25f}, {2})});
  expect_near(out[0], {-0.5f, -0.25f, 2, -1});
  // slope must broadcast to X, not the other way round
  EXPECT_THROW(run_op(make_node("PRelu", {"x", "s"}, {"y"}), {F({-1, 2}, {2}), F({1, 2, 3, 4}, {2, 2})}),
               onyx::Error);
}

TEST(Activation, Gelu) {
  auto out = run_op(make_node("Gelu", {"x"}, {"y"}), {F({-1, 0, 1, 2}, {4})});
  expect_near(out[0], {-0.1586552539f, 0, 0.8413447461f, 1.9544997361f});
  out = run_op(make_node("Gelu", {"x"}, {"y"}, {{"approximate", attr_string("tanh")}}), {F({1}, {1})});
  expect_near(out[0], {0.8411919906f}, 1e-5f);
}

TEST(Activation, SwishAndSwiGLU) {
  auto x = Tensor::from_vector<float>({0, 1}, {2});
  auto out = run_op(make_node("Swish", {"x"}, {"y"}), {x}, 24);
  expect_near(out[0], {0, 0.7310586f});
  out = run_op(make_node("Swish", {"x"}, {"y"}, {{"alpha", attr_float(2.0f)}}), {x}, 24);
  expect_near(out[0], {0, 0.8807971f});
  out = run_op(make_node("SwiGLU", {"a", "b"}, {"y"}), {x, Tensor::from_vector<float>({5, 2}, {2})}, 28);
  expect_near(out[0], {0, 1.4621172f});
  EXPECT_THROW(run_op(make_node("SwiGLU", {"a", "b"}, {"y"}), {x, Tensor::from_vector<float>({5}, {1})}, 28), Error);
}

}  // namespace
}  // namespace onyx::test
