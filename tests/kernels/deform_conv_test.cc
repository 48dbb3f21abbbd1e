// DeformConv checked against hand-computed bilinear samples.
#include "op_test_util.h"

namespace onyx::test {
namespace {

TEST(DeformConv, BilinearOffsetsMaskAndBias) {
  auto x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  auto w = Tensor::from_vector<float>({1}, {1, 1, 1, 1});
  // Offsets [dy, dx] per output position: (0.5, 0.5) at (0, 0) samples the middle
  // of the four pixels (2.5); (-2.5, 0) at (1, 1) falls wholly outside and reads 0.
  auto off = Tensor::from_vector<float>({0.5f, 0, 0, -2.5f, 0.5f, 0, 0, 0}, {1, 2, 2, 2});
  auto out = run_op(make_node("DeformConv", {"x", "w", "o"}, {"y"}), {x, w, off}, 22);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 2, 2}));
  expect_near(out[0], {2.5f, 2, 3, 0});
  auto bias = Tensor::from_vector<float>({10}, {1});
  auto mask = Tensor::from_vector<float>({1, 0.5f, 1, 1}, {1, 1, 2, 2});
  out = run_op(make_node("DeformConv", {"x", "w", "o", "b", "m"}, {"y"}), {x, w, off, bias, mask}, 22);
  expect_near(out[0], {12.5f, 11, 13, 10});
  EXPECT_THROW(run_op(make_node("DeformConv", {"x", "w", "o"}, {"y"}), {x, w, off.reshaped({1, 2, 4, 1})}, 22), Error);
}

}  // namespace
}  // namespace onyx::test
