// LinearClassifier, LinearRegressor, SVMClassifier, SVMRegressor (ai.onnx.ml).
// The expected values are small hand-computable cases; where the layout or a
// rounding choice is ONNX Runtime's (binary score columns, PROBIT), the
// numbers are the ones ONNX Runtime 1.31 gives for the same node.
#include <cmath>
#include <functional>

#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kMl = "ai.onnx.ml";

Attribute attr_strings(std::vector<std::string> v) {
  Attribute a;
  a.type = AttrType::Strings;
  a.strings = std::move(v);
  return a;
}

using Attrs = std::map<std::string, Attribute>;

std::vector<Tensor> classify(const std::string& op, const Attrs& attrs, const Tensor& x) {
  return run_op(make_node(op, {"x"}, {"y", "z"}, attrs, kMl), {x}, 1);
}
std::vector<Tensor> regress(const std::string& op, const Attrs& attrs, const Tensor& x) {
  return run_op(make_node(op, {"x"}, {"y"}, attrs, kMl), {x}, 1);
}

// The call fails with an onyx::Error whose message contains `needle`.
void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

float logistic(float v) { return 1.0f / (1.0f + std::exp(-v)); }

// ---------------------------------------------------------------- LinearClassifier

// One row of coefficients, two labels: s = 0.5 x0 - 0.25 x1 + 0.1 is the
// second class's score, and Z is [1 - s, s] (after LOGISTIC when given).
TEST(MlLinearSvm, LinearClassifierBinarySingleScore) {
  Tensor x = Tensor::from_vector<float>({1, 2, -1, 0.5f, 3, -2}, {3, 2});  // s = 0.1, -0.525, 2.1
  Attrs a = {{"coefficients", attr_floats({0.5f, -0.25f})},
             {"intercepts", attr_floats({0.1f})},
             {"classlabels_strings", attr_strings({"no", "yes"})}};
  for (const char* pt : {"NONE", "SOFTMAX", "SOFTMAX_ZERO"}) {
    a["post_transform"] = attr_string(pt);
    auto out = classify("LinearClassifier", a, x);
    EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"yes", "no", "yes"})) << pt;
    EXPECT_EQ(out[1].shape(), (Shape{3, 2}));
    expect_near(out[1], {0.9f, 0.1f, 1.525f, -0.525f, -1.1f, 2.1f});
  }
  a["post_transform"] = attr_string("LOGISTIC");
  auto out = classify("LinearClassifier", a, x);
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"yes", "no", "yes"}));
  expect_near(out[1], {0.47502083f, 0.52497917f, 0.62831616f, 0.37168384f, 0.10909682f, 0.89090318f});
  // A score of exactly 0 is not > 0: the first label.
  auto tie = classify("LinearClassifier", a, Tensor::from_vector<float>({-0.2f, 0}, {1, 2}));
  EXPECT_EQ(to_vector<std::string>(tie[0]), (std::vector<std::string>{"no"}));
  expect_near(tie[1], {0.5f, 0.5f});
}

// Three classes, W = [[1, 0], [0, 1], [-1, -1]], b = [0, 0.5, 0].
TEST(MlLinearSvm, LinearClassifierThreeClassesEveryTransform) {
  Tensor x = Tensor::from_vector<float>({1, 2, 0, 0, -1, -1, 0.5f, 0}, {4, 2});
  Attrs a = {{"coefficients", attr_floats({1, 0, 0, 1, -1, -1})},
             {"intercepts", attr_floats({0, 0.5f, 0})},
             {"classlabels_ints", attr_ints({7, 9, 11})}};
  // Raw scores [1, 2.5, -3], [0, 0.5, 0], [-1, -0.5, 2], [0.5, 0.5, -0.5]: the
  // last row ties, and the first of the tied classes wins.
  const std::vector<int64_t> labels = {9, 9, 11, 7};
  const std::vector<std::pair<const char*, std::vector<float>>> cases = {
      {"NONE", {1, 2.5f, -3, 0, 0.5f, 0, -1, -0.5f, 2, 0.5f, 0.5f, -0.5f}},
      {"LOGISTIC", {logistic(1), logistic(2.5f), logistic(-3), 0.5f, logistic(0.5f), 0.5f, logistic(-1),
                    logistic(-0.5f), logistic(2), logistic(0.5f), logistic(0.5f), logistic(-0.5f)}},
      {"SOFTMAX", {0.18181802f, 0.81485182f, 0.00333011f, 0.27406862f, 0.45186275f, 0.27406862f, 0.04398648f,
                   0.07252145f, 0.88349205f, 0.42231882f, 0.42231882f, 0.15536241f}},
      // Zeros stay zero and out of the sum: [0, 0.5, 0] -> [0, 1, 0].
      {"SOFTMAX_ZERO", {0.18181802f, 0.81485182f, 0.00333011f, 0, 1, 0, 0.04398648f, 0.07252145f, 0.88349205f,
                        0.42231882f, 0.42231882f, 0.15536241f}},
  };
  for (const auto& [pt, z] : cases) {
    SCOPED_TRACE(pt);
    a["post_transform"] = attr_string(pt);
    auto out = classify("LinearClassifier", a, x);
    EXPECT_EQ(to_vector<int64_t>(out[0]), labels);
    EXPECT_EQ(out[1].shape(), (Shape{4, 3}));
    expect_near(out[1], z);
  }
  // PROBIT of [0.2, 0.8, -0.5]: ONNX Runtime's approximate probit, NaN outside [0, 1].
  a["post_transform"] = attr_string("PROBIT");
  auto out = classify("LinearClassifier", a, Tensor::from_vector<float>({0.2f, 0.3f}, {1, 2}));
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{9}));
  EXPECT_NEAR(out[1].float_at(0), -0.8417561f, 1e-6f);
  EXPECT_NEAR(out[1].float_at(1), 0.8417561f, 1e-6f);
  EXPECT_TRUE(std::isnan(out[1].float_at(2)));
}

// X may be int64 or 1-D (one row); `multi_class` changes nothing.
TEST(MlLinearSvm, LinearClassifierIntAndOneDimensionalInput) {
  Attrs a = {{"coefficients", attr_floats({1, 0, 0, 1, -1, -1})},
             {"intercepts", attr_floats({0, 0.5f, 0})},
             {"classlabels_ints", attr_ints({7, 9, 11})},
             {"multi_class", attr_int(1)}};
  auto out = classify("LinearClassifier", a, Tensor::from_vector<int64_t>({-1, -1}, {2}));
  EXPECT_EQ(out[0].shape(), (Shape{1}));
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{11}));
  EXPECT_EQ(out[1].shape(), (Shape{1, 3}));
  expect_near(out[1], {-1, -0.5f, 2});
  auto out32 = classify("LinearClassifier", a, Tensor::from_vector<int32_t>({1, 2}, {1, 2}));
  expect_near(out32[1], {1, 2.5f, -3});
  auto empty = classify("LinearClassifier", a, Tensor::from_vector<double>({}, {0, 2}));
  EXPECT_EQ(empty[0].shape(), (Shape{0}));
  EXPECT_EQ(empty[1].shape(), (Shape{0, 3}));
}

TEST(MlLinearSvm, LinearClassifierErrors) {
  Attrs a = {{"coefficients", attr_floats({1, 0, 0, 1, -1, -1})},
             {"intercepts", attr_floats({0, 0.5f, 0})},
             {"classlabels_ints", attr_ints({7, 9, 11})}};
  expect_error([&] { classify("LinearClassifier", a, Tensor::from_vector<float>({1, 2, 3}, {1, 3})); },
               "X has 3 features, the model 2");
  Attrs no_icpt = a;
  no_icpt.erase("intercepts");
  expect_error([&] { classify("LinearClassifier", no_icpt, Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4})); },
               "6 coefficients are not a whole number of rows of 4");
  expect_error([&] { classify("LinearClassifier", a, Tensor::from_vector<std::string>({"a", "b"}, {1, 2})); },
               "X must be float, double, int64 or int32");
  expect_error([&] { classify("LinearClassifier", a, Tensor::from_vector<float>({1, 2}, {1, 1, 2})); },
               "X must be [N, F] or [F]");
  Attrs two_labels = a;
  two_labels["classlabels_ints"] = attr_ints({7, 9});
  expect_error([&] { classify("LinearClassifier", two_labels, Tensor::from_vector<float>({1, 2}, {1, 2})); },
               "2 class labels for 3 rows");
  Attrs bad_icpt = a;
  bad_icpt["intercepts"] = attr_floats({0, 1, 2, 3});
  expect_error([&] { classify("LinearClassifier", bad_icpt, Tensor::from_vector<float>({1, 2}, {1, 2})); },
               "do not split into 4 rows");
  Attrs bad_pt = a;
  bad_pt["post_transform"] = attr_string("SIGMOID");
  expect_error([&] { classify("LinearClassifier", bad_pt, Tensor::from_vector<float>({1, 2}, {1, 2})); },
               "post_transform 'SIGMOID'");
}

// ---------------------------------------------------------------- LinearRegressor

TEST(MlLinearSvm, LinearRegressorTargetsAndTransforms) {
  Tensor x = Tensor::from_vector<float>({1, 2, -1, 0.5f, 3, -2}, {3, 2});
  // Two targets: 0.5 x0 - 0.25 x1 + 0.1 and x0 + 2 x1 - 1.
  auto y = regress("LinearRegressor",
                   {{"coefficients", attr_floats({0.5f, -0.25f, 1, 2})},
                    {"intercepts", attr_floats({0.1f, -1})},
                    {"targets", attr_int(2)}},
                   x);
  EXPECT_EQ(y[0].shape(), (Shape{3, 2}));
  expect_near(y[0], {0.1f, 4, -0.525f, -1, 2.1f, -2});
  // Three targets [x0, x1, 1] under SOFTMAX.
  auto sm = regress("LinearRegressor",
                    {{"coefficients", attr_floats({1, 0, 0, 1, 0, 0})},
                     {"intercepts", attr_floats({0, 0, 1})},
                     {"targets", attr_int(3)},
                     {"post_transform", attr_string("SOFTMAX")}},
                    x);
  expect_near(sm[0], {0.21194157f, 0.57611692f, 0.21194157f, 0.07769558f, 0.34820744f, 0.57409704f, 0.87560058f,
                      0.00589975f, 0.11849965f});
  // One target: ONNX Runtime leaves a lone score alone under LOGISTIC (and
  // SOFTMAX), but applies PROBIT.
  Attrs one = {{"coefficients", attr_floats({0.5f, -0.25f})}, {"intercepts", attr_floats({0.1f})}};
  one["post_transform"] = attr_string("LOGISTIC");
  expect_near(regress("LinearRegressor", one, x)[0], {0.1f, -0.525f, 2.1f});
  one["post_transform"] = attr_string("PROBIT");
  auto pr = regress("LinearRegressor", one, Tensor::from_vector<float>({0.6f, 0.4f}, {2}));  // s = 0.3
  EXPECT_EQ(pr[0].shape(), (Shape{1, 1}));
  EXPECT_NEAR(pr[0].float_at(0), -0.5244459f, 1e-6f);
}

TEST(MlLinearSvm, LinearRegressorErrors) {
  Attrs a = {{"coefficients", attr_floats({0.5f, -0.25f, 1, 2})}, {"targets", attr_int(2)}};
  Attrs icpt = a;
  icpt["intercepts"] = attr_floats({0.1f});
  expect_error([&] { regress("LinearRegressor", icpt, Tensor::from_vector<float>({1, 2}, {1, 2})); },
               "1 intercepts for 2 targets");
  expect_error([&] { regress("LinearRegressor", a, Tensor::from_vector<float>({1, 2, 3}, {1, 3})); },
               "X has 3 features, the coefficients 2 per target");
  Attrs odd = a;
  odd["targets"] = attr_int(3);
  expect_error([&] { regress("LinearRegressor", odd, Tensor::from_vector<float>({1, 2}, {1, 2})); },
               "4 coefficients are not 3 (targets)");
}

}  // namespace
}  // namespace onyx::test
