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

// ---------------------------------------------------------------- SVMClassifier

// Three classes with one support vector each, e0, e1, e2, and a linear
// kernel; the coefficients make pair (i, j) score x_i - x_j + rho_ij.
Attrs three_class_svm() {
  return {{"kernel_type", attr_string("LINEAR")},
          {"kernel_params", attr_floats({0, 0, 0})},
          {"support_vectors", attr_floats({1, 0, 0, 0, 1, 0, 0, 0, 1})},
          {"vectors_per_class", attr_ints({1, 1, 1})},
          {"classlabels_strings", attr_strings({"a", "b", "c"})},
          // row 0 weighs (class 0 in pair 0-1, class 1 in 0-1, class 2 in 0-2); row 1 (0 in 0-2, 1 in 1-2, 2 in 1-2)
          {"coefficients", attr_floats({1, -1, -1, 1, 1, -1})},
          {"rho", attr_floats({0, -2, 0.5f})}};
}

TEST(MlLinearSvm, SvmClassifierOneVsOneVoting) {
  Tensor x = Tensor::from_vector<float>({3, 2, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1}, {4, 3});
  auto out = classify("SVMClassifier", three_class_svm(), x);
  // Pair scores (0-1, 0-2, 1-2) and their votes:
  // row 0 [1, 0, 1.5]: a, c (0 is not > 0), b -> one vote each, the first (a) wins;
  // row 1 [0, -2, 0.5]: b, c, b -> b; row 2 [1, -1, 0.5]: a, c, b -> a; row 3 [-1, -3, 0.5]: b, c, b -> b.
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"a", "b", "a", "b"}));
  EXPECT_EQ(out[1].shape(), (Shape{4, 3}));
  expect_near(out[1], {1, 0, 1.5f, 0, -2, 0.5f, 1, -1, 0.5f, -1, -3, 0.5f});
  // post_transform applies to the pair scores; the labels still come from the votes.
  Attrs sm = three_class_svm();
  sm["post_transform"] = attr_string("SOFTMAX");
  auto s = classify("SVMClassifier", sm, x);
  EXPECT_EQ(to_vector<std::string>(s[0]), (std::vector<std::string>{"a", "b", "a", "b"}));
  expect_near(s[1], {0.33149895f, 0.12195165f, 0.54654938f, 0.35918811f, 0.04861083f, 0.59220105f, 0.57409698f,
                     0.07769558f, 0.34820741f, 0.17803021f, 0.02409377f, 0.79787600f});
}

// Many rows on a thread pool (the blocked and parallel paths) give what
// one thread gives, row for row; no rows give empty outputs.
TEST(MlLinearSvm, SvmClassifierManyRowsOnAPoolAndNoRows) {
  Attrs a = three_class_svm();
  a["kernel_type"] = attr_string("RBF");
  a["kernel_params"] = attr_floats({0.3f, 0, 0});
  a["prob_a"] = attr_floats({-1, -2, -1.5f});
  a["prob_b"] = attr_floats({0.1f, -0.2f, 0.3f});
  Tensor x = pattern({90000, 3}, 5);  // more rows than one block of 2^18 kernel values
  auto node = make_node("SVMClassifier", {"x"}, {"y", "z"}, a, kMl);
  ThreadPool pool(3);
  auto one = run_op(node, {x}, 1), many = run_op(node, {x}, 1, &pool);
  EXPECT_EQ(to_vector<std::string>(one[0]), to_vector<std::string>(many[0]));
  EXPECT_EQ(to_vector<float>(one[1]), to_vector<float>(many[1]));
  auto none = run_op(node, {Tensor::from_vector<float>({}, {0, 3})}, 1);
  EXPECT_EQ(none[0].shape(), (Shape{0}));
  EXPECT_EQ(none[1].shape(), (Shape{0, 3}));
}

// With prob_a / prob_b: Platt-scaled pair probabilities coupled into class
// probabilities (values from ONNX Runtime); the label is still the vote.
TEST(MlLinearSvm, SvmClassifierProbabilities) {
  Attrs a = three_class_svm();
  a["prob_a"] = attr_floats({-1, -2, -1.5f});
  a["prob_b"] = attr_floats({0.1f, -0.2f, 0.3f});
  Tensor x = Tensor::from_vector<float>({3, 2, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1}, {4, 3});
  auto out = classify("SVMClassifier", a, x);
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"a", "b", "a", "b"}));
  EXPECT_EQ(out[1].shape(), (Shape{4, 3}));
  expect_near(out[1], {0.50804645f, 0.30868095f, 0.18327244f, 0.13372281f, 0.45645177f, 0.40982547f, 0.22915012f,
                       0.33109257f, 0.43975738f, 0.07372008f, 0.54528630f, 0.38099360f},
              2e-5f);
  // Row 2 is labelled a (a three-way tie of votes) though c is the most probable.
  for (int64_t r = 0; r < 4; ++r) {
    float sum = 0;
    for (int64_t c = 0; c < 3; ++c) sum += out[1].float_at(r * 3 + c);
    EXPECT_NEAR(sum, 1.0f, 1e-5f);
  }
}

// Two classes, RBF with gamma 1: s = exp(-|x|^2) - exp(-|x - (1, 1)|^2) > 0
// picks the first class. Without probabilities Z expands s per transform.
TEST(MlLinearSvm, SvmClassifierBinaryRbf) {
  Attrs a = {{"kernel_type", attr_string("RBF")},
             {"kernel_params", attr_floats({1, 0, 0})},
             {"support_vectors", attr_floats({0, 0, 1, 1})},
             {"vectors_per_class", attr_ints({1, 1})},
             {"classlabels_ints", attr_ints({7, 9})},
             {"coefficients", attr_floats({1, -1})},
             {"rho", attr_floats({0})}};
  Tensor x = Tensor::from_vector<float>({0, 0, 1, 1, 0.5f, 0.5f, 2, 0}, {4, 2});
  const float s0 = 1 - std::exp(-2.0f), s3 = std::exp(-4.0f) - std::exp(-2.0f);  // rows 0 and 3; row 1 is -s0, row 2 is 0
  const std::vector<int64_t> labels = {7, 9, 9, 9};                                   // 0 is not > 0: the second class
  auto none = classify("SVMClassifier", a, x);
  EXPECT_EQ(to_vector<int64_t>(none[0]), labels);
  EXPECT_EQ(none[1].shape(), (Shape{4, 2}));
  expect_near(none[1], {-s0, s0, s0, -s0, 0, 0, -s3, s3});
  a["post_transform"] = attr_string("LOGISTIC");
  expect_near(classify("SVMClassifier", a, x)[1], {logistic(-s0), logistic(s0), logistic(s0), logistic(-s0), 0.5f,
                                                   0.5f, logistic(-s3), logistic(s3)});
  a["post_transform"] = attr_string("SOFTMAX");
  expect_near(classify("SVMClassifier", a, x)[1], {1 - s0, s0, 1 + s0, -s0, 1, 0, 1 - s3, s3});
  a["post_transform"] = attr_string("PROBIT");
  auto pr = classify("SVMClassifier", a, x);
  EXPECT_EQ(to_vector<int64_t>(pr[0]), labels);
  EXPECT_NEAR(pr[1].float_at(0), 1.1017058f, 1e-5f);  // probit(s0), as ONNX Runtime
  // With probabilities: Z = [p, 1 - p] with p near Platt's 1 / (1 + exp(-3 s + 0.25)):
  // the pairwise coupling, run for two classes too, stops within 0.0025 of
  // it. The values are ONNX Runtime's, which couples the same way.
  a["post_transform"] = attr_string("NONE");
  a["prob_a"] = attr_floats({-3});
  a["prob_b"] = attr_floats({0.25f});
  auto p = classify("SVMClassifier", a, x);
  EXPECT_EQ(to_vector<int64_t>(p[0]), labels);
  expect_near(p[1], {0.91245562f, 0.08754446f, 0.05492269f, 0.94507730f, 0.43769291f, 0.56230712f, 0.35410145f,
                     0.64589852f});
  const float platt_s0 = 1 / (1 + std::exp(-3 * s0 + 0.25f));
  EXPECT_NEAR(p[1].float_at(0), platt_s0, 0.0025f);
  // post_transform then applies to the probabilities.
  a["post_transform"] = attr_string("LOGISTIC");
  expect_near(classify("SVMClassifier", a, x)[1], {0.71350241f, 0.52187216f, 0.51372725f, 0.72012413f, 0.60770917f,
                                                   0.63698620f, 0.58761179f, 0.65608561f});
}

// No support vectors: one linear row per class, rho[0] added to each.
TEST(MlLinearSvm, SvmClassifierLinearForm) {
  Tensor x = Tensor::from_vector<float>({1, 2, 0, 0, -1, 0.5f, 3, -2, 0.2f, 0.1f}, {5, 2});
  Attrs a = {{"classlabels_ints", attr_ints({7, 9, 11})},
             {"coefficients", attr_floats({1, 0, 0, 1, -1, -1})},
             {"rho", attr_floats({0.5f})}};
  auto three = classify("SVMClassifier", a, x);
  EXPECT_EQ(to_vector<int64_t>(three[0]), (std::vector<int64_t>{9, 7, 9, 7, 7}));
  expect_near(three[1], {1.5f, 2.5f, -2.5f, 0.5f, 0.5f, 0.5f, -0.5f, 1, 1, 3.5f, -1.5f, -0.5f, 0.7f, 0.6f, 0.2f});
  // Two classes, no probabilities: the second label once the best score is
  // > 0 (mixed-sign weights), else the first largest.
  Attrs two = {{"classlabels_ints", attr_ints({7, 9})},
               {"coefficients", attr_floats({1, -0.5f, -1, 0.5f})},
               {"rho", attr_floats({-1})}};
  auto mixed = classify("SVMClassifier", two, x);
  expect_near(mixed[1], {-1, -1, -1, -1, -2.25f, 0.25f, 3, -5, -0.85f, -1.15f});
  EXPECT_EQ(to_vector<int64_t>(mixed[0]), (std::vector<int64_t>{7, 7, 9, 9, 7}));
  // With weights all >= 0 the threshold is 0.5: [0.3, 0.2] -> 7, [0.9, 0.6] -> 9.
  two["coefficients"] = attr_floats({0.3f, 0, 0.2f, 0});
  two["rho"] = attr_floats({0});
  EXPECT_EQ(to_vector<int64_t>(classify("SVMClassifier", two, x)[0]), (std::vector<int64_t>{7, 7, 9, 9, 7}));
}

TEST(MlLinearSvm, SvmClassifierErrors) {
  Tensor x = Tensor::from_vector<float>({1, 0, 0}, {1, 3});
  Attrs rho = three_class_svm();
  rho["rho"] = attr_floats({0, 0});
  expect_error([&] { classify("SVMClassifier", rho, x); }, "rho (one per pair of classes) has 2 values, expected 3");
  Attrs coef = three_class_svm();
  coef["coefficients"] = attr_floats({1, 2, 3});
  expect_error([&] { classify("SVMClassifier", coef, x); }, "coefficients ((classes - 1) x support vectors)");
  Attrs vpc = three_class_svm();
  vpc["vectors_per_class"] = attr_ints({2, 1});
  expect_error([&] { classify("SVMClassifier", vpc, x); }, "vectors_per_class has 2 entries for 3 class labels");
  Attrs kp = three_class_svm();
  kp["kernel_params"] = attr_floats({1, 2});
  expect_error([&] { classify("SVMClassifier", kp, x); }, "kernel_params must be [gamma, coef0, degree]");
  Attrs kt = three_class_svm();
  kt["kernel_type"] = attr_string("rbf");
  expect_error([&] { classify("SVMClassifier", kt, x); }, "kernel_type 'rbf'");
  Attrs prob = three_class_svm();
  prob["prob_a"] = attr_floats({1, 2, 3});
  expect_error([&] { classify("SVMClassifier", prob, x); }, "prob_a has 3 values but prob_b 0");
  expect_error([&] { classify("SVMClassifier", three_class_svm(), Tensor::from_vector<float>({1, 0}, {1, 2})); },
               "X has 2 features, the model 3");
  Attrs lin = {{"classlabels_ints", attr_ints({7, 9})}, {"coefficients", attr_floats({1, 2, 3})}, {"rho", attr_floats({0})}};
  expect_error([&] { classify("SVMClassifier", lin, x); }, "one non-empty row per class");
}

// ---------------------------------------------------------------- SVMRegressor

// Support vectors (1, 0) and (0, 1) with coefficients 1 and -0.5, rho 0.1.
Attrs regression_svm(const char* kernel) {
  return {{"kernel_type", attr_string(kernel)},
          {"kernel_params", attr_floats({0.5f, 1, 3})},
          {"support_vectors", attr_floats({1, 0, 0, 1})},
          {"n_supports", attr_int(2)},
          {"coefficients", attr_floats({1, -0.5f})},
          {"rho", attr_floats({0.1f})}};
}

TEST(MlLinearSvm, SvmRegressorKernels) {
  Tensor x = Tensor::from_vector<float>({1, 0, 0, 1, 0.5f, 0.5f, 2, -1}, {4, 2});
  auto lin = regress("SVMRegressor", regression_svm("LINEAR"), x);
  EXPECT_EQ(lin[0].shape(), (Shape{4, 1}));
  expect_near(lin[0], {1.1f, -0.4f, 0.35f, 2.6f});
  // POLY (0.5 x.sv + 1)^3: row 0 is 1.5^3 - 0.5 * 1 + 0.1.
  expect_near(regress("SVMRegressor", regression_svm("POLY"), x)[0], {2.975f, -0.5875f, 1.0765625f, 8.0375f});
  // RBF exp(-0.5 |x - sv|^2): row 0 is 1 - 0.5 exp(-1) + 0.1.
  expect_near(regress("SVMRegressor", regression_svm("RBF"), x)[0], {0.91606028f, -0.03212056f, 0.48940039f, 0.45872162f});
  // SIGMOID tanh(0.5 x.sv + 1): row 0 is tanh(1.5) - 0.5 tanh(1) + 0.1.
  expect_near(regress("SVMRegressor", regression_svm("SIGMOID"), x)[0], {0.62435118f, 0.40902003f, 0.52414182f, 0.83296900f});
  // A real degree: 1.5^2.5 - 0.5 + 0.1.
  Attrs deg = regression_svm("POLY");
  deg["kernel_params"] = attr_floats({0.5f, 1, 2.5f});
  EXPECT_NEAR(regress("SVMRegressor", deg, x)[0].float_at(0), std::pow(1.5f, 2.5f) - 0.4f, 1e-5f);
}

TEST(MlLinearSvm, SvmRegressorOneClassLinearFormAndPostTransform) {
  Tensor x = Tensor::from_vector<float>({1, 0, 0, 1, 0.5f, 0.5f, 2, -1}, {4, 2});
  Attrs oc = regression_svm("LINEAR");
  oc["one_class"] = attr_int(1);
  oc["rho"] = attr_floats({-0.25f});  // scores 0.75, -0.75, 0, 2.25: 0 is not > 0
  expect_near(regress("SVMRegressor", oc, x)[0], {1, -1, -1, 1});
  // No support vectors: y = x . coefficients + rho.
  Attrs lin = {{"coefficients", attr_floats({1, 2})}, {"rho", attr_floats({0.1f})}};
  expect_near(regress("SVMRegressor", lin, Tensor::from_vector<int64_t>({1, 0, 0, 1}, {2, 2}))[0], {1.1f, 2.1f});
  // post_transform is accepted and, as in ONNX Runtime, not applied.
  Attrs pt = regression_svm("LINEAR");
  pt["post_transform"] = attr_string("LOGISTIC");
  expect_near(regress("SVMRegressor", pt, x)[0], {1.1f, -0.4f, 0.35f, 2.6f});
}

TEST(MlLinearSvm, SvmRegressorErrors) {
  Tensor x = Tensor::from_vector<float>({1, 0}, {1, 2});
  Attrs n = regression_svm("LINEAR");
  n["n_supports"] = attr_int(3);
  expect_error([&] { regress("SVMRegressor", n, x); }, "support_vectors has 4 values, not 3 vectors");
  Attrs c = regression_svm("LINEAR");
  c["coefficients"] = attr_floats({1, 2, 3});
  expect_error([&] { regress("SVMRegressor", c, x); }, "3 coefficients for 2 support vectors");
  Attrs r = regression_svm("LINEAR");
  r["rho"] = attr_floats({1, 2});
  expect_error([&] { regress("SVMRegressor", r, x); }, "rho must have 1 value, got 2");
  expect_error([&] { regress("SVMRegressor", regression_svm("LINEAR"), Tensor::from_vector<float>({1, 2, 3}, {3})); },
               "X has 3 features, the model 2");
  expect_error([&] { regress("SVMRegressor", regression_svm("LINEAR"), Tensor::from_vector<bool>({true, false}, {1, 2})); },
               "X must be float, double, int64 or int32");
}

}  // namespace
}  // namespace onyx::test
