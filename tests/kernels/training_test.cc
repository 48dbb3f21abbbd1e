#include <cmath>

#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kTr = "ai.onnx.preview.training";
Tensor f1(float v) { return Tensor::from_vector<float>({v}, {1}); }

TEST(Training, Adagrad) {
  auto node = make_node("Adagrad", {"r", "t", "x", "g", "h"}, {"xn", "hn"},
                        {{"decay_factor", attr_float(0.1f)}, {"epsilon", attr_float(1e-5f)},
                         {"norm_coefficient", attr_float(0.01f)}},
                        kTr);
  auto out = run_op(node, {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(2), f1(1.f), f1(-1.f), f1(2.f)}, 1);
  double r = 0.1 / (1 + 2 * 0.1), g = 0.01 * 1 - 1, h = 2 + g * g;
  expect_near(out[1], {static_cast<float>(h)});
  expect_near(out[0], {static_cast<float>(1 - r * g / (std::sqrt(h) + 1e-5))});
}

TEST(Training, MomentumStandardAndNesterov) {
  auto mk = [](const char* mode) {
    return make_node("Momentum", {"r", "t", "x", "g", "v"}, {"xn", "vn"},
                     {{"alpha", attr_float(0.9f)}, {"beta", attr_float(0.5f)}, {"norm_coefficient", attr_float(0.f)},
                      {"mode", attr_string(mode)}},
                     kTr);
  };
  std::vector<Tensor> in = {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(1), f1(1.f), f1(2.f), f1(1.f)};
  auto s = run_op(mk("standard"), in, 1);
  expect_near(s[1], {0.9f + 0.5f * 2});
  expect_near(s[0], {1 - 0.1f * 1.9f});
  auto n = run_op(mk("nesterov"), in, 1);
  expect_near(n[0], {1 - 0.1f * (2 + 0.9f * 1.9f)});
  // T == 0: beta is replaced by 1
  in[1] = Tensor::scalar<int64_t>(0);
  expect_near(run_op(mk("standard"), in, 1)[1], {0.9f + 2});
}

TEST(Training, Adam) {
  auto node = make_node("Adam", {"r", "t", "x", "g", "v", "h"}, {"xn", "vn", "hn"}, {}, kTr);
  auto out = run_op(node, {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(1), f1(1.f), f1(1.f), f1(0.f), f1(0.f)}, 1);
  double v = 0.1, h = 0.001 * 1;
  double ra = 0.1 * std::sqrt(1 - 0.999) / (1 - 0.9);
  expect_near(out[1], {static_cast<float>(v)});
  expect_near(out[2], {static_cast<float>(h)});
  expect_near(out[0], {static_cast<float>(1 - ra * v / (std::sqrt(h) + 1e-6))});
}

TEST(Training, Errors) {
  auto node = make_node("Adagrad", {"r", "t", "x", "g"}, {"xn"}, {}, kTr);
  EXPECT_THROW(run_op(node, {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(0), f1(1.f), f1(1.f)}, 1), Error);
  auto node2 = make_node("Adagrad", {"r", "t", "x", "g", "h"}, {"xn", "hn"}, {}, kTr);
  EXPECT_THROW(run_op(node2, {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(0), f1(1.f),
                              Tensor::from_vector<float>({1, 2}, {2}), f1(1.f)},
                      1),
               Error);
}

}  // namespace
}  // namespace onyx::test
