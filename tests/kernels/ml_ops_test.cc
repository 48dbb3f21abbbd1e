#include <cmath>

#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kMl = "ai.onnx.ml";
TEST(MlOps, LabelEncoderStringToInt) {
  auto node = make_node("LabelEncoder", {"x"}, {"y"},
                        {{"keys_strings", attr_strings({"a", "b"})}, {"values_int64s", attr_ints({10, 20})},
                         {"default_int64", attr_int(-7)}},
                        kMl);
  auto y = run_op(node, {Tensor::from_vector<std::string>({"b", "z", "a"}, {3})}, 2);
  EXPECT_EQ(to_vector<int64_t>(y[0]), (std::vector<int64_t>{20, -7, 10}));
  auto node2 = make_node("LabelEncoder", {"x"}, {"y"},
                         {{"keys_floats", attr_floats({1.5f, NAN})}, {"values_strings", attr_strings({"x", "nan"})}}, kMl);
  auto y2 = run_op(node2, {Tensor::from_vector<float>({NAN, 1.5f, 2.f}, {3})}, 4);
  EXPECT_EQ(to_vector<std::string>(y2[0]), (std::vector<std::string>{"nan", "x", "_Unused"}));
}

TEST(MlOps, ArrayFeatureExtractorBinarizerScaler) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto a = run_op(make_node("ArrayFeatureExtractor", {"x", "i"}, {"y"}, {}, kMl), {x, Tensor::from_vector<int64_t>({2, 0}, {2})}, 1);
  EXPECT_EQ(a[0].shape(), (Shape{2, 2}));
  expect_near(a[0], {3, 1, 6, 4});
  auto b = run_op(make_node("Binarizer", {"x"}, {"y"}, {{"threshold", attr_float(3.f)}}, kMl), {x}, 1);
  expect_near(b[0], {0, 0, 0, 1, 1, 1});
  auto s = run_op(make_node("Scaler", {"x"}, {"y"}, {{"offset", attr_floats({1, 2, 3})}, {"scale", attr_floats({2})}}, kMl), {x}, 1);
  expect_near(s[0], {0, 0, 0, 6, 6, 6});
}

TEST(MlOps, NormalizerOneHotImputerFeatureVectorizer) {
  Tensor x = Tensor::from_vector<float>({3, -4, 1, 1}, {2, 2});
  auto n = run_op(make_node("Normalizer", {"x"}, {"y"}, {{"norm", attr_string("L2")}}, kMl), {x}, 1);
  expect_near(n[0], {0.6f, -0.8f, std::sqrt(0.5f), std::sqrt(0.5f)});
  auto o = run_op(make_node("OneHotEncoder", {"x"}, {"y"}, {{"cats_int64s", attr_ints({1, 3})}}, kMl),
                  {Tensor::from_vector<int64_t>({3, 2}, {2})}, 1);
  EXPECT_EQ(o[0].shape(), (Shape{2, 2}));
  expect_near(o[0], {0, 1, 0, 0});
  auto im = run_op(make_node("Imputer", {"x"}, {"y"},
                             {{"imputed_value_floats", attr_floats({7, 8})}, {"replaced_value_float", attr_float(NAN)}}, kMl),
                   {Tensor::from_vector<float>({NAN, 1, 2, NAN}, {2, 2})}, 1);
  expect_near(im[0], {7, 1, 2, 8});
  auto fv = run_op(make_node("FeatureVectorizer", {"a", "b"}, {"y"}, {{"inputdimensions", attr_ints({1, 3})}}, kMl),
                   {Tensor::from_vector<float>({1, 2}, {2, 1}), Tensor::from_vector<int64_t>({3, 4, 5, 6}, {2, 2})}, 1);
  EXPECT_EQ(fv[0].shape(), (Shape{2, 4}));
  expect_near(fv[0], {1, 3, 4, 0, 2, 5, 6, 0});
}

TEST(MlOps, Errors) {
  EXPECT_THROW(run_op(make_node("ArrayFeatureExtractor", {"x", "i"}, {"y"}, {}, kMl),
                      {Tensor::from_vector<float>({1, 2}, {1, 2}), Tensor::from_vector<int64_t>({2}, {1})}, 1),
               Error);
  EXPECT_THROW(run_op(make_node("OneHotEncoder", {"x"}, {"y"}, {{"cats_int64s", attr_ints({1})}, {"zeros", attr_int(0)}}, kMl),
                      {Tensor::from_vector<int64_t>({2}, {1})}, 1),
               Error);
}

TEST(MlOps, TreeEnsembleBranchModesAndMissingValues) {
  // node 0: x0 <= 0.5 ? leaf 0 (1.0) : node 1; node 1: x1 in {2, 3} ? leaf 1 (5.0) : leaf 2 (-1.0).
  // A NaN at node 0 follows the true branch (missing_value_tracks_true).
  Tensor modes(DataType::UInt8, {2});
  modes.data<uint8_t>()[0] = 0;
  modes.data<uint8_t>()[1] = 6;
  std::map<std::string, Attribute> attrs = {
      {"nodes_modes", attr_tensor(modes)},
      {"nodes_splits", attr_tensor(Tensor::from_vector<float>({0.5f, 0.f}, {2}))},
      {"membership_values", attr_tensor(Tensor::from_vector<float>({2, 3, std::nanf("")}, {3}))},
      {"leaf_weights", attr_tensor(Tensor::from_vector<float>({1, 5, -1}, {3}))},
      {"leaf_targetids", attr_ints({0, 0, 0})},
      {"tree_roots", attr_ints({0})},
      {"nodes_featureids", attr_ints({0, 1})},
      {"nodes_truenodeids", attr_ints({0, 1})},
      {"nodes_trueleafs", attr_ints({1, 1})},
      {"nodes_falsenodeids", attr_ints({1, 2})},
      {"nodes_falseleafs", attr_ints({0, 1})},
      {"nodes_missing_value_tracks_true", attr_ints({1, 0})},
      {"n_targets", attr_int(1)}};
  auto x = Tensor::from_vector<float>({0.2f, 0, 0.7f, 3, 0.7f, 4, std::nanf(""), 3}, {4, 2});
  auto out = run_op(make_node("TreeEnsemble", {"x"}, {"y"}, attrs, "ai.onnx.ml"), {x}, 5);
  EXPECT_EQ(out[0].shape(), (Shape{4, 1}));
  expect_near(out[0], {1, 5, -1, 1});
  attrs["post_transform"] = attr_int(2);  // LOGISTIC
  out = run_op(make_node("TreeEnsemble", {"x"}, {"y"}, attrs, "ai.onnx.ml"), {x}, 5);
  expect_near(out[0], {0.7310586f, 0.9933071f, 0.2689414f, 0.7310586f});
  attrs["nodes_truenodeids"] = attr_ints({0, 7});
  EXPECT_THROW(run_op(make_node("TreeEnsemble", {"x"}, {"y"}, attrs, "ai.onnx.ml"), {x}, 5), Error);
}

}  // namespace
}  // namespace onyx::test
