#include <gtest/gtest.h>

#include "op_test_util.h"

namespace onyx::test {

TEST(MaxPool, IndicesAndPadding) {
  Tensor x = Tensor::from_vector<float>({1, 5, 3, 4, 2, 9, 7, 8, 6}, {1, 1, 3, 3});
  auto out = run_op(make_node("MaxPool", {"x"}, {"y", "i"},
                              {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})},
                               {"pads", attr_ints({0, 0, 1, 1})}}),
                    {x}, 12);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 2, 2}));
  expect_near(out[0], {5, 9, 8, 6});
  EXPECT_EQ(to_vector<int64_t>(out[1]), (std::vector<int64_t>{1, 5, 7, 8}));
}

TEST(MaxPool, Uint8CeilMode) {
  Tensor x = Tensor::from_vector<uint8_t>({1, 2, 3, 4, 5}, {1, 1, 5});
  auto out = run_op(make_node("MaxPool", {"x"}, {"y"},
                              {{"kernel_shape", attr_ints({2})}, {"strides", attr_ints({2})}, {"ceil_mode", attr_int(1)}}),
                    {x}, 12);
  EXPECT_EQ(to_vector<uint8_t>(out[0]), (std::vector<uint8_t>{2, 4, 5}));
}

TEST(AveragePool, CountIncludePad) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  auto attrs = std::map<std::string, Attribute>{{"kernel_shape", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 0, 0})}};
  auto a = run_op(make_node("AveragePool", {"x"}, {"y"}, attrs), {x}, 11);
  expect_near(a[0], {1, 1.5, 2, 2.5});
  attrs["count_include_pad"] = attr_int(1);
  auto b = run_op(make_node("AveragePool", {"x"}, {"y"}, attrs), {x}, 11);
  expect_near(b[0], {0.25, 0.75, 1, 2.5});
}

TEST(GlobalPools, AverageMaxLp) {
  Tensor x = Tensor::from_vector<float>({3, 4, 0, 0, 1, 2, 3, 6}, {1, 2, 4});
  expect_near(run_op(make_node("GlobalAveragePool", {"x"}, {"y"}), {x})[0], {1.75, 3});
  expect_near(run_op(make_node("GlobalMaxPool", {"x"}, {"y"}), {x})[0], {4, 6});
  auto lp = run_op(make_node("GlobalLpPool", {"x"}, {"y"}), {x})[0];
  EXPECT_EQ(lp.shape(), (Shape{1, 2, 1}));
  EXPECT_NEAR(lp.float_at(0), 5.0, 1e-5);
}

TEST(MaxUnpool, ScattersAndChecksIndices) {
  Tensor x = Tensor::from_vector<float>({5, 6}, {1, 1, 1, 2});
  Tensor i = Tensor::from_vector<int64_t>({1, 2}, {1, 1, 1, 2});
  auto out = run_op(make_node("MaxUnpool", {"x", "i"}, {"y"},
                              {{"kernel_shape", attr_ints({1, 2})}, {"strides", attr_ints({1, 2})}}),
                    {x, i}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 1, 4}));
  expect_near(out[0], {0, 5, 6, 0});
  Tensor bad = Tensor::from_vector<int64_t>({1, 9}, {1, 1, 1, 2});
  EXPECT_THROW(run_op(make_node("MaxUnpool", {"x", "i"}, {"y"},
                                {{"kernel_shape", attr_ints({1, 2})}, {"strides", attr_ints({1, 2})}}),
                      {x, bad}, 11),
               onyx::Error);
}

TEST(MaxPool, KernelLargerThanInputThrows) {
  Tensor x = Tensor::zeros(DataType::Float, {1, 1, 2, 2});
  EXPECT_THROW(run_op(make_node("MaxPool", {"x"}, {"y"}, {{"kernel_shape", attr_ints({3, 3})}}), {x}), onyx::Error);
}

}  // namespace onyx::test
