#include <gtest/gtest.h>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor iota_f(Shape s) {
  Tensor t(DataType::Float, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }

TEST(DataMovement, TransposeDefaultAndPerm) {
  auto out = run_op(make_node("Transpose", {"x"}, {"y"}), {iota_f({2, 3})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  expect_near(out[0], {0, 3, 1, 4, 2, 5});
  out = run_op(make_node("Transpose", {"x"}, {"y"}, {{"perm", attr_ints({1, 2, 0})}}), {iota_f({2, 2, 3})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 2}));
  // y[i,j,k] = x[k,i,j] = k*6 + i*3 + j
  expect_near(out[0], {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11});
  EXPECT_THROW(run_op(make_node("Transpose", {"x"}, {"y"}, {{"perm", attr_ints({0, 0})}}), {iota_f({2, 3})}), Error);
}

TEST(DataMovement, TransposeStrings) {
  Tensor x = Tensor::from_vector<std::string>({"a", "b", "c", "d"}, {2, 2});
  auto out = run_op(make_node("Transpose", {"x"}, {"y"}), {x});
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"a", "c", "b", "d"}));
}

TEST(DataMovement, Concat) {
  auto out = run_op(make_node("Concat", {"a", "b"}, {"y"}, {{"axis", attr_int(-1)}}), {iota_f({2, 1}), iota_f({2, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  expect_near(out[0], {0, 0, 1, 1, 2, 3});
  EXPECT_THROW(run_op(make_node("Concat", {"a", "b"}, {"y"}, {{"axis", attr_int(0)}}), {iota_f({2, 1}), iota_f({2, 2})}),
               Error);
}

TEST(DataMovement, SplitVariants) {
  // equal parts from output count
  auto out = run_op(make_node("Split", {"x"}, {"a", "b"}, {{"axis", attr_int(1)}}), {iota_f({2, 4})});
  expect_near(out[0], {0, 1, 4, 5});
  expect_near(out[1], {2, 3, 6, 7});
  // split input (opset 13)
  out = run_op(make_node("Split", {"x", "s"}, {"a", "b"}), {iota_f({5}), i64({2, 3})});
  expect_near(out[1], {2, 3, 4});
  // split attribute (opset 11)
  out = run_op(make_node("Split", {"x"}, {"a", "b"}, {{"split", attr_ints({4, 1})}}), {iota_f({5})}, 11);
  expect_near(out[1], {4});
  // num_outputs with an uneven last chunk
  out = run_op(make_node("Split", {"x"}, {"a", "b", "c"}, {{"num_outputs", attr_int(3)}}), {iota_f({5})}, 18);
  EXPECT_EQ(out[2].shape(), (Shape{1}));
  EXPECT_THROW(run_op(make_node("Split", {"x", "s"}, {"a", "b"}), {iota_f({5}), i64({2, 2})}), Error);
}

TEST(DataMovement, SliceStepsAndClamping) {
  Tensor x = iota_f({2, 4});
  auto out = run_op(make_node("Slice", {"x", "s", "e", "a", "t"}, {"y"}),
                    {x, i64({1, 0}), i64({2, 3}), i64({0, 1}), i64({1, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 2}));
  expect_near(out[0], {4, 6});
  // negative step, INT64_MIN end
  out = run_op(make_node("Slice", {"x", "s", "e", "a", "t"}, {"y"}),
               {x, i64({-1}), i64({std::numeric_limits<int64_t>::min()}), i64({1}), i64({-1})});
  expect_near(out[0], {3, 2, 1, 0, 7, 6, 5, 4});
  // end out of bounds clamps; start beyond the end gives an empty slice
  out = run_op(make_node("Slice", {"x", "s", "e"}, {"y"}), {x, i64({0, 1}), i64({-1, 1000})});
  expect_near(out[0], {1, 2, 3});
  out = run_op(make_node("Slice", {"x", "s", "e"}, {"y"}), {x, i64({0, 10}), i64({2, 1000})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 0}));
  // opset 1 attributes
  out = run_op(make_node("Slice", {"x"}, {"y"}, {{"starts", attr_ints({1})}, {"ends", attr_ints({3})}, {"axes", attr_ints({1})}}),
               {x}, 1);
  expect_near(out[0], {1, 2, 5, 6});
  EXPECT_THROW(run_op(make_node("Slice", {"x", "s", "e", "a", "t"}, {"y"}), {x, i64({0}), i64({1}), i64({0}), i64({0})}),
               Error);
}

TEST(DataMovement, Tile) {
  auto out = run_op(make_node("Tile", {"x", "r"}, {"y"}), {iota_f({2}), i64({3})});
  expect_near(out[0], {0, 1, 0, 1, 0, 1});
  out = run_op(make_node("Tile", {"x", "r"}, {"y"}), {iota_f({1, 2}), i64({2, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 4}));
  expect_near(out[0], {0, 1, 0, 1, 0, 1, 0, 1});
}

TEST(DataMovement, PadModes) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 3});
  auto out = run_op(make_node("Pad", {"x", "p", "v"}, {"y"}), {x, i64({0, 2, 0, 1}), Tensor::scalar<float>(9)});
  expect_near(out[0], {9, 9, 1, 2, 3, 9});
  out = run_op(make_node("Pad", {"x", "p"}, {"y"}, {{"mode", attr_string("reflect")}}), {x, i64({0, 2, 0, 2})});
  expect_near(out[0], {3, 2, 1, 2, 3, 2, 1});
  out = run_op(make_node("Pad", {"x", "p"}, {"y"}, {{"mode", attr_string("edge")}}), {x, i64({0, 1, 0, 1})});
  expect_near(out[0], {1, 1, 2, 3, 3});
  out = run_op(make_node("Pad", {"x", "p"}, {"y"}, {{"mode", attr_string("wrap")}}), {x, i64({0, 1, 0, 2})}, 19);
  expect_near(out[0], {3, 1, 2, 3, 1, 2});
  // negative pads crop
  out = run_op(make_node("Pad", {"x", "p"}, {"y"}), {x, i64({0, -1, 0, 0})});
  expect_near(out[0], {2, 3});
  // opset 2 attributes
  out = run_op(make_node("Pad", {"x"}, {"y"}, {{"pads", attr_ints({0, 1, 0, 0})}, {"value", attr_float(5)}}), {x}, 2);
  expect_near(out[0], {5, 1, 2, 3});
  EXPECT_THROW(run_op(make_node("Pad", {"x", "p"}, {"y"}), {x, i64({1, 1})}), Error);
}

TEST(DataMovement, DepthToSpaceAndBack) {
  Tensor x = iota_f({1, 8, 2, 3});
  for (std::string mode : {"DCR", "CRD"}) {
    auto d2s = run_op(make_node("DepthToSpace", {"x"}, {"y"}, {{"blocksize", attr_int(2)}, {"mode", attr_string(mode)}}), {x});
    EXPECT_EQ(d2s[0].shape(), (Shape{1, 2, 4, 6}));
    if (mode == "DCR") {
      auto s2d = run_op(make_node("SpaceToDepth", {"y"}, {"z"}, {{"blocksize", attr_int(2)}}), {d2s[0]});
      EXPECT_EQ(to_vector<float>(s2d[0]), to_vector<float>(x));
    }
  }
  // DCR: y[0,0,0,1] = x[0, 1*2*... ] -> block (0,1) of channel 0 comes from channel 1*c = 2
  auto d = run_op(make_node("DepthToSpace", {"x"}, {"y"}, {{"blocksize", attr_int(2)}}), {iota_f({1, 4, 1, 1})});
  expect_near(d[0], {0, 1, 2, 3});
  auto c = run_op(make_node("DepthToSpace", {"x"}, {"y"}, {{"blocksize", attr_int(2)}, {"mode", attr_string("CRD")}}),
                  {iota_f({1, 8, 1, 1})});
  // CRD: channel c takes x[c*4 + bh*2 + bw]
  expect_near(c[0], {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_THROW(run_op(make_node("DepthToSpace", {"x"}, {"y"}, {{"blocksize", attr_int(3)}}), {x}), Error);
}

TEST(DataMovement, ReverseSequence) {
  Tensor x = iota_f({4, 2});  // time-major: [T=4, B=2]
  auto out = run_op(make_node("ReverseSequence", {"x", "l"}, {"y"}), {x, i64({3, 1})});
  // batch 0 reverses 3 steps: 4,2,0,6 ; batch 1 keeps: 1,3,5,7
  expect_near(out[0], {4, 1, 2, 3, 0, 5, 6, 7});
  EXPECT_THROW(run_op(make_node("ReverseSequence", {"x", "l"}, {"y"}), {x, i64({5, 1})}), Error);
}

}  // namespace
}  // namespace onyx::test
