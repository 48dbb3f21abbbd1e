// ORT's quantized contrib ops (com.microsoft). Expected values are worked out
// by hand from the dequantize -> float op -> quantize definition.
#include <algorithm>
#include <cmath>
#include <random>

#include "op_test_util.h"

namespace onyx::test {
namespace {

const char* kMs = "com.microsoft";

Node ms_node(const std::string& op, std::vector<std::string> in, std::map<std::string, Attribute> attrs = {}) {
  return make_node(op, std::move(in), {"y"}, std::move(attrs), kMs);
}

Tensor f(float v) { return Tensor::scalar<float>(v); }

TEST(ContribQuantization, QLinearAddScalarBroadcastAndSaturation) {
  // A = {0, 5, 10, 122.5}, B = 2, C = (A + B) / 0.25, 498 saturates
  auto y = run_op(ms_node("QLinearAdd", {"a", "as", "az", "b", "bs", "bz", "cs", "cz"}),
                  {Tensor::from_vector<uint8_t>({10, 20, 30, 255}, {4}), f(0.5f), Tensor::scalar<uint8_t>(10),
                   Tensor::from_vector<uint8_t>({2}, {1}), f(1.f), Tensor::scalar<uint8_t>(0), f(0.25f),
                   Tensor::scalar<uint8_t>(0)});
  EXPECT_EQ(y[0].shape(), (Shape{4}));
  EXPECT_EQ(to_vector<uint8_t>(y[0]), (std::vector<uint8_t>{8, 28, 48, 255}));
}

TEST(ContribQuantization, QLinearAddOmittedZeroPointsAreZero) {
  auto y = run_op(ms_node("QLinearAdd", {"a", "as", "", "b", "bs", "", "cs", ""}),
                  {Tensor::from_vector<int8_t>({-3, 4}, {2}), f(1.f), Tensor(), Tensor::from_vector<int8_t>({1, 2}, {2}),
                   f(1.f), Tensor(), f(0.5f), Tensor()});
  EXPECT_EQ(to_vector<int8_t>(y[0]), (std::vector<int8_t>{-4, 12}));
}

TEST(ContribQuantization, QLinearMulInt8) {
  // {-2, 1, 1.5} * {2, 2, -2} = {-4, 2, -3}; / 0.5 - 1
  auto y = run_op(ms_node("QLinearMul", {"a", "as", "az", "b", "bs", "bz", "cs", "cz"}),
                  {Tensor::from_vector<int8_t>({-4, 2, 3}, {3}), f(0.5f), Tensor::scalar<int8_t>(0),
                   Tensor::from_vector<int8_t>({6, 6, -2}, {3}), f(0.5f), Tensor::scalar<int8_t>(2), f(0.5f),
                   Tensor::scalar<int8_t>(-1)});
  EXPECT_EQ(to_vector<int8_t>(y[0]), (std::vector<int8_t>{-9, 3, -7}));
}

// Squeeze-excitation's scale on a channel-last map: one operand a row of the last dim,
// [1, 1, 1, C] against [N, H, W, C] (either side), runs in blocks of tiled rows. The bytes
// equal the op on the row expanded to the full shape, and for QLinearMul the exact product
// (a - za)(b - zb) scaled and rounded half to even.
TEST(ContribQuantization, QLinearAddAndMulOfARowPerPixelEqualTheExpandedOp) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t C : {7, 300}) {
    const Shape full = {2, 9, 11, C}, row = {1, 1, 1, C};
    std::vector<uint8_t> big(static_cast<size_t>(2 * 9 * 11 * C)), small(static_cast<size_t>(C)), expanded(big.size());
    for (auto& v : big) v = static_cast<uint8_t>(byte(rng));
    for (auto& v : small) v = static_cast<uint8_t>(byte(rng));
    for (size_t i = 0; i < expanded.size(); ++i) expanded[i] = small[i % C];
    for (const char* op : {"QLinearAdd", "QLinearMul"})
      for (bool row_is_b : {true, false}) {
        auto run = [&](const Tensor& a, const Tensor& b) {
          return to_vector<uint8_t>(run_op(ms_node(op, {"a", "as", "az", "b", "bs", "bz", "cs", "cz"}),
                                           {a, f(0.03f), Tensor::scalar<uint8_t>(120), b, f(0.011f),
                                            Tensor::scalar<uint8_t>(3), f(0.05f), Tensor::scalar<uint8_t>(100)})[0]);
        };
        const Tensor tb = Tensor::from_vector<uint8_t>(big, full), ts = Tensor::from_vector<uint8_t>(small, row),
                     te = Tensor::from_vector<uint8_t>(expanded, full);
        const auto got = row_is_b ? run(tb, ts) : run(ts, tb);
        const auto want = row_is_b ? run(tb, te) : run(te, tb);
        EXPECT_EQ(got, want) << op << " C=" << C << " row_is_b=" << row_is_b;
        if (std::string(op) != "QLinearMul") continue;
        const float ratio = 0.03f * 0.011f / 0.05f;
        for (size_t i = 0; i < got.size(); i += 97) {
          const int32_t a = row_is_b ? big[i] : small[i % C], b = row_is_b ? small[i % C] : big[i];
          const float y = std::nearbyint(static_cast<float>((a - 120) * (b - 3)) * ratio + 100.f);
          EXPECT_EQ(got[i], static_cast<uint8_t>(std::clamp(y, 0.f, 255.f))) << "C=" << C << " at " << i;
        }
      }
  }
}

TEST(ContribQuantization, QLinearGlobalAveragePoolNchwAndNhwc) {
  std::vector<Tensor> params = {f(1.f), Tensor::scalar<uint8_t>(0), f(0.5f), Tensor::scalar<uint8_t>(3)};
  std::vector<Tensor> nchw = {Tensor::from_vector<uint8_t>({1, 2, 3, 4, 10, 10, 10, 10}, {1, 2, 2, 2})};
  nchw.insert(nchw.end(), params.begin(), params.end());
  auto y = run_op(ms_node("QLinearGlobalAveragePool", {"x", "xs", "xz", "ys", "yz"}), nchw);
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(to_vector<uint8_t>(y[0]), (std::vector<uint8_t>{8, 23}));  // means 2.5, 10
  std::vector<Tensor> nhwc = {Tensor::from_vector<uint8_t>({1, 10, 2, 10, 3, 10, 4, 10}, {1, 2, 2, 2})};
  nhwc.insert(nhwc.end(), params.begin(), params.end());
  auto z = run_op(ms_node("QLinearGlobalAveragePool", {"x", "xs", "xz", "ys", "yz"}, {{"channels_last", attr_int(1)}}), nhwc);
  EXPECT_EQ(z[0].shape(), (Shape{1, 1, 1, 2}));
  EXPECT_EQ(to_vector<uint8_t>(z[0]), (std::vector<uint8_t>{8, 23}));
}

std::vector<Tensor> qgemm_inputs() {
  // A - 1 = [[0, 1, 2], [3, 4, 5]], B = [[1, 0], [0, 1], [1, 1]]: A'B = [[2, 3], [8, 9]]
  return {Tensor::from_vector<uint8_t>({1, 2, 3, 4, 5, 6}, {2, 3}), f(0.5f), Tensor::scalar<uint8_t>(1),
          Tensor::from_vector<int8_t>({1, 0, 0, 1, 1, 1}, {3, 2}), f(0.5f), Tensor::scalar<int8_t>(0)};
}

TEST(ContribQuantization, QGemmFloatOutputWithBias) {
  auto in = qgemm_inputs();
  auto y = run_op(ms_node("QGemm", {"a", "as", "az", "b", "bs", "bz"}), in);
  EXPECT_EQ(y[0].dtype(), DataType::Float);
  expect_near(y[0], {0.5f, 0.75f, 2.f, 2.25f});
  in.push_back(Tensor::from_vector<int32_t>({4, -3}, {2}));
  auto yb = run_op(ms_node("QGemm", {"a", "as", "az", "b", "bs", "bz", "c"}), in);
  expect_near(yb[0], {1.5f, 0.f, 3.f, 1.5f});
}

TEST(ContribQuantization, QGemmQuantizedOutput) {
  auto in = qgemm_inputs();
  in.push_back(Tensor());
  in.push_back(f(0.25f));
  in.push_back(Tensor::scalar<uint8_t>(10));
  auto y = run_op(ms_node("QGemm", {"a", "as", "az", "b", "bs", "bz", "", "ys", "yz"}), in);
  EXPECT_EQ(to_vector<uint8_t>(y[0]), (std::vector<uint8_t>{12, 13, 18, 19}));
}

TEST(ContribQuantization, LookupTableOps) {
  auto s = run_op(ms_node("QLinearSigmoid", {"x", "xs", "xz", "ys", "yz"}),
                  {Tensor::from_vector<uint8_t>({0, 128, 255}, {3}), f(0.1f), Tensor::scalar<uint8_t>(128),
                   f(1.f / 256), Tensor::scalar<uint8_t>(0)});
  EXPECT_EQ(to_vector<uint8_t>(s[0]), (std::vector<uint8_t>{0, 128, 255}));
  auto l = run_op(ms_node("QLinearLeakyRelu", {"x", "xs", "xz", "ys", "yz"}, {{"alpha", attr_float(0.5f)}}),
                  {Tensor::from_vector<int8_t>({-10, 0, 10}, {3}), f(1.f), Tensor::scalar<int8_t>(0), f(1.f),
                   Tensor::scalar<int8_t>(0)});
  EXPECT_EQ(to_vector<int8_t>(l[0]), (std::vector<int8_t>{-5, 0, 10}));
}

// com.onyx LookupTable indexes by the byte's bits (int8 -1 reads entry 255); its output takes
// the table's type. 200 values: the vector loop (64 at a time) and its scalar tail.
TEST(ContribQuantization, LookupTableIndexesByBits) {
  std::vector<int8_t> table(256), x(200);
  for (int i = 0; i < 256; ++i) table[i] = static_cast<int8_t>(255 - i);
  for (int i = 0; i < 200; ++i) x[i] = static_cast<int8_t>(i * 37 - 100);
  auto y = run_op(make_node("LookupTable", {"x", "t"}, {"y"}, {}, "com.onyx"),
                  {Tensor::from_vector<int8_t>(x, {2, 100}), Tensor::from_vector<int8_t>(table, {256})});
  ASSERT_EQ(y[0].shape(), (Shape{2, 100}));
  ASSERT_EQ(y[0].dtype(), DataType::Int8);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(y[0].data<int8_t>()[i], table[static_cast<uint8_t>(x[i])]) << i;
  std::vector<uint8_t> short_table(255, 1);
  EXPECT_THROW(run_op(make_node("LookupTable", {"x", "t"}, {"y"}, {}, "com.onyx"),
                      {Tensor::from_vector<int8_t>(x, {200}), Tensor::from_vector<uint8_t>(short_table, {255})}),
               Error);
}

// A [C, 256] table holds one table per channel along `axis`: channel-last rows of 20 channels
// (a full 16-channel step and a tail) and NCHW planes; a table count that does not match fails.
TEST(ContribQuantization, LookupTablePerChannel) {
  const int64_t C = 20;
  std::vector<uint8_t> tables(C * 256), x(3 * C);
  for (int64_t c = 0; c < C; ++c)
    for (int v = 0; v < 256; ++v) tables[c * 256 + v] = static_cast<uint8_t>(v * (c + 1) + 7 * c);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i * 53 + 11);
  const Tensor t = Tensor::from_vector<uint8_t>(tables, {C, 256});
  auto last = run_op(make_node("LookupTable", {"x", "t"}, {"y"}, {{"axis", attr_int(2)}}, "com.onyx"),
                     {Tensor::from_vector<uint8_t>(x, {1, 3, C}), t});
  auto planar = run_op(make_node("LookupTable", {"x", "t"}, {"y"}, {{"axis", attr_int(1)}}, "com.onyx"),
                       {Tensor::from_vector<uint8_t>(x, {1, C, 3}), t});
  for (int64_t i = 0; i < 3 * C; ++i) {
    EXPECT_EQ(last[0].data<uint8_t>()[i], tables[(i % C) * 256 + x[i]]) << i;
    EXPECT_EQ(planar[0].data<uint8_t>()[i], tables[(i / 3) * 256 + x[i]]) << i;
  }
  EXPECT_THROW(run_op(make_node("LookupTable", {"x", "t"}, {"y"}, {{"axis", attr_int(1)}}, "com.onyx"),
                      {Tensor::from_vector<uint8_t>(x, {1, 3, C}), t}),
               Error);
}

TEST(ContribQuantization, QLinearConcatRequantizesOnlyDifferingInputs) {
  auto y = run_op(ms_node("QLinearConcat", {"ys", "yz", "x0", "s0", "z0", "x1", "s1", "z1"}, {{"axis", attr_int(1)}}),
                  {f(1.f), Tensor::scalar<uint8_t>(0), Tensor::from_vector<uint8_t>({3, 4}, {1, 2}), f(1.f),
                   Tensor::scalar<uint8_t>(0), Tensor::from_vector<uint8_t>({5}, {1, 1}), f(2.f),
                   Tensor::scalar<uint8_t>(1)});
  EXPECT_EQ(y[0].shape(), (Shape{1, 3}));
  EXPECT_EQ(to_vector<uint8_t>(y[0]), (std::vector<uint8_t>{3, 4, 8}));
}

TEST(ContribQuantization, QLinearWhere) {
  auto y = run_op(ms_node("QLinearWhere", {"c", "x", "xs", "xz", "y", "ys", "yz", "zs", "zz"}),
                  {Tensor::from_vector<bool>({true, false}, {2}), Tensor::from_vector<uint8_t>({10, 20}, {2}), f(1.f),
                   Tensor::scalar<uint8_t>(0), Tensor::from_vector<uint8_t>({30, 40}, {2}), f(2.f),
                   Tensor::scalar<uint8_t>(0), f(1.f), Tensor::scalar<uint8_t>(0)});
  EXPECT_EQ(to_vector<uint8_t>(y[0]), (std::vector<uint8_t>{10, 80}));
}

TEST(ContribQuantization, IntegerMatMulsToFloat) {
  // (3 - 1) * 2 + (5 - 1) * 4 = 20, times 0.5 * 2, plus 0.5
  auto y = run_op(ms_node("MatMulIntegerToFloat", {"a", "b", "as", "bs", "az", "bz", "bias"}),
                  {Tensor::from_vector<uint8_t>({3, 5}, {1, 2}), Tensor::from_vector<uint8_t>({2, 4}, {2, 1}), f(0.5f),
                   f(2.f), Tensor::scalar<uint8_t>(1), Tensor::scalar<uint8_t>(0), Tensor::from_vector<float>({0.5f}, {1})});
  expect_near(y[0], {20.5f});
  // A = {0, 2.55} quantizes to {0, 255} with scale 0.01
  auto d = run_op(ms_node("DynamicQuantizeMatMul", {"a", "b", "bs"}),
                  {Tensor::from_vector<float>({0.f, 2.55f}, {1, 2}), Tensor::from_vector<int8_t>({1, 2}, {2, 1}), f(1.f)});
  expect_near(d[0], {5.1f});
}

TEST(ContribQuantization, MicrosoftQuantizeDequantize) {
  auto q = run_op(ms_node("QuantizeLinear", {"x", "s", "z"}),
                  {Tensor::from_vector<float>({1.f, -1.f, 100.f}, {3}), f(0.5f), Tensor::scalar<int8_t>(0)});
  EXPECT_EQ(to_vector<int8_t>(q[0]), (std::vector<int8_t>{2, -2, 127}));
  auto d = run_op(ms_node("DequantizeLinear", {"x", "s", "z"}),
                  {Tensor::from_vector<int16_t>({-300, 20}, {2}), f(0.5f), Tensor::scalar<int16_t>(-100)});
  expect_near(d[0], {-100.f, 60.f});
}

TEST(ContribQuantization, BadInputsFail) {
  auto in = qgemm_inputs();
  in[3] = Tensor::from_vector<int8_t>({1, 0, 0, 1}, {2, 2});  // K 3 vs 2
  EXPECT_THROW(run_op(ms_node("QGemm", {"a", "as", "az", "b", "bs", "bz"}), in), Error);
  // B type differs from A
  EXPECT_THROW(run_op(ms_node("QLinearAdd", {"a", "as", "az", "b", "bs", "bz", "cs", "cz"}),
                      {Tensor::from_vector<uint8_t>({1}, {1}), f(1.f), Tensor::scalar<uint8_t>(0),
                       Tensor::from_vector<int8_t>({1}, {1}), f(1.f), Tensor::scalar<int8_t>(0), f(1.f),
                       Tensor::scalar<uint8_t>(0)}),
               Error);
  // per-tensor scale given as a vector
  EXPECT_THROW(run_op(ms_node("QLinearMul", {"a", "as", "az", "b", "bs", "bz", "cs", "cz"}),
                      {Tensor::from_vector<uint8_t>({1, 2}, {2}), Tensor::from_vector<float>({1.f, 2.f}, {2}),
                       Tensor::scalar<uint8_t>(0), Tensor::from_vector<uint8_t>({1, 2}, {2}), f(1.f),
                       Tensor::scalar<uint8_t>(0), f(1.f), Tensor::scalar<uint8_t>(0)}),
               Error);
  // float input where uint8/int8 is required
  EXPECT_THROW(run_op(ms_node("QLinearGlobalAveragePool", {"x", "xs", "xz", "ys", "yz"}),
                      {Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}), f(1.f), Tensor::scalar<uint8_t>(0), f(1.f),
                       Tensor::scalar<uint8_t>(0)}),
               Error);
  // concat shapes differ outside the axis
  EXPECT_THROW(run_op(ms_node("QLinearConcat", {"ys", "yz", "x0", "s0", "z0", "x1", "s1", "z1"}, {{"axis", attr_int(1)}}),
                      {f(1.f), Tensor::scalar<uint8_t>(0), Tensor::from_vector<uint8_t>({3, 4}, {1, 2}), f(1.f),
                       Tensor::scalar<uint8_t>(0), Tensor::from_vector<uint8_t>({5, 6}, {2, 1}), f(2.f),
                       Tensor::scalar<uint8_t>(1)}),
               Error);
  // MatMulIntegerToFloat a_scale must be a scalar
  EXPECT_THROW(run_op(ms_node("MatMulIntegerToFloat", {"a", "b", "as", "bs"}),
                      {Tensor::from_vector<uint8_t>({3, 5}, {1, 2}), Tensor::from_vector<uint8_t>({2, 4}, {2, 1}),
                       Tensor::from_vector<float>({1.f, 2.f}, {2}), f(2.f)}),
               Error);
  // QLinearWhere condition must be bool
  EXPECT_THROW(run_op(ms_node("QLinearWhere", {"c", "x", "xs", "xz", "y", "ys", "yz", "zs", "zz"}),
                      {Tensor::from_vector<uint8_t>({1}, {1}), Tensor::from_vector<uint8_t>({10}, {1}), f(1.f),
                       Tensor::scalar<uint8_t>(0), Tensor::from_vector<uint8_t>({30}, {1}), f(2.f),
                       Tensor::scalar<uint8_t>(0), f(1.f), Tensor::scalar<uint8_t>(0)}),
               Error);
}

}  // namespace
}  // namespace onyx::test

namespace onyx::test {
namespace {

// 300 products of 255 * -255 exceed float's exact-integer range, so this
// channel must take the int32 path and still give the exact sum.
TEST(ContribQuantization, QLinearConvLargeSumsStayExact) {
  const int64_t C = 300;
  Tensor x(DataType::UInt8, {1, C, 1, 1});
  Tensor w(DataType::UInt8, {1, C, 1, 1});
  for (int64_t i = 0; i < C; ++i) {
    x.data<uint8_t>()[i] = 255;
    w.data<uint8_t>()[i] = 0;
  }
  // acc = 300 * 255 * -255 = -19507500; / 195075 = -100
  auto y = run_op(make_node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}),
                  {x, Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(0), w, Tensor::scalar<float>(1.f),
                   Tensor::scalar<uint8_t>(255), Tensor::scalar<float>(195075.f), Tensor::scalar<int8_t>(0)});
  EXPECT_EQ(to_vector<int8_t>(y[0]), (std::vector<int8_t>{-100}));
}

}  // namespace
}  // namespace onyx::test

namespace onyx::test {
namespace {

TEST(ContribQuantization, QLinearAveragePoolPaddingCounts) {
  // x = {2, 4, 6} (scale 1, zp 0), kernel 2, pad 1 on both sides: windows
  // {2}, {4, 6}; averages 2 and 5 without the pad, 1 and 5 with it
  std::vector<Tensor> in = {Tensor::from_vector<uint8_t>({2, 4, 6}, {1, 1, 3}), Tensor::scalar<float>(1.f),
                            Tensor::scalar<uint8_t>(0), Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(0)};
  auto attrs = std::map<std::string, Attribute>{{"kernel_shape", attr_ints({2})}, {"pads", attr_ints({1, 1})},
                                                {"strides", attr_ints({2})}};
  auto y = run_op(make_node("QLinearAveragePool", {"x", "xs", "xz", "ys", "yz"}, {"y"}, attrs, "com.microsoft"), in);
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 2}));
  EXPECT_EQ(to_vector<uint8_t>(y[0]), (std::vector<uint8_t>{2, 5}));
  attrs["count_include_pad"] = attr_int(1);
  auto z = run_op(make_node("QLinearAveragePool", {"x", "xs", "xz", "ys", "yz"}, {"y"}, attrs, "com.microsoft"), in);
  EXPECT_EQ(to_vector<uint8_t>(z[0]), (std::vector<uint8_t>{1, 5}));
}

TEST(ContribQuantization, NhwcMaxPoolPerChannel) {
  // [1, 2, 2, 2] NHWC, 2x2 window: the max of each channel
  auto y = run_op(make_node("NhwcMaxPool", {"x"}, {"y"}, {{"kernel_shape", attr_ints({2, 2})}}, "com.microsoft"),
                  {Tensor::from_vector<int8_t>({-5, 7, 3, -8, -1, 0, 2, -2}, {1, 2, 2, 2})});
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 1, 2}));
  EXPECT_EQ(to_vector<int8_t>(y[0]), (std::vector<int8_t>{3, 7}));
  EXPECT_THROW(run_op(make_node("NhwcMaxPool", {"x"}, {"y"}, {}, "com.microsoft"),
                      {Tensor::from_vector<int8_t>({1, 2}, {1, 1, 1, 2})}),
               Error);  // no kernel_shape
}

}  // namespace
}  // namespace onyx::test

namespace onyx::test {
namespace {

TEST(ContribQuantization, QLinearSoftmaxUniformRow) {
  std::vector<Tensor> in = {Tensor::from_vector<uint8_t>({7, 7, 7, 7}, {1, 4}), Tensor::scalar<float>(0.1f),
                            Tensor::scalar<uint8_t>(0), Tensor::scalar<float>(1.f / 256), Tensor::scalar<uint8_t>(0)};
  auto y = run_op(make_node("QLinearSoftmax", {"x", "xs", "xz", "ys", "yz"}, {"y"}, {{"opset", attr_int(13)}},
                            "com.microsoft"),
                  in);
  EXPECT_EQ(to_vector<uint8_t>(y[0]), (std::vector<uint8_t>{64, 64, 64, 64}));  // 0.25 * 256
  EXPECT_THROW(run_op(make_node("QLinearSoftmax", {"x", "xs", "xz", "ys", "yz"}, {"y"}, {}, "com.microsoft"), in),
               Error);  // the opset attribute is required
}

}  // namespace
}  // namespace onyx::test

#include "cpu/quant_round.h"

namespace onyx::test {
namespace {

TEST(ContribQuantization, RequantizeRoundsHalfToEvenAndSaturates) {
  // 2.5 -> 2, 3.5 -> 4, -2.5 -> -2, 500 and -500 saturate, 1.5 -> 2 (the
  // last two elements take the scalar tail)
  const int32_t acc[6] = {5, 7, -5, 1000, -1000, 3};
  int8_t s8[6];
  requantize(acc, 6, 0.5f, 0.f, s8);
  EXPECT_EQ(std::vector<int8_t>(s8, s8 + 6), (std::vector<int8_t>{2, 4, -2, 127, -128, 2}));
  uint8_t u8[6];
  requantize(acc, 6, 0.5f, 10.f, u8);
  EXPECT_EQ(std::vector<uint8_t>(u8, u8 + 6), (std::vector<uint8_t>{12, 14, 8, 255, 0, 12}));
  EXPECT_EQ(round_half_even(-0.5f), 0.f);
  EXPECT_EQ(round_half_even(5.5f), 6.f);
}

}  // namespace
}  // namespace onyx::test
