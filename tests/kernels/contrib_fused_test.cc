// com.microsoft fused ops; expected values from the formulas (the same
// numbers onnxruntime gives: scripts/contrib_cases/fused_activations.py).
#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kMs = "com.microsoft";

Tensor vec(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, s); }

Tensor run_ms(const std::string& op, std::vector<std::string> in, const std::vector<Tensor>& values,
              std::map<std::string, Attribute> attrs = {}) {
  return run_op(make_node(op, std::move(in), {"y"}, std::move(attrs), kMs), values, 1)[0];
}

TEST(ContribFusedGelu, ExactTanhAndSigmoidForms) {
  Tensor x = vec({-1, 0, 1, 2}, {2, 2});
  expect_near(run_ms("Gelu", {"x"}, {x}), {-0.15865525f, 0.0f, 0.84134475f, 1.95449974f});
  expect_near(run_ms("BiasGelu", {"x", "b"}, {vec({-1, 0, 1, 2}, {2, 2}), vec({0.5f, -0.5f}, {2})}),
              {-0.15426877f, -0.15426877f, 1.39978920f, 1.39978920f});
  expect_near(run_ms("FastGelu", {"x"}, {vec({-1, 0.5f, 3}, {3})}), {-0.15880801f, 0.34571401f, 2.99636261f});
  expect_near(run_ms("FastGelu", {"x", "b"}, {vec({-1, 0.5f, 3}, {1, 3}), vec({0.25f, -0.5f, 0.25f}, {3})}),
              {-0.17003944f, 0.0f, 3.24843137f});
  expect_near(run_ms("QuickGelu", {"x"}, {vec({-1, 0, 2}, {3})}), {-0.15420423f, 0.0f, 1.93565862f});
  expect_near(run_ms("QuickGelu", {"x"}, {vec({-1, 0, 2}, {3})}, {{"alpha", attr_float(1.0f)}}),
              {-0.26894142f, 0.0f, 1.76159416f});
}

TEST(ContribFusedGelu, RejectsBadBiasAndTypes) {
  Tensor x = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_THROW(run_ms("BiasGelu", {"x"}, {x}), Error);                                // bias is required
  EXPECT_THROW(run_ms("BiasGelu", {"x", "b"}, {x, vec({1, 2}, {2})}), Error);         // not the last dim
  EXPECT_THROW(run_ms("FastGelu", {"x", "b"}, {x, vec({1, 2, 3}, {1, 3})}), Error);   // not 1-D
  EXPECT_THROW(run_ms("Gelu", {"x"}, {Tensor::from_vector<int32_t>({1, 2}, {2})}), Error);
}

TEST(ContribFusedMatMul, TransposesAndScales) {
  // A stored [3, 2], read transposed; y = 0.5 * A^T B
  Tensor a = vec({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor b = vec({1, 0, 0, 1, 1, 1}, {3, 2});
  Tensor y = run_ms("FusedMatMul", {"a", "b"}, {a, b}, {{"transA", attr_int(1)}, {"alpha", attr_float(0.5f)}});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_near(y, {3, 4, 4, 5});
  // B stored [N, K]
  Tensor bt = vec({1, 0, 1, 0, 1, 1}, {2, 3});
  expect_near(run_ms("FusedMatMul", {"a", "b"}, {a, bt}, {{"transA", attr_int(1)}, {"transB", attr_int(1)}}),
              {6, 8, 8, 10});
}

TEST(ContribFusedMatMul, TransBatchReadsTheLeadingAxisAsRows) {
  // A stored [M=2, batch=2, K=2]: batch 0 is [[1,2],[5,6]], batch 1 [[3,4],[7,8]].
  Tensor a = vec({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  Tensor ones = vec({1, 1, 1, 1}, {2, 2, 1});
  Tensor y = run_ms("FusedMatMul", {"a", "b"}, {a, ones}, {{"transBatchA", attr_int(1)}});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 1}));
  expect_near(y, {3, 11, 7, 15});
}

TEST(ContribFusedMatMul, RejectsShapesThatDoNotMultiply) {
  Tensor a = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_THROW(run_ms("FusedMatMul", {"a", "b"}, {a, a}), Error);
  EXPECT_THROW(run_ms("FusedMatMul", {"a", "b"}, {a, a}, {{"transBatchA", attr_int(1)}}), Error);  // rank 2
  EXPECT_THROW(run_ms("FusedMatMul", {"a", "b"}, {a, Tensor::from_vector<int32_t>({1, 2, 3}, {3, 1})}), Error);
}

TEST(ContribFusedGemm, AppliesTheActivationAfterGemm) {
  Tensor a = vec({1, -2, 3, -4}, {2, 2});
  Tensor eye = vec({1, 0, 0, 1}, {2, 2});
  Tensor c = vec({1, 1}, {2});
  expect_near(run_ms("FusedGemm", {"a", "b", "c"}, {a, eye, c},
                     {{"activation", attr_string("LeakyRelu")}, {"activation_alpha", attr_float(0.5f)}}),
              {2, -0.5f, 4, -1.5f});
  expect_near(run_ms("FusedGemm", {"a", "b", "c"}, {a, eye, c}, {{"activation", attr_string("Relu")}}), {2, 0, 4, 0});
  expect_near(run_ms("FusedGemm", {"a", "b"}, {vec({0, 2}, {1, 2}), eye},
                     {{"activation", attr_string("ScaledTanh")},
                      {"activation_alpha", attr_float(2.0f)},
                      {"activation_beta", attr_float(0.5f)}}),
              {0.0f, 1.52318831f});
}

TEST(ContribFusedGemm, RejectsUnknownOrIncompleteActivations) {
  Tensor a = vec({1, 2, 3, 4}, {2, 2});
  EXPECT_THROW(run_ms("FusedGemm", {"a", "b"}, {a, a}, {{"activation", attr_string("Swish")}}), Error);
  EXPECT_THROW(run_ms("FusedGemm", {"a", "b"}, {a, a},
                      {{"activation", attr_string("ScaledTanh")}, {"activation_alpha", attr_float(1.0f)}}),
               Error);
  EXPECT_THROW(run_ms("FusedGemm", {"a", "b"}, {a, vec({1, 2, 3}, {3, 1})}, {{"activation", attr_string("Relu")}}),
               Error);
}

TEST(ContribFusedConv, AddsTheResidualBeforeTheActivation) {
  // 1x1 conv: 2x - 3, plus Z, clipped to [0, 6]
  Tensor x = vec({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor w = vec({2}, {1, 1, 1, 1});
  Tensor b = vec({-3}, {1});
  Tensor z = vec({0, 0, 0, 10}, {1, 1, 2, 2});
  Tensor y = run_ms("FusedConv", {"x", "w", "b", "z"}, {x, w, b, z},
                    {{"activation", attr_string("Clip")}, {"activation_params", attr_floats({0.0f, 6.0f})}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  expect_near(y, {0, 1, 3, 6});
}

TEST(ContribFusedConv, RejectsActivationsOrtDoesNotFuse) {
  Tensor x = vec({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor w = vec({2}, {1, 1, 1, 1});
  EXPECT_THROW(run_ms("FusedConv", {"x", "w"}, {x, w}, {{"activation", attr_string("Gelu")}}), Error);
  EXPECT_THROW(run_ms("FusedConv", {"x", "w"}, {x, w},
                      {{"activation", attr_string("Clip")}, {"activation_params", attr_floats({0.0f})}}),
               Error);
}

}  // namespace
}  // namespace onyx::test
