#include <gtest/gtest.h>

#include "base/thread_pool.h"
#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor iota_f(Shape s) {
  Tensor t(DataType::Float, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }

TEST(ShapeOps, ReshapeZeroAndMinusOne) {
  Tensor x = iota_f({2, 3, 4});
  auto out = run_op(make_node("Reshape", {"x", "s"}, {"y"}), {x, i64({0, -1})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(out[0].raw(), x.raw());  // a view, no copy
  EXPECT_FLOAT_EQ(out[0].data<float>()[13], 13.0f);
}

TEST(ShapeOps, ReshapeAllowZero) {
  Tensor x(DataType::Float, {0, 3});
  auto out = run_op(make_node("Reshape", {"x", "s"}, {"y"}, {{"allowzero", attr_int(1)}}), {x, i64({3, 0})}, 14);
  EXPECT_EQ(out[0].shape(), (Shape{3, 0}));
  // without allowzero, 0 copies the input dim
  auto out2 = run_op(make_node("Reshape", {"x", "s"}, {"y"}), {iota_f({2, 3}), i64({0, 3})}, 14);
  EXPECT_EQ(out2[0].shape(), (Shape{2, 3}));
}

TEST(ShapeOps, ReshapeOpset1Attribute) {
  auto out = run_op(make_node("Reshape", {"x"}, {"y"}, {{"shape", attr_ints({3, -1})}}), {iota_f({2, 3})}, 1);
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
}

TEST(ShapeOps, ReshapeBadSizeFails) {
  EXPECT_THROW(run_op(make_node("Reshape", {"x", "s"}, {"y"}), {iota_f({2, 3}), i64({4, -1})}), Error);
  EXPECT_THROW(run_op(make_node("Reshape", {"x", "s"}, {"y"}), {iota_f({2, 3}), i64({-1, -1})}), Error);
}

TEST(ShapeOps, FlattenNegativeAxis) {
  auto out = run_op(make_node("Flatten", {"x"}, {"y"}, {{"axis", attr_int(-1)}}), {iota_f({2, 3, 4})});
  EXPECT_EQ(out[0].shape(), (Shape{6, 4}));
  out = run_op(make_node("Flatten", {"x"}, {"y"}, {{"axis", attr_int(0)}}), {iota_f({2, 3})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 6}));
}

TEST(ShapeOps, SqueezeUnsqueeze) {
  auto out = run_op(make_node("Squeeze", {"x", "a"}, {"y"}), {iota_f({1, 3, 1, 2}), i64({-2})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 3, 2}));
  out = run_op(make_node("Squeeze", {"x"}, {"y"}), {iota_f({1, 3, 1, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  out = run_op(make_node("Squeeze", {"x"}, {"y"}, {{"axes", attr_ints({0})}}), {iota_f({1, 3})}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{3}));
  out = run_op(make_node("Unsqueeze", {"x", "a"}, {"y"}), {iota_f({3, 4}), i64({-1, 0})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 3, 4, 1}));
  out = run_op(make_node("Unsqueeze", {"x"}, {"y"}, {{"axes", attr_ints({1})}}), {iota_f({3})}, 1);
  EXPECT_EQ(out[0].shape(), (Shape{3, 1}));
  EXPECT_THROW(run_op(make_node("Squeeze", {"x", "a"}, {"y"}), {iota_f({2, 3}), i64({0})}), Error);
}

TEST(ShapeOps, ShapeWithStartEnd) {
  auto out = run_op(make_node("Shape", {"x"}, {"y"}, {{"start", attr_int(-2)}}), {iota_f({2, 3, 4})}, 15);
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{3, 4}));
  out = run_op(make_node("Shape", {"x"}, {"y"}, {{"start", attr_int(-10)}, {"end", attr_int(1)}}),
               {iota_f({2, 3, 4})}, 15);
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{2}));
  out = run_op(make_node("Size", {"x"}, {"y"}), {iota_f({2, 3, 4})});
  EXPECT_EQ(out[0].data<int64_t>()[0], 24);
  EXPECT_EQ(out[0].rank(), 0);
}

TEST(ShapeOps, Expand) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3, 1});
  auto out = run_op(make_node("Expand", {"x", "s"}, {"y"}), {x, i64({2, 1, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 2}));
  expect_near(out[0], {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  EXPECT_THROW(run_op(make_node("Expand", {"x", "s"}, {"y"}), {x, i64({2, 2})}), Error);
}

TEST(ShapeOps, ExpandString) {
  Tensor x = Tensor::from_vector<std::string>({"a", "b"}, {2});
  auto out = run_op(make_node("Expand", {"x", "s"}, {"y"}), {x, i64({2, 2})});
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"a", "b", "a", "b"}));
}

TEST(ShapeOps, IdentityPassesSequence) {
  Node n = make_node("Identity", {"x"}, {"y"});
  Sequence s;
  s.elem_type = DataType::Float;
  s.items.push_back(iota_f({2}));
  std::vector<Value> out = run_op_values(n, {Value(s)}, 16);
  ASSERT_TRUE(out[0].is_sequence());
  EXPECT_EQ(out[0].sequence().items.size(), 1u);
}

TEST(ShapeOps, DropoutInferenceAndMask) {
  Tensor x = iota_f({2, 2});
  auto out = run_op(make_node("Dropout", {"x", "r"}, {"y", "m"}), {x, Tensor::scalar<float>(0.5f)}, 13);
  expect_near(out[0], {0, 1, 2, 3});
  ASSERT_EQ(out[1].dtype(), DataType::Bool);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(out[1].data<bool>()[i]);
  out = run_op(make_node("Dropout", {"x"}, {"y", "m"}, {{"is_test", attr_int(0)}}), {x}, 6);
  EXPECT_EQ(out[1].dtype(), DataType::Float);
  expect_near(out[1], {1, 1, 1, 1});
  // training mode with a seed: kept values are scaled by 1/(1-ratio)
  out = run_op(make_node("Dropout", {"x", "r", "t"}, {"y", "m"}, {{"seed", attr_int(3)}}),
               {Tensor::from_vector<float>({1, 1, 1, 1, 1, 1, 1, 1}, {8}), Tensor::scalar<float>(0.75f),
                Tensor::scalar<bool>(true)},
               13);
  for (int i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(out[0].data<float>()[i], out[1].data<bool>()[i] ? 4.0f : 0.0f);
}

TEST(ShapeOps, ConstantOfShape) {
  auto out = run_op(make_node("ConstantOfShape", {"s"}, {"y"}, {{"value", attr_tensor(Tensor::from_vector<int32_t>({7}, {1}))}}),
                    {i64({2, 3})});
  EXPECT_EQ(out[0].dtype(), DataType::Int32);
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>(6, 7)));
  out = run_op(make_node("ConstantOfShape", {"s"}, {"y"}), {i64({0})});
  EXPECT_EQ(out[0].dtype(), DataType::Float);
  EXPECT_EQ(out[0].numel(), 0);
  EXPECT_THROW(run_op(make_node("ConstantOfShape", {"s"}, {"y"}), {i64({-1})}), Error);
  // a fill of several chunks on a pool, the last one partial
  ThreadPool pool(2);
  const Attribute value = attr_tensor(Tensor::from_vector<float>({2.5f}, {1}));
  out = run_op(make_node("ConstantOfShape", {"s"}, {"y"}, {{"value", value}}), {i64({3, 300001})}, 17, &pool);
  EXPECT_EQ(to_vector<float>(out[0]), (std::vector<float>(900003, 2.5f)));
}

TEST(ShapeOps, NarrowTypesConstantOfShapeAndPad) {
  // ConstantOfShape-25 with a float8e8m0 value (code 127 = 1.0) and Pad-25 of an int4 tensor.
  Tensor value(DataType::Float8E8M0, {1});
  *static_cast<uint8_t*>(value.raw()) = 127;
  auto out = run_op(make_node("ConstantOfShape", {"s"}, {"y"}, {{"value", attr_tensor(value)}}),
                    {Tensor::from_vector<int64_t>({2}, {1})}, 25);
  EXPECT_EQ(out[0].dtype(), DataType::Float8E8M0);
  expect_near(out[0], {1, 1});
  Tensor x(DataType::Int4, {2});
  static_cast<int8_t*>(x.raw())[0] = -8;
  static_cast<int8_t*>(x.raw())[1] = 7;
  Tensor pv(DataType::Int4, {});
  *static_cast<int8_t*>(pv.raw()) = -1;
  out = run_op(make_node("Pad", {"x", "p", "v"}, {"y"}), {x, Tensor::from_vector<int64_t>({1, 1}, {2}), pv}, 25);
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{-1, -8, 7, -1}));
}

}  // namespace
}  // namespace onyx::test
