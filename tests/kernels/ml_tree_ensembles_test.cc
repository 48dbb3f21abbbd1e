#include <cmath>

#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kMl = "ai.onnx.ml";
// Two trees over features 0 and 1: tree t splits x[t] <= 0.5 * t into node 1
// (true) or node 2 (false), both leaves.
std::map<std::string, Attribute> two_stumps() {
  return {{"nodes_treeids", attr_ints({0, 0, 0, 1, 1, 1})},
          {"nodes_nodeids", attr_ints({0, 1, 2, 0, 1, 2})},
          {"nodes_featureids", attr_ints({0, 0, 0, 1, 0, 0})},
          {"nodes_modes", attr_strings({"BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "LEAF"})},
          {"nodes_values", attr_floats({0, 0, 0, 0.5f, 0, 0})},
          {"nodes_truenodeids", attr_ints({1, 0, 0, 1, 0, 0})},
          {"nodes_falsenodeids", attr_ints({2, 0, 0, 2, 0, 0})},
          {"nodes_missing_value_tracks_true", attr_ints({1, 0, 0, 0, 0, 0})}};
}

const Tensor kRows = Tensor::from_vector<float>({-1, -1, 1, 1, NAN, 0.5f}, {3, 2});

TEST(MlTreeEnsembles, RegressorAggregatesAndBase) {
  // Leaf weights: tree 0 -> (target 0: 1 | 2), tree 1 -> (target 0: 10 | 20, target 1: 3 | 4).
  auto attrs = two_stumps();
  attrs["target_treeids"] = attr_ints({0, 0, 1, 1, 1, 1});
  attrs["target_nodeids"] = attr_ints({1, 2, 1, 2, 1, 2});
  attrs["target_ids"] = attr_ints({0, 0, 0, 0, 1, 1});
  attrs["target_weights"] = attr_floats({1, 2, 10, 20, 3, 4});
  attrs["n_targets"] = attr_int(2);
  attrs["base_values"] = attr_floats({100, 0});
  // Row 0: trees take (true, true); row 1: (false, false); row 2: x0 NaN goes
  // true (tracked), x1 = 0.5 is not < 0.5 so false.
  auto sum = run_op(make_node("TreeEnsembleRegressor", {"x"}, {"y"}, attrs, kMl), {kRows}, 1);
  EXPECT_EQ(sum[0].shape(), (Shape{3, 2}));
  expect_near(sum[0], {111, 3, 122, 4, 121, 4});
  attrs["aggregate_function"] = attr_string("AVERAGE");
  expect_near(run_op(make_node("TreeEnsembleRegressor", {"x"}, {"y"}, attrs, kMl), {kRows}, 1)[0],
              {105.5f, 1.5f, 111, 2, 110.5f, 2});
  attrs["aggregate_function"] = attr_string("MAX");
  expect_near(run_op(make_node("TreeEnsembleRegressor", {"x"}, {"y"}, attrs, kMl), {kRows}, 1)[0],
              {110, 3, 120, 4, 120, 4});
  attrs["n_targets"] = attr_int(1);
  EXPECT_THROW(run_op(make_node("TreeEnsembleRegressor", {"x"}, {"y"}, attrs, kMl), {kRows}, 1), Error);
}

TEST(MlTreeEnsembles, ClassifierMulticlassSoftmax) {
  auto attrs = two_stumps();
  attrs["class_treeids"] = attr_ints({0, 0, 1, 1});
  attrs["class_nodeids"] = attr_ints({1, 2, 1, 2});
  attrs["class_ids"] = attr_ints({0, 1, 2, 1});
  attrs["class_weights"] = attr_floats({1, 1, 1, 1});
  attrs["classlabels_strings"] = attr_strings({"a", "b", "c"});
  attrs["post_transform"] = attr_string("SOFTMAX");
  auto out = run_op(make_node("TreeEnsembleClassifier", {"x"}, {"label", "scores"}, attrs, kMl), {kRows}, 1);
  // Row 0 scores (1, 0, 1): tie between a and c, the first wins. Row 1: (0, 2, 0).
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"a", "b", "a"}));
  float e = std::exp(1.f), t = 2 * e + 1, e2 = std::exp(2.f), t2 = e2 + 2;
  expect_near(out[1], {e / t, 1 / t, e / t, 1 / t2, e2 / t2, 1 / t2, e / (e + e + 1), e / (e + e + 1), 1 / (e + e + 1)});
}

TEST(MlTreeEnsembles, ClassifierBinaryFromOneScore) {
  // Gradient-boosting style: every weight on class 0, margins, LOGISTIC.
  auto attrs = two_stumps();
  attrs["class_treeids"] = attr_ints({0, 0, 1, 1});
  attrs["class_nodeids"] = attr_ints({1, 2, 1, 2});
  attrs["class_ids"] = attr_ints({0, 0, 0, 0});
  attrs["class_weights"] = attr_floats({-1, 0.5f, -0.25f, 1});
  attrs["classlabels_int64s"] = attr_ints({3, 7});
  attrs["base_values"] = attr_floats({0.5f});
  attrs["post_transform"] = attr_string("LOGISTIC");
  auto out = run_op(make_node("TreeEnsembleClassifier", {"x"}, {"label", "scores"}, attrs, kMl), {kRows}, 1);
  // Margins: row 0 -0.75, row 1 2.0, row 2 0.5 + -1 + 1 = 0.5.
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{3, 7, 7}));
  auto sig = [](float m) { return 1 / (1 + std::exp(-m)); };
  expect_near(out[1], {sig(0.75f), sig(-0.75f), sig(-2), sig(2), sig(-0.5f), sig(0.5f)});
  // Random-forest style: non-negative class-0 weights are the positive class's probability.
  attrs["class_weights"] = attr_floats({0.1f, 0.3f, 0.2f, 0.45f});
  attrs.erase("base_values");
  attrs["post_transform"] = attr_string("NONE");
  auto rf = run_op(make_node("TreeEnsembleClassifier", {"x"}, {"label", "scores"}, attrs, kMl), {kRows}, 1);
  EXPECT_EQ(to_vector<int64_t>(rf[0]), (std::vector<int64_t>{3, 7, 7}));
  expect_near(rf[1], {0.7f, 0.3f, 0.25f, 0.75f, 0.45f, 0.55f});
}

TEST(MlTreeEnsembles, MalformedForestsAreRejected) {
  auto attrs = two_stumps();
  attrs["class_treeids"] = attr_ints({0});
  attrs["class_nodeids"] = attr_ints({0});  // a branch node, not a leaf
  attrs["class_ids"] = attr_ints({0});
  attrs["class_weights"] = attr_floats({1});
  attrs["classlabels_int64s"] = attr_ints({0, 1});
  EXPECT_THROW(run_op(make_node("TreeEnsembleClassifier", {"x"}, {"label", "scores"}, attrs, kMl), {kRows}, 1), Error);
  auto cyclic = two_stumps();
  cyclic["nodes_modes"] = attr_strings({"BRANCH_LEQ", "BRANCH_LEQ", "LEAF", "BRANCH_LT", "LEAF", "LEAF"});
  cyclic["nodes_truenodeids"] = attr_ints({1, 0, 0, 1, 0, 0});  // node 1 leads back to node 0
  cyclic["target_treeids"] = attr_ints({0});
  cyclic["target_nodeids"] = attr_ints({2});
  cyclic["target_ids"] = attr_ints({0});
  cyclic["target_weights"] = attr_floats({1});
  EXPECT_THROW(run_op(make_node("TreeEnsembleRegressor", {"x"}, {"y"}, cyclic, kMl), {kRows}, 1), Error);
  auto narrow = two_stumps();
  narrow["target_treeids"] = attr_ints({0});
  narrow["target_nodeids"] = attr_ints({1});
  narrow["target_ids"] = attr_ints({0});
  narrow["target_weights"] = attr_floats({1});
  EXPECT_THROW(run_op(make_node("TreeEnsembleRegressor", {"x"}, {"y"}, narrow, kMl), {Tensor::from_vector<float>({1, 2}, {2, 1})}, 1),
               Error);
}

}  // namespace
}  // namespace onyx::test
