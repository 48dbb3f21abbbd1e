// 3-D convolutions one plane deep run as batches of blocked 2-D ones
// (cpu/depth_planes_conv.h), through the Conv and FusedConv kernels with
// constant weights, against the definition.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/depth_planes_conv.h"
#include "op_test_util.h"
#include "runtime/node_evaluator.h"

namespace onyx::test {
namespace {

struct PlanesCase {
  int64_t N, C, M, D, H, W, KH, KW;
  std::vector<int64_t> strides, dilations, pads;  // 3-D attributes; pads empty with auto_pad
  std::string auto_pad = "NOTSET";
};

// Output side of one axis; pad_total < 0: SAME_UPPER.
int64_t out_side(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad_total) {
  if (pad_total < 0) return (in + s - 1) / s;
  return (in + pad_total - (k - 1) * d - 1) / s + 1;
}

// act(conv(x) + b + z) by the definition, in double.
std::vector<float> reference(const PlanesCase& c, const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& b, const std::vector<float>* z, bool relu, Shape* ys) {
  const bool same = c.auto_pad == "SAME_UPPER";
  const int64_t sd = c.strides[0], sh = c.strides[1], sw = c.strides[2], dh = c.dilations[1], dw = c.dilations[2];
  const int64_t OD = (c.D - 1) / sd + 1;
  const int64_t OH = out_side(c.H, c.KH, sh, dh, same ? -1 : c.pads[1] + c.pads[4]);
  const int64_t OW = out_side(c.W, c.KW, sw, dw, same ? -1 : c.pads[2] + c.pads[5]);
  auto same_begin = [](int64_t in, int64_t out, int64_t k, int64_t s, int64_t d) {
    return std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in) / 2;
  };
  const int64_t ph = same ? same_begin(c.H, OH, c.KH, sh, dh) : c.pads[1];
  const int64_t pw = same ? same_begin(c.W, OW, c.KW, sw, dw) : c.pads[2];
  *ys = {c.N, c.M, OD, OH, OW};
  std::vector<float> y(static_cast<size_t>(shape_numel(*ys)));
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = b[m];
            for (int64_t ci = 0; ci < c.C; ++ci)
              for (int64_t i = 0; i < c.KH; ++i)
                for (int64_t j = 0; j < c.KW; ++j) {
                  const int64_t ih = oh * sh - ph + i * dh, iw = ow * sw - pw + j * dw;
                  if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                  acc += double(x[(((n * c.C + ci) * c.D + od * sd) * c.H + ih) * c.W + iw]) *
                         w[((m * c.C + ci) * c.KH + i) * c.KW + j];
                }
            const size_t k = static_cast<size_t>((((n * c.M + m) * OD + od) * OH + oh) * OW + ow);
            if (z) acc += (*z)[k];
            y[k] = static_cast<float>(relu && acc < 0 ? 0.0 : acc);
          }
  return y;
}

// Two threads on oneDNN's OpenMP team, as sessions run convolutions: the
// Winograd kernel's policy leaves other pools of several threads to oneDNN.
ThreadPool& team_of_two() {
  static ThreadPool pool([] {
    ThreadPoolOptions o;
    o.num_threads = 2;
    o.use_openmp_team = true;
    return o;
  }());
  return pool;
}

// Runs `node` with inputs 1 (weights) and 2 (bias) as constants at kernel
// init, as a session does for initializers, on team_of_two(), twice (the
// packed weights persist).
std::vector<Tensor> run_with_constant_weights(const Node& node, const std::vector<Tensor>& inputs) {
  const KernelDef* def = cpu_kernel_registry().find(node, 17);
  EXPECT_NE(def, nullptr);
  std::vector<const Tensor*> constants(node.inputs.size(), nullptr);
  constants[1] = &inputs[1];
  constants[2] = &inputs[2];
  KernelInitContext init(node, 17, constants, nullptr);
  auto kernel = def->factory(init);
  std::vector<Value> values;
  for (const Tensor& t : inputs) values.emplace_back(t);
  std::vector<Tensor> out;
  for (int rep = 0; rep < 2; ++rep) {
    SingleNodeContext ctx(node, values, &team_of_two());
    kernel->run(ctx);
    out.push_back(ctx.outputs()[0].tensor());
  }
  return out;
}

TEST(DepthPlanesConv, MatchesDefinition) {
  if (!nchwc_direct_available()) GTEST_SKIP() << "this CPU has no AVX-512";
  const std::vector<PlanesCase> cases = {
      // (1,3,3), stride 1: R(2+1)D's spatial conv; channels not whole blocks
      {2, 20, 35, 3, 10, 13, 3, 3, {1, 1, 1}, {1, 1, 1}, {0, 1, 1, 0, 1, 1}},
      // depth stride 2 (every other input plane is skipped), 3 input blocks, uneven pads
      {1, 40, 24, 5, 11, 9, 3, 3, {2, 1, 1}, {2, 1, 1}, {0, 0, 2, 0, 2, 1}},
      // SAME_UPPER with depth stride 2: the output has ceil(D / 2) planes
      {1, 16, 16, 6, 9, 9, 3, 3, {2, 1, 1}, {1, 1, 1}, {}, "SAME_UPPER"},
  };
  int seed = 40;
  for (const PlanesCase& c : cases) {
    SCOPED_TRACE("C " + std::to_string(c.C) + " M " + std::to_string(c.M) + " K " + std::to_string(c.KH) + " " +
                 c.auto_pad);
    std::map<std::string, Attribute> attrs = {{"strides", attr_ints(c.strides)},
                                              {"dilations", attr_ints(c.dilations)}};
    if (c.auto_pad == "NOTSET") attrs["pads"] = attr_ints(c.pads);
    else attrs["auto_pad"] = attr_string(c.auto_pad);
    const std::vector<float> x = to_vector<float>(pattern({c.N * c.C * c.D * c.H * c.W}, ++seed)),
                             w = to_vector<float>(pattern({c.M * c.C * c.KH * c.KW}, ++seed)),
                             b = to_vector<float>(pattern({c.M}, ++seed));
    const Tensor xt = Tensor::from_vector<float>(x, {c.N, c.C, c.D, c.H, c.W});
    const Tensor wt = Tensor::from_vector<float>(w, {c.M, c.C, 1, c.KH, c.KW});
    const Tensor bt = Tensor::from_vector<float>(b, {c.M});

    DnnlConvConfig cfg;
    cfg.attrs.strides = c.strides;
    cfg.attrs.dilations = c.dilations;
    cfg.attrs.pads = c.pads;
    cfg.attrs.auto_pad = c.auto_pad;
    cfg.constant_weights = true;
    auto planes = DepthPlanesConv::create(cfg, &wt, true);
    ASSERT_TRUE(planes && planes->use_for(xt.shape(), &bt, &team_of_two()))
        << "a case that does not take the path under test";

    Shape ys;
    const std::vector<float> plain = reference(c, x, w, b, nullptr, false, &ys);
    for (const Tensor& y : run_with_constant_weights(make_node("Conv", {"x", "w", "b"}, {"y"}, attrs), {xt, wt, bt})) {
      ASSERT_EQ(y.shape(), ys);
      expect_near(y, plain, 1e-4f);
    }
    // FusedConv: a residual and Relu in the blocked kernels' store
    const std::vector<float> z = to_vector<float>(pattern({shape_numel(ys)}, ++seed));
    const std::vector<float> fused_want = reference(c, x, w, b, &z, true, &ys);
    Node fused = make_node("FusedConv", {"x", "w", "b", "z"}, {"y"}, attrs, "com.onyx");
    fused.attributes["activation"] = attr_string("Relu");
    for (const Tensor& y : run_with_constant_weights(fused, {xt, wt, bt, Tensor::from_vector<float>(z, ys)}))
      expect_near(y, fused_want, 1e-4f);
  }
}

TEST(DepthPlanesConv, LeavesOtherConvsAlone) {
  const Tensor deep = Tensor::from_vector<float>(std::vector<float>(16 * 16 * 27), {16, 16, 3, 3, 3});
  const Tensor flat = Tensor::from_vector<float>(std::vector<float>(16 * 16 * 9), {16, 16, 1, 3, 3});
  DnnlConvConfig cfg;
  cfg.constant_weights = true;
  EXPECT_EQ(DepthPlanesConv::create(cfg, &deep, true), nullptr) << "a kernel 3 planes deep";
  cfg.attrs.pads = {1, 1, 1, 1, 1, 1};
  EXPECT_EQ(DepthPlanesConv::create(cfg, &flat, true), nullptr) << "depth padding";
  cfg.attrs.pads = {};
  cfg.group = 2;
  EXPECT_EQ(DepthPlanesConv::create(cfg, &flat, true), nullptr) << "two groups";
  cfg.group = 1;
  cfg.constant_weights = false;
  EXPECT_EQ(DepthPlanesConv::create(cfg, &flat, true), nullptr) << "weights that are not constant";
  cfg.constant_weights = true;
  if (!nchwc_direct_available()) return;  // nothing runs here without AVX-512
  cfg.attrs.pads = {0, 1, 1, 0, 1, 1};
  auto planes = DepthPlanesConv::create(cfg, &flat, true);
  ASSERT_NE(planes, nullptr);
  EXPECT_TRUE(planes->use_for({1, 16, 4, 8, 8}, nullptr, nullptr));
  EXPECT_FALSE(planes->use_for({1, 8, 4, 8, 8}, nullptr, nullptr)) << "a channel count that is not the weights'";
  EXPECT_FALSE(planes->use_for({1, 16, 8, 8}, nullptr, nullptr)) << "a 2-D input";
  cfg.attrs.strides = {1, 2, 2};
  planes = DepthPlanesConv::create(cfg, &flat, true);
  ASSERT_NE(planes, nullptr);
  EXPECT_FALSE(planes->use_for({1, 16, 4, 8, 8}, nullptr, nullptr)) << "spatial stride 2: no Winograd";
}

}  // namespace
}  // namespace onyx::test
