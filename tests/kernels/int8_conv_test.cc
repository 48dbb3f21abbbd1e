// The fast 8-bit convolution (QLinearConv, ConvInteger) against plain loops:
// exact equality on odd shapes, groups, depthwise, strides, dilations, pads.
#include <cmath>
#include <random>

#include "base/thread_pool.h"
#include "cpu/int8_conv.h"
#include "cpu/quant_round.h"
#include "op_test_util.h"

namespace onyx::test {
namespace {

struct ConvCase {
  int64_t N, C, H, W, M, group, KH, KW;  // H == 0: a 1-D convolution (rank-3 input)
  std::vector<int64_t> strides, dilations, pads;
  bool x_signed, w_signed, y_signed;
  bool per_channel;  // per-output-channel weight scales and non-zero zero points
  bool narrow = false;  // every w - w_zp fits a signed byte (the depthwise kernel's 4-tap groups)
};

std::vector<ConvCase> cases() {
  return {
      {1, 3, 11, 13, 5, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true, false, false},
      {2, 6, 9, 7, 9, 3, 3, 2, {2, 1}, {1, 2}, {0, 1, 2, 0}, true, true, true, true},        // groups, asymmetric
      {1, 7, 10, 9, 7, 7, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true, false, true},     // depthwise
      {2, 5, 13, 11, 5, 5, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, false, false, false},   // depthwise, stride 2
      {1, 4, 9, 9, 4, 4, 5, 5, {3, 2}, {2, 1}, {4, 2, 3, 1}, false, true, true, true},       // depthwise, odd strides
      {1, 6, 8, 8, 3, 3, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, false, false, true},     // 2 inputs per output
      {1, 20, 7, 9, 19, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, true, false, true},    // plain 1x1
      {2, 10, 7, 9, 66, 2, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, true, false},     // grouped 1x1
      {1, 9, 9, 11, 17, 1, 1, 1, {2, 2}, {1, 1}, {0, 0, 0, 0}, false, true, false, true},    // strided 1x1
      {1, 3, 17, 19, 70, 1, 7, 7, {2, 2}, {1, 1}, {3, 3, 3, 3}, false, true, false, true},   // stem-like
      {1, 24, 5, 5, 200, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, true},    // channel parts
      {1, 16, 4, 4, 150, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true, true, true},    // the same through im2col
      {2, 5, 0, 23, 6, 1, 1, 4, {1, 3}, {1, 2}, {0, 2, 0, 1}, false, true, false, true},     // 1-D
      {1, 4, 0, 17, 4, 4, 1, 3, {1, 2}, {1, 1}, {0, 1, 0, 1}, true, true, true, true},       // 1-D depthwise
      {1, 3, 5, 131, 3, 3, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, true, false, true},    // wide rows: vector widening
      {1, 2, 4, 150, 2, 2, 3, 3, {1, 2}, {1, 1}, {0, 2, 1, 0}, true, true, true, false},
      {1, 2, 3, 97, 2, 2, 3, 3, {1, 1}, {1, 2}, {1, 3, 0, 2}, false, true, false, true},
      {2, 40, 9, 8, 40, 40, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, false, false, true},  // 16-channel blocks + tail
      {1, 35, 7, 7, 35, 35, 3, 3, {2, 2}, {1, 1}, {0, 1, 1, 0}, true, true, true, true},
      {1, 48, 6, 5, 48, 48, 5, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, false, true, false, false},
      // Depthwise with narrow weights: 64-channel blocks and tails, runs of 4 pixels and single ones.
      {1, 72, 9, 11, 72, 72, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true, false, true, true},
      {2, 64, 6, 13, 64, 64, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, false, true, true, true},
      {1, 20, 8, 17, 20, 20, 5, 5, {1, 1}, {2, 2}, {4, 4, 4, 4}, true, true, true, false, true},
      {1, 130, 0, 23, 130, 130, 1, 3, {1, 1}, {1, 1}, {0, 1, 0, 1}, false, true, false, true, true},
      {1, 16, 4, 3, 16, 16, 3, 3, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, false, true, true},  // no inside run
      // A block and two 16-channel tails; a 60-channel masked block; tails only; row groups of 1-4.
      {1, 96, 5, 14, 96, 96, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false, true, true},
      {1, 124, 6, 7, 124, 124, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true, true, true, true},
      {1, 27, 7, 10, 27, 27, 5, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, false, false, false, true, true},
  };
}

struct Built {
  Tensor x, w, wz, ws, bias;
  Shape y_shape;
  std::vector<int32_t> acc;  // the reference int32 sums before the bias, [N, M, OH, OW]
};

template <class T>
Tensor random_8bit(const Shape& s, std::mt19937& rng) {
  Tensor t = Tensor::zeros(std::is_signed_v<T> ? DataType::Int8 : DataType::UInt8, s);
  std::uniform_int_distribution<int> d(std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max());
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(d(rng));
  return t;
}

Tensor random_8bit(bool is_signed, const Shape& s, std::mt19937& rng) {
  return is_signed ? random_8bit<int8_t>(s, rng) : random_8bit<uint8_t>(s, rng);
}

int32_t value_at(const Tensor& t, int64_t i) { return static_cast<int32_t>(t.int_at(i)); }

// Weights within a signed byte of their zero point: int8 in [-64, 63] around
// a zero point in [-32, 31], uint8 in [64, 191] around 128 (or 0 when it is
// per tensor, then the weights lie in [0, 127]).
void narrow_weights(bool is_signed, Tensor& w, Tensor& wz) {
  auto* wb = static_cast<uint8_t*>(w.raw());
  auto* zb = static_cast<uint8_t*>(wz.raw());
  const bool per_channel = wz.numel() > 1;
  for (int64_t i = 0; i < w.numel(); ++i)
    wb[i] = is_signed ? static_cast<uint8_t>(static_cast<int8_t>(wb[i]) / 2) : wb[i] / 2 + (per_channel ? 64 : 0);
  if (per_channel)
    for (int64_t i = 0; i < wz.numel(); ++i)
      zb[i] = is_signed ? static_cast<uint8_t>(static_cast<int8_t>(zb[i]) / 4) : 128;
}

// Builds the inputs of a case and the plain-loop sums.
Built build(const ConvCase& c, int32_t xz, std::mt19937& rng) {
  Built b;
  const bool one_d = c.H == 0;
  const int64_t H = one_d ? 1 : c.H, Cg = c.C / c.group, Mg = c.M / c.group;
  Shape xs = one_d ? Shape{c.N, c.C, c.W} : Shape{c.N, c.C, c.H, c.W};
  Shape wsh = one_d ? Shape{c.M, Cg, c.KW} : Shape{c.M, Cg, c.KH, c.KW};
  b.x = random_8bit(c.x_signed, xs, rng);
  b.w = random_8bit(c.w_signed, wsh, rng);
  b.wz = random_8bit(c.w_signed, c.per_channel ? Shape{c.M} : Shape{}, rng);
  if (!c.per_channel) std::memset(b.wz.raw(), 0, 1);
  if (c.narrow) narrow_weights(c.w_signed, b.w, b.wz);
  b.ws = Tensor::zeros(DataType::Float, c.per_channel ? Shape{c.M} : Shape{});
  for (int64_t m = 0; m < b.ws.numel(); ++m) b.ws.data<float>()[m] = 0.0007f * static_cast<float>(m + 3);
  b.bias = Tensor::zeros(DataType::Int32, {c.M});
  for (int64_t m = 0; m < c.M; ++m) b.bias.data<int32_t>()[m] = static_cast<int32_t>(m * 977 % 4001) - 2000;
  const int64_t sh = one_d ? 1 : c.strides[0], sw = c.strides.back(), dh = one_d ? 1 : c.dilations[0],
                dw = c.dilations.back();
  const int64_t pt = one_d ? 0 : c.pads[0], pl = one_d ? c.pads[0] : c.pads[1];
  const int64_t pb = one_d ? 0 : c.pads[2], pr = one_d ? c.pads[1] : c.pads[3];
  const int64_t OH = (H + pt + pb - (c.KH - 1) * dh - 1) / sh + 1, OW = (c.W + pl + pr - (c.KW - 1) * dw - 1) / sw + 1;
  b.y_shape = one_d ? Shape{c.N, c.M, OW} : Shape{c.N, c.M, OH, OW};
  b.acc.assign(static_cast<size_t>(c.N * c.M * OH * OW), 0);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int32_t sum = 0;
          const int64_t gi = m / Mg;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < c.KH; ++kh)
              for (int64_t kw = 0; kw < c.KW; ++kw) {
                const int64_t ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= c.W) continue;
                const int32_t xv = value_at(b.x, ((n * c.C + gi * Cg + ci) * H + ih) * c.W + iw) - xz;
                const int32_t wv = value_at(b.w, ((m * Cg + ci) * c.KH + kh) * c.KW + kw) -
                                   value_at(b.wz, b.wz.numel() == 1 ? 0 : m);
                sum += xv * wv;
              }
          b.acc[((n * c.M + m) * OH + oh) * OW + ow] = sum;
        }
  return b;
}

std::map<std::string, Attribute> attrs_of(const ConvCase& c) {
  const bool one_d = c.H == 0;
  return {{"group", attr_int(c.group)},
          {"strides", attr_ints(one_d ? std::vector<int64_t>{c.strides.back()} : c.strides)},
          {"dilations", attr_ints(one_d ? std::vector<int64_t>{c.dilations.back()} : c.dilations)},
          {"pads", attr_ints(one_d ? std::vector<int64_t>{c.pads[0], c.pads[1]} : c.pads)}};
}

Tensor scalar_8bit(bool is_signed, int32_t v) {
  return is_signed ? Tensor::scalar<int8_t>(static_cast<int8_t>(v)) : Tensor::scalar<uint8_t>(static_cast<uint8_t>(v));
}

TEST(Int8Conv, QLinearConvMatchesPlainLoop) {
  std::mt19937 rng(7);
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
    for (const ConvCase& c : cases()) {
      const int32_t xz = c.x_signed ? -3 : 131, yz = c.y_signed ? 5 : 120;
      Built b = build(c, xz, rng);
      const float xs = 0.02f, ys = 0.011f;
      auto node = make_node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, attrs_of(c));
      auto y = run_op(node,
                      {b.x, Tensor::scalar<float>(xs), scalar_8bit(c.x_signed, xz), b.w, b.ws, b.wz,
                       Tensor::scalar<float>(ys), scalar_8bit(c.y_signed, yz), b.bias},
                      10, p);
      ASSERT_EQ(y[0].shape(), b.y_shape);
      const int64_t per_m = y[0].numel() / (c.N * c.M);
      const float lo = c.y_signed ? -128.f : 0.f, hi = c.y_signed ? 127.f : 255.f;
      for (int64_t i = 0; i < y[0].numel(); ++i) {
        const int64_t m = i / per_m % c.M;
        const float mult = xs * b.ws.data<float>()[b.ws.numel() == 1 ? 0 : m] / ys;
        const int32_t acc = b.acc[i] + b.bias.data<int32_t>()[m];
        const float q = std::min(std::max(std::nearbyint(static_cast<float>(acc) * mult) + static_cast<float>(yz), lo), hi);
        ASSERT_EQ(y[0].int_at(i), static_cast<int64_t>(q)) << "case C=" << c.C << " M=" << c.M << " group=" << c.group
                                                           << " at " << i;
      }
    }
}

// [N, C, spatial...] -> [N, spatial..., C] for 8-bit tensors, and back when to_last is false.
Tensor move_channels(const Tensor& t, bool to_last) {
  const Shape& s = t.shape();
  const int64_t N = s[0], C = to_last ? s[1] : s.back(), HW = t.numel() / (N * C);
  Shape out = {N};
  if (to_last) {
    out.insert(out.end(), s.begin() + 2, s.end());
    out.push_back(C);
  } else {
    out.push_back(C);
    out.insert(out.end(), s.begin() + 1, s.end() - 1);
  }
  Tensor r = Tensor::zeros(t.dtype(), out);
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = static_cast<uint8_t*>(r.raw());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < HW; ++p) {
        const int64_t chw = (n * C + c) * HW + p, hwc = (n * HW + p) * C + c;
        if (to_last) dst[hwc] = src[chw];
        else dst[chw] = src[hwc];
      }
  return r;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw());
  return {p, p + t.numel()};
}

// com.microsoft QLinearConv with channels_last: the NHWC output is the
// channels-first op's output with its channels moved last, byte for byte.
TEST(Int8Conv, ChannelsLastQLinearConvMatchesChannelsFirst) {
  std::mt19937 rng(5);
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
    for (const ConvCase& c : cases()) {
      const int32_t xz = c.x_signed ? 7 : 140, yz = c.y_signed ? -4 : 100;
      Built b = build(c, xz, rng);
      std::vector<Tensor> inputs = {b.x, Tensor::scalar<float>(0.03f), scalar_8bit(c.x_signed, xz), b.w, b.ws, b.wz,
                                    Tensor::scalar<float>(0.02f), scalar_8bit(c.y_signed, yz), b.bias};
      auto want = run_op(make_node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"},
                                   attrs_of(c)),
                         inputs, 10, p);
      auto attrs = attrs_of(c);
      attrs["channels_last"] = attr_int(1);
      inputs[0] = move_channels(b.x, true);
      auto got = run_op(make_node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, attrs,
                                  "com.microsoft"),
                        inputs, 1, p);
      ASSERT_EQ(got[0].shape(), move_channels(want[0], true).shape());
      EXPECT_EQ(bytes_of(move_channels(got[0], false)), bytes_of(want[0]))
          << "case C=" << c.C << " M=" << c.M << " group=" << c.group;
    }
}

// The int32 sums of channel-last input, from every kernel family this CPU runs.
TEST(Int8Conv, ChannelsLastSumsMatchPlainLoopOnEveryIsa) {
  std::mt19937 rng(9);
  std::vector<Int8Isa> isas = {Int8Isa::Scalar};
  if (int8_gemm_best_isa() == Int8Isa::Avx512Vnni) isas.push_back(Int8Isa::Avx2);  // the 2-tap depthwise kernel
  if (int8_gemm_best_isa() == Int8Isa::Avx512Vnni) isas.push_back(Int8Isa::AvxVnni);  // as Avx2 without AVX-VNNI
  if (int8_gemm_best_isa() != Int8Isa::Scalar) isas.push_back(int8_gemm_best_isa());
  int run = 0;
  for (Int8Isa isa : isas)
    for (const ConvCase& c : cases()) {
      const int32_t xz = c.x_signed ? -11 : 99;
      Built b = build(c, xz, rng);
      const bool one_d = c.H == 0;
      std::vector<int64_t> in_sp = one_d ? std::vector<int64_t>{c.W} : std::vector<int64_t>{c.H, c.W};
      std::vector<int64_t> ksp = one_d ? std::vector<int64_t>{c.KW} : std::vector<int64_t>{c.KH, c.KW};
      SpatialAttrs sa;
      sa.strides = one_d ? std::vector<int64_t>{c.strides.back()} : c.strides;
      sa.dilations = one_d ? std::vector<int64_t>{c.dilations.back()} : c.dilations;
      sa.pads = one_d ? std::vector<int64_t>{c.pads[0], c.pads[1]} : c.pads;
      const SpatialGeometry g = compute_geometry(in_sp, sa, ksp);
      const int64_t P = g.out_size();
      // Depthwise weights planned with their zero points at load (every other run) or per run.
      const bool planned = ++run % 2 == 1;
      auto w = prepare_int8_conv_weights(&b.w, c.group, planned ? &b.wz : nullptr);
      EXPECT_EQ(w->depthwise != nullptr, planned && c.group == c.C && c.group == c.M);
      std::vector<int32_t> wzp;
      for (int64_t m = 0; m < b.wz.numel(); ++m) wzp.push_back(value_at(b.wz, m));
      const Tensor x = move_channels(b.x, true);
      std::vector<int32_t> got(b.acc.size(), -1);
      Int8ConvSink sink;
      sink.fn = [&](int64_t n, int64_t m0, int64_t m1, int64_t p0, int64_t count, int32_t* acc, int64_t ms,
                    int64_t ps) {
        for (int64_t m = m0; m < m1; ++m)
          for (int64_t i = 0; i < count; ++i) got[(n * c.M + m) * P + p0 + i] = acc[(m - m0) * ms + i * ps];
      };
      int8_conv(Int8ConvInput{x.raw(), c.x_signed, xz, c.N, c.C, true}, g, *w, wzp, sink, nullptr, isa);
      EXPECT_EQ(got, b.acc) << "case C=" << c.C << " M=" << c.M << " group=" << c.group << " isa "
                            << static_cast<int>(isa);
    }
}

TEST(Int8Conv, ConvIntegerMatchesPlainLoop) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
    for (const ConvCase& c : cases()) {
      const int32_t xz = c.x_signed ? 9 : 77;
      Built b = build(c, xz, rng);
      auto node = make_node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, attrs_of(c));
      auto y = run_op(node, {b.x, b.w, scalar_8bit(c.x_signed, xz), b.wz}, 10, p);
      ASSERT_EQ(y[0].shape(), b.y_shape);
      EXPECT_EQ(to_vector<int32_t>(y[0]), b.acc) << "case C=" << c.C << " M=" << c.M << " group=" << c.group;
    }
}

// 3-D convolutions (quantized video nets and volume U-Nets): several output channels per group
// run as the GEMM on 3-D im2col rows, one per group (depthwise) keeps the generic loop. The
// sums and requantized bytes must equal a plain 3-D loop.
TEST(Int8Conv, ThreeDimensionalConvolutionsMatchPlainLoop) {
  struct Case3 {
    int64_t C, M, group, D, H, W, KD, KH, KW;
    std::vector<int64_t> strides, dilations, pads;
  };
  const std::vector<Case3> cases3 = {
      {4, 6, 2, 5, 6, 7, 3, 3, 3, {2, 1, 1}, {1, 2, 1}, {1, 0, 2, 0, 1, 1}},  // groups, strides, dilations, pads
      {5, 9, 1, 4, 3, 5, 1, 1, 1, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}},  // pointwise: the input is the GEMM's A
      {3, 3, 3, 4, 5, 4, 3, 3, 3, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},  // depthwise: the generic loop
  };
  std::mt19937 rng(29);
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
    for (const Case3& c : cases3) {
      const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
      Tensor x = random_8bit(false, {1, c.C, c.D, c.H, c.W}, rng);
      Tensor w = random_8bit(true, {c.M, Cg, c.KD, c.KH, c.KW}, rng);
      const int32_t xz = 119, wz = 0;
      const int64_t in[3] = {c.D, c.H, c.W}, k[3] = {c.KD, c.KH, c.KW};
      int64_t out[3];
      for (int d = 0; d < 3; ++d)
        out[d] = (in[d] + c.pads[d] + c.pads[d + 3] - (k[d] - 1) * c.dilations[d] - 1) / c.strides[d] + 1;
      std::vector<int32_t> ref(static_cast<size_t>(c.M * out[0] * out[1] * out[2]), 0);
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t o = 0; o < out[0] * out[1] * out[2]; ++o) {
          const int64_t od = o / (out[1] * out[2]), oh = o / out[2] % out[1], ow = o % out[2];
          int32_t sum = 0;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t t = 0; t < c.KD * c.KH * c.KW; ++t) {
              const int64_t kd = t / (c.KH * c.KW), kh = t / c.KW % c.KH, kw = t % c.KW;
              const int64_t id = od * c.strides[0] - c.pads[0] + kd * c.dilations[0];
              const int64_t ih = oh * c.strides[1] - c.pads[1] + kh * c.dilations[1];
              const int64_t iw = ow * c.strides[2] - c.pads[2] + kw * c.dilations[2];
              if (id < 0 || id >= c.D || ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
              const int64_t ch = m / Mg * Cg + ci;
              sum += (value_at(x, ((ch * c.D + id) * c.H + ih) * c.W + iw) - xz) *
                     (value_at(w, (m * Cg + ci) * c.KD * c.KH * c.KW + t) - wz);
            }
          ref[m * out[0] * out[1] * out[2] + o] = sum;
        }
      const std::map<std::string, Attribute> attrs = {{"group", attr_int(c.group)},
                                                      {"strides", attr_ints(c.strides)},
                                                      {"dilations", attr_ints(c.dilations)},
                                                      {"pads", attr_ints(c.pads)}};
      auto sums = run_op(make_node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, attrs),
                         {x, w, Tensor::scalar<uint8_t>(xz), Tensor::scalar<int8_t>(wz)}, 10, p);
      ASSERT_EQ(sums[0].shape(), (Shape{1, c.M, out[0], out[1], out[2]}));
      EXPECT_EQ(to_vector<int32_t>(sums[0]), ref) << "C=" << c.C << " M=" << c.M << " group=" << c.group;
      const float mult = 0.02f * 0.003f / 0.05f;
      auto y = run_op(make_node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, attrs),
                      {x, Tensor::scalar<float>(0.02f), Tensor::scalar<uint8_t>(xz), w, Tensor::scalar<float>(0.003f),
                       Tensor::scalar<int8_t>(wz), Tensor::scalar<float>(0.05f), Tensor::scalar<uint8_t>(100)},
                      10, p);
      for (size_t i = 0; i < ref.size(); ++i) {
        const float q = std::min(std::max(std::nearbyint(static_cast<float>(ref[i]) * mult) + 100.f, 0.f), 255.f);
        ASSERT_EQ(y[0].int_at(static_cast<int64_t>(i)), static_cast<int64_t>(q)) << "C=" << c.C << " at " << i;
      }
    }
}

TEST(Int8Conv, RequantizeAndTransposeHelpers) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> d(-300000, 300000);
  for (int64_t n : {1, 15, 16, 17, 37, 100}) {
    std::vector<int32_t> acc(n), bias(n);
    std::vector<float> mult(n);
    for (int64_t i = 0; i < n; ++i) {
      acc[i] = d(rng);
      bias[i] = d(rng) / 10;
      mult[i] = 0.0001f * static_cast<float>(i % 7 + 1);
    }
    for (bool is_signed : {false, true}) {
      std::vector<uint8_t> got(n);
      requantize_8bit(acc.data(), n, bias.data(), mult.data(), true, 3.f, is_signed, got.data());
      // the same values as rows of a block with per-column parameters (20 columns: whole vectors and a tail)
      const int64_t cols = n % 20 == 0 ? 20 : n % 5 == 0 ? 5 : 1, rows = n / cols;
      std::vector<int32_t> col_bias(bias.begin(), bias.begin() + cols);
      std::vector<float> col_mult(mult.begin(), mult.begin() + cols);
      std::vector<uint8_t> block(rows * (cols + 3), 0);
      requantize_rows_8bit(acc.data(), rows, cols, cols, col_bias.data(), col_mult.data(), 3.f, is_signed,
                           block.data(), cols + 3);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          std::vector<uint8_t> one(1);
          requantize_8bit(acc.data() + r * cols + c, 1, &col_bias[c], &col_mult[c], false, 3.f, is_signed, one.data());
          ASSERT_EQ(block[r * (cols + 3) + c], one[0]) << r << "," << c;
        }
      for (int64_t i = 0; i < n; ++i) {
        const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
        const float q = std::min(std::max(std::nearbyint(static_cast<float>(acc[i] + bias[i]) * mult[i]) + 3.f, lo), hi);
        ASSERT_EQ(got[i], static_cast<uint8_t>(static_cast<int32_t>(q))) << i;
      }
    }
  }
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{16, 16}, {33, 47}, {5, 70}, {70, 3}, {35, 150}, {16, 64}}) {
    std::vector<uint8_t> src(rows * (cols + 2)), got(cols * (rows + 1), 0), want(cols * (rows + 1), 0);
    for (auto& v : src) v = static_cast<uint8_t>(rng());
    transpose_8bit(src.data(), rows, cols, cols + 2, got.data(), rows + 1);
    transpose_block(src.data(), rows, cols, cols + 2, want.data(), rows + 1);
    EXPECT_EQ(got, want) << rows << "x" << cols;
  }
}

}  // namespace
}  // namespace onyx::test
