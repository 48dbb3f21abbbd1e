#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kMl = "ai.onnx.ml";
TEST(MlMaps, MakeMapSortsByKeyAndRejectsRepeats) {
  Map m = make_map(Tensor::from_vector<int64_t>({5, -1, 3}, {3}), Tensor::from_vector<float>({0.5f, 1.5f, 2.5f}, {3}));
  EXPECT_EQ(to_vector<int64_t>(m.keys), (std::vector<int64_t>{-1, 3, 5}));
  EXPECT_EQ(to_vector<float>(m.values), (std::vector<float>{1.5f, 2.5f, 0.5f}));
  EXPECT_THROW(make_map(Tensor::from_vector<std::string>({"a", "a"}, {2}), Tensor::from_vector<float>({1, 2}, {2})), Error);
  EXPECT_THROW(make_map(Tensor::from_vector<float>({1}, {1}), Tensor::from_vector<float>({1}, {1})), Error);
}

TEST(MlMaps, ZipMapMakesOneSortedMapPerRow) {
  auto node = make_node("ZipMap", {"x"}, {"z"}, {{"classlabels_strings", attr_strings({"b", "a", "c"})}}, kMl);
  auto out = run_op_values(node, {Value(Tensor::from_vector<float>({0.1f, 0.2f, 0.7f, 0.4f, 0.5f, 0.1f}, {2, 3}))}, 1);
  const MapSequence& maps = out[0].map_sequence();
  ASSERT_EQ(maps.size(), 2);
  EXPECT_EQ(to_vector<std::string>(maps.at(1).keys), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(to_vector<float>(maps.at(0).values), (std::vector<float>{0.2f, 0.1f, 0.7f}));
  EXPECT_EQ(to_vector<float>(maps.at(1).values), (std::vector<float>{0.5f, 0.4f, 0.1f}));
  EXPECT_THROW(run_op_values(node, {Value(Tensor::from_vector<float>({1, 2}, {1, 2}))}, 1), Error);
}

TEST(MlMaps, CastMapDenseAndSparse) {
  Value x(make_map(Tensor::from_vector<int64_t>({3, 0}, {2}), Tensor::from_vector<float>({1.5f, -2.7f}, {2})));
  auto dense = run_op_values(make_node("CastMap", {"x"}, {"y"}, {{"cast_to", attr_string("TO_INT64")}}, kMl), {x}, 1);
  EXPECT_EQ(dense[0].tensor().shape(), (Shape{1, 2}));
  EXPECT_EQ(to_vector<int64_t>(dense[0].tensor()), (std::vector<int64_t>{-2, 1}));
  auto sparse_node = make_node("CastMap", {"x"}, {"y"},
                               {{"map_form", attr_string("SPARSE")}, {"max_map", attr_int(4)}}, kMl);
  auto sparse = run_op_values(sparse_node, {x}, 1);
  EXPECT_EQ(to_vector<float>(sparse[0].tensor()), (std::vector<float>{-2.7f, 0, 0, 1.5f}));
  Value too_big(make_map(Tensor::from_vector<int64_t>({4}, {1}), Tensor::from_vector<float>({1}, {1})));
  EXPECT_THROW(run_op_values(sparse_node, {too_big}, 1), Error);
}

TEST(MlMaps, DictVectorizerPlacesValuesByVocabulary) {
  auto node = make_node("DictVectorizer", {"x"}, {"y"}, {{"string_vocabulary", attr_strings({"a", "c", "b", "z"})}}, kMl);
  Value x(make_map(Tensor::from_vector<std::string>({"c", "a", "unseen"}, {3}), Tensor::from_vector<double>({8, 4, 9}, {3})));
  auto y = run_op_values(node, {x}, 1);
  EXPECT_EQ(y[0].tensor().shape(), (Shape{1, 4}));
  EXPECT_EQ(to_vector<double>(y[0].tensor()), (std::vector<double>{4, 8, 0, 0}));
  Value int_keys(make_map(Tensor::from_vector<int64_t>({1}, {1}), Tensor::from_vector<float>({1}, {1})));
  EXPECT_THROW(run_op_values(node, {int_keys}, 1), Error);
}

TEST(MlMaps, CategoryMapperBothWays) {
  std::map<std::string, Attribute> attrs{{"cats_strings", attr_strings({"a", "b"})}, {"cats_int64s", attr_ints({1, 2})}};
  auto to_int = run_op(make_node("CategoryMapper", {"x"}, {"y"}, attrs, kMl),
                       {Tensor::from_vector<std::string>({"b", "q", "a"}, {3})}, 1);
  EXPECT_EQ(to_vector<int64_t>(to_int[0]), (std::vector<int64_t>{2, -1, 1}));
  attrs["default_string"] = attr_string("?");
  auto to_str = run_op(make_node("CategoryMapper", {"x"}, {"y"}, attrs, kMl), {Tensor::from_vector<int64_t>({2, 7}, {1, 2})}, 1);
  EXPECT_EQ(to_str[0].shape(), (Shape{1, 2}));
  EXPECT_EQ(to_vector<std::string>(to_str[0]), (std::vector<std::string>{"b", "?"}));
}

}  // namespace
}  // namespace onyx::test
