#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "cpu/gemm.h"
#include "cpu/leading_axis_conv.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "op_test_util.h"

namespace onyx::test {

TEST(Gemm, BlockedMatchesReference) {
  for (auto [M, N, K, ta, tb] : std::vector<std::tuple<int, int, int, bool, bool>>{
           {7, 19, 13, false, false}, {7, 19, 13, true, false}, {13, 35, 300, false, true}, {1, 5, 3, true, true}}) {
    std::vector<float> A(M * K), B(K * N), C(M * N, 1.0f), R(M * N, 1.0f);
    for (int i = 0; i < M * K; ++i) A[i] = static_cast<float>((i * 7) % 11) - 5;
    for (int i = 0; i < K * N; ++i) B[i] = static_cast<float>((i * 5) % 13) - 6;
    int lda = ta ? M : K, ldb = tb ? K : N;
    gemm_f32(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, C.data(), N);
    gemm_ref<float>(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, R.data(), N);
    for (int i = 0; i < M * N; ++i) ASSERT_NEAR(C[i], R[i], 1e-3f) << M << "x" << N << "x" << K;
  }
}

TEST(Conv, Basic2DWithPaddingAndBias) {
  // x = 0..8 as 3x3, 2x2 kernel of ones, pads 1 on top/left only
  Tensor x = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 3, 3});
  Tensor w = Tensor::from_vector<float>({1, 1, 1, 1}, {1, 1, 2, 2});
  Tensor b = Tensor::from_vector<float>({10}, {1});
  auto out = run_op(make_node("Conv", {"x", "w", "b"}, {"y"}, {{"pads", attr_ints({1, 1, 0, 0})}}), {x, w, b}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 3, 3}));
  expect_near(out[0], {10, 11, 13, 13, 18, 22, 19, 30, 34});
}

TEST(Conv, StridedSameUpperAndGroups) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 4});  // 1-D, 2 channels
  Tensor w = Tensor::from_vector<float>({1, 1, 2, 2}, {2, 1, 2});                 // depthwise, k=2
  auto out = run_op(make_node("Conv", {"x", "w"}, {"y"},
                              {{"group", attr_int(2)}, {"strides", attr_ints({2})}, {"auto_pad", attr_string("SAME_UPPER")}}),
                    {x, w}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 2}));
  expect_near(out[0], {3, 7, 60, 140});
}

TEST(ConvTranspose, StrideTwo) {
  Tensor x = Tensor::from_vector<float>({1, 2}, {1, 1, 2});
  Tensor w = Tensor::from_vector<float>({1, 10, 100}, {1, 1, 3});
  auto out = run_op(make_node("ConvTranspose", {"x", "w"}, {"y"}, {{"strides", attr_ints({2})}}), {x, w}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 5}));
  expect_near(out[0], {1, 10, 102, 20, 200});
}

struct TransposeCase {
  int64_t N, C, M, group, H, W, k, stride, pad, dilation, out_pad;
};

std::vector<float> seeded(int64_t n, int seed) { return to_vector<float>(pattern({n}, seed)); }

// ConvTranspose by its definition: every input value times every tap, added at i * s + k * d - pad.
std::vector<float> conv_transpose_reference(const TransposeCase& c, const std::vector<float>& x,
                                            const std::vector<float>& w, const std::vector<float>& b, int64_t OH,
                                            int64_t OW) {
  const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
  std::vector<float> y(c.N * c.M * OH * OW);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t i = 0; i < OH * OW; ++i) y[(n * c.M + m) * OH * OW + i] = b[m];
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t ci = 0; ci < c.C; ++ci)
      for (int64_t mg = 0; mg < Mg; ++mg)
        for (int64_t h = 0; h < c.H; ++h)
          for (int64_t wi = 0; wi < c.W; ++wi)
            for (int64_t kh = 0; kh < c.k; ++kh)
              for (int64_t kw = 0; kw < c.k; ++kw) {
                const int64_t oh = h * c.stride + kh * c.dilation - c.pad, ow = wi * c.stride + kw * c.dilation - c.pad;
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                const int64_t m = ci / Cg * Mg + mg;
                y[((n * c.M + m) * OH + oh) * OW + ow] +=
                    x[((n * c.C + ci) * c.H + h) * c.W + wi] * w[((ci * Mg + mg) * c.k + kh) * c.k + kw];
              }
  return y;
}

// Both GEMM orientations (few output channels over a large input: planes per channel and tap;
// otherwise channels-last rows), groups, dilation, output_padding, bias, batch 2; the weights
// as a graph input and as a constant (packed once at load).
TEST(ConvTranspose, MatchesDefinitionInBothLayouts) {
  const std::vector<TransposeCase> cases = {
      {1, 8, 3, 1, 12, 12, 4, 2, 1, 1, 0},    // 3 channels over 144 positions: planes
      {2, 6, 4, 2, 9, 7, 3, 2, 1, 1, 1},      // grouped, output_padding: planes
      {1, 32, 20, 1, 4, 4, 4, 2, 1, 1, 0},    // 20 channels: channels-last
      {2, 12, 32, 4, 5, 3, 3, 3, 2, 2, 1},    // grouped, dilated, stride 3: channels-last
      {1, 16, 16, 1, 16, 16, 2, 2, 0, 1, 0},  // U-Net's 2x2 stride-2 upsampling: taps tile the output
      {2, 24, 40, 2, 7, 19, 2, 2, 0, 1, 0},   // tiled, grouped, 20 channels and 38 columns: partial vectors
      {1, 8, 18, 1, 5, 6, 3, 3, 0, 1, 0},     // tiled 3x3 stride 3
      {1, 16, 128, 1, 5, 64, 2, 2, 0, 1, 0},  // tiled, 128 KB of GEMM rows per input row: tasks of 2 rows
  };
  for (const auto& c : cases) {
    const int64_t Mg = c.M / c.group;
    const int64_t OH = (c.H - 1) * c.stride + (c.k - 1) * c.dilation + 1 + c.out_pad - 2 * c.pad;
    const int64_t OW = (c.W - 1) * c.stride + (c.k - 1) * c.dilation + 1 + c.out_pad - 2 * c.pad;
    std::vector<float> x = seeded(c.N * c.C * c.H * c.W, 1), w = seeded(c.C * Mg * c.k * c.k, 2), b = seeded(c.M, 3);
    std::vector<float> expected = conv_transpose_reference(c, x, w, b, OH, OW);
    const Shape x_shape = {c.N, c.C, c.H, c.W}, w_shape = {c.C, Mg, c.k, c.k};
    std::map<std::string, Attribute> attrs = {{"strides", attr_ints({c.stride, c.stride})},
                                              {"pads", attr_ints({c.pad, c.pad, c.pad, c.pad})},
                                              {"dilations", attr_ints({c.dilation, c.dilation})},
                                              {"output_padding", attr_ints({c.out_pad, c.out_pad})},
                                              {"group", attr_int(c.group)}};
    auto out = run_op(make_node("ConvTranspose", {"x", "w", "b"}, {"y"}, attrs),
                      {Tensor::from_vector<float>(x, x_shape), Tensor::from_vector<float>(w, w_shape),
                       Tensor::from_vector<float>(b, {c.M})},
                      17);
    ASSERT_EQ(out[0].shape(), (Shape{c.N, c.M, OH, OW}));
    expect_near(out[0], expected, 1e-4f);

    onnx::ModelProto m = test::make_model();
    auto* g = m.mutable_graph();
    *g->add_input() = test::tensor_info("x", onnx::TensorProto::FLOAT, x_shape);
    *g->add_output() = test::tensor_info("y", onnx::TensorProto::FLOAT, {c.N, c.M, OH, OW});
    *g->add_initializer() = test::float_tensor("w", w_shape, w);
    *g->add_initializer() = test::float_tensor("b", {c.M}, b);
    auto* node = test::add_node(g, "ConvTranspose", {"x", "w", "b"}, {"y"});
    test::add_ints_attr(node, "strides", {c.stride, c.stride});
    test::add_ints_attr(node, "pads", {c.pad, c.pad, c.pad, c.pad});
    test::add_ints_attr(node, "dilations", {c.dilation, c.dilation});
    test::add_ints_attr(node, "output_padding", {c.out_pad, c.out_pad});
    test::add_int_attr(node, "group", c.group);
    std::string bytes = test::serialize(m);
    auto session = Session::from_bytes(bytes.data(), bytes.size(), SessionOptions{});
    auto y = session->run({{"x", Value(Tensor::from_vector<float>(x, x_shape))}});
    expect_near(y[0].tensor(), expected, 1e-4f);
  }
}

// 1-D and 3-D ConvTransposes whose taps tile the output (stride == kernel): each output is the
// bias plus one input position's channels times one tap, y[m][o] = b[m] + sum_c x[c][o / k] w[c][m][o % k].
TEST(ConvTranspose, StrideEqualToKernelIn1dAnd3d) {
  for (const Shape& spatial_in : {Shape{5}, Shape{2, 3, 2}}) {
    const int64_t C = 4, M = 18, k = 2, nd = static_cast<int64_t>(spatial_in.size());
    Shape x_shape = {1, C}, w_shape = {C, M}, spatial_out;
    for (int64_t d : spatial_in) {
      x_shape.push_back(d);
      w_shape.push_back(k);
      spatial_out.push_back(d * k);
    }
    int64_t in_size = 1, out_size = 1, taps = 1;
    for (int64_t d = 0; d < nd; ++d) {
      in_size *= spatial_in[d];
      out_size *= spatial_out[d];
      taps *= k;
    }
    std::vector<float> x = seeded(C * in_size, 7), w = seeded(C * M * taps, 8), b = seeded(M, 9);
    std::vector<float> expected(M * out_size);
    for (int64_t o = 0; o < out_size; ++o) {
      int64_t in_pos = 0, tap = 0;
      for (int64_t d = 0, rest = o, in_stride = in_size, out_stride = out_size, tap_stride = taps; d < nd; ++d) {
        out_stride /= spatial_out[d];
        in_stride /= spatial_in[d];
        tap_stride /= k;
        const int64_t coord = rest / out_stride;
        rest %= out_stride;
        in_pos += coord / k * in_stride;
        tap += coord % k * tap_stride;
      }
      for (int64_t m = 0; m < M; ++m) {
        double sum = b[m];
        for (int64_t c = 0; c < C; ++c) sum += double(x[c * in_size + in_pos]) * w[(c * M + m) * taps + tap];
        expected[m * out_size + o] = static_cast<float>(sum);
      }
    }
    auto out = run_op(make_node("ConvTranspose", {"x", "w", "b"}, {"y"}, {{"strides", attr_ints(Shape(nd, k))}}),
                      {Tensor::from_vector<float>(x, x_shape), Tensor::from_vector<float>(w, w_shape),
                       Tensor::from_vector<float>(b, {M})},
                      17);
    Shape y_shape = {1, M};
    y_shape.insert(y_shape.end(), spatial_out.begin(), spatial_out.end());
    ASSERT_EQ(out[0].shape(), y_shape);
    expect_near(out[0], expected, 1e-4f);
  }
}

// Grouped 1-D convolutions with few channels per group (a Conformer's depthwise 31-tap one,
// wav2vec2's positional one) run a direct kernel: against the definition with strides,
// dilations, uneven pads, bias and rows longer than one 64-output tile, and as FusedConv with
// an activation.
TEST(Conv, GroupedOneDimensionalMatchesDefinition) {
  struct Case {
    int64_t C, M, group, L, k, stride, dilation, pad_begin, pad_end;
  };
  for (const Case& c : {Case{6, 6, 6, 140, 31, 1, 1, 15, 15}, Case{5, 5, 5, 23, 4, 2, 3, 2, 0},
                        Case{3, 3, 3, 9, 3, 3, 1, 0, 2}, Case{12, 8, 4, 70, 16, 1, 1, 8, 8},
                        Case{16, 32, 2, 33, 5, 2, 2, 4, 1}}) {
    const int64_t N = 2, Cg = c.C / c.group, Mg = c.M / c.group;
    const int64_t out = (c.L + c.pad_begin + c.pad_end - (c.k - 1) * c.dilation - 1) / c.stride + 1;
    std::vector<float> x = seeded(N * c.C * c.L, 4), w = seeded(c.M * Cg * c.k, 5), b = seeded(c.M, 6);
    std::vector<float> expected(N * c.M * out), swish(N * c.M * out);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t o = 0; o < out; ++o) {
          float acc = b[m];
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t k = 0; k < c.k; ++k) {
              const int64_t i = o * c.stride + k * c.dilation - c.pad_begin;
              if (i >= 0 && i < c.L) acc += w[(m * Cg + ci) * c.k + k] * x[(n * c.C + m / Mg * Cg + ci) * c.L + i];
            }
          expected[(n * c.M + m) * out + o] = acc;
          swish[(n * c.M + m) * out + o] = acc / (1.0f + std::exp(-acc));
        }
    std::map<std::string, Attribute> attrs = {{"group", attr_int(c.group)},
                                              {"strides", attr_ints({c.stride})},
                                              {"dilations", attr_ints({c.dilation})},
                                              {"pads", attr_ints({c.pad_begin, c.pad_end})}};
    std::vector<Tensor> inputs = {Tensor::from_vector<float>(x, {N, c.C, c.L}),
                                  Tensor::from_vector<float>(w, {c.M, Cg, c.k}), Tensor::from_vector<float>(b, {c.M})};
    ThreadPool two(2);
    auto out_conv = run_op(make_node("Conv", {"x", "w", "b"}, {"y"}, attrs), inputs, 17, &two);
    ASSERT_EQ(out_conv[0].shape(), (Shape{N, c.M, out}));
    expect_near(out_conv[0], expected, 1e-4f);
    Node fused = make_node("FusedConv", {"x", "w", "b"}, {"y"}, attrs);
    fused.domain = "com.onyx";
    fused.attributes["activation"] = attr_string("Swish");
    fused.attributes["activation_params"] = attr_floats({1.0f});
    expect_near(run_op(fused, inputs, 1)[0], swish, 1e-4f);
  }
}

// Pointwise convs with enough output positions run as one GEMM per image
// (cpu/pointwise_conv.h): 1-, 2- and 3-D, strided ones gathering their
// input first, with the bias as the GEMM's row bias; FusedConv adds a
// residual and an activation in the epilogue (Relu) or after it (LeakyRelu).
// A 1-D stem of one input channel (wav2vec2's, Whisper's), with a residual
// and each activation: without AVX-512 oneDNN runs it as im2col + GEMM, whose
// activation Onyx applies after it (DnnlConv::run returns false); values as
// the definition either way (CI runs this under ONYX_MAX_ISA=avx2 too).
TEST(Conv, FusedOneChannelStemActivations) {
  const int64_t N = 3, L = 400, K = 9, M = 16, OL = (L + 8 - K) / 2 + 1;
  const std::vector<float> x = seeded(N * L, 21), w = seeded(M * K, 22), b = seeded(M, 23), z = seeded(N * M * OL, 24);
  std::vector<float> linear(N * M * OL);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < OL; ++o) {
        double acc = b[m];
        for (int64_t k = 0; k < K; ++k) {
          const int64_t at = o * 2 - 4 + k;
          if (at >= 0 && at < L) acc += double(w[m * K + k]) * x[n * L + at];
        }
        linear[(n * M + m) * OL + o] = static_cast<float>(acc + z[(n * M + m) * OL + o]);
      }
  const std::vector<Tensor> inputs = {Tensor::from_vector<float>(x, {N, 1, L}), Tensor::from_vector<float>(w, {M, 1, K}),
                                      Tensor::from_vector<float>(b, {M}), Tensor::from_vector<float>(z, {N, M, OL})};
  const std::map<std::string, double (*)(double)> acts = {
      {"Gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"Tanh", [](double v) { return std::tanh(v); }},
      {"Relu", [](double v) { return v > 0 ? v : 0.0; }}};
  for (const auto& [act, fn] : acts) {
    Node fused = make_node("FusedConv", {"x", "w", "b", "z"}, {"y"},
                           {{"strides", attr_ints({2})}, {"pads", attr_ints({4, 4})}, {"activation", attr_string(act)}});
    fused.domain = "com.onyx";
    std::vector<float> want(linear.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(fn(linear[i]));
    ThreadPool two(2);
    for (int run = 0; run < 2; ++run) expect_near(run_op(fused, inputs, 1, &two)[0], want, 1e-5f);  // cached primitive too
  }
}

// Conv of `inputs` (x, w, b, z) without z on a pool of two against the
// definition's `linear` result of shape `ys`; then FusedConv with the
// residual z and Relu (applied in the GEMM's epilogue) or LeakyRelu (after it).
void expect_conv_and_fused_match(const std::map<std::string, Attribute>& attrs, const std::vector<Tensor>& inputs,
                                 const Shape& ys, const std::vector<float>& linear, const std::vector<float>& z) {
  ThreadPool two(2);
  const auto conv =
      run_op(make_node("Conv", {"x", "w", "b"}, {"y"}, attrs), {inputs[0], inputs[1], inputs[2]}, 17, &two);
  ASSERT_EQ(conv[0].shape(), ys);
  expect_near(conv[0], linear, 1e-4f);
  for (const char* act : {"Relu", "LeakyRelu"}) {
    Node fused = make_node("FusedConv", {"x", "w", "b", "z"}, {"y"}, attrs);
    fused.domain = "com.onyx";
    fused.attributes["activation"] = attr_string(act);
    if (std::string(act) == "LeakyRelu") fused.attributes["activation_params"] = attr_floats({0.1f});
    std::vector<float> want(linear.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const float v = linear[i] + z[i];
      want[i] = v > 0 ? v : (std::string(act) == "Relu" ? 0.0f : 0.1f * v);
    }
    expect_near(run_op(fused, inputs, 1, &two)[0], want, 1e-4f);
  }
}

TEST(Conv, PointwiseAsGemmMatchesDefinition) {
  struct Case {
    std::vector<int64_t> in, strides;
    int64_t C, M;
  };
  for (const Case& c : {Case{{700}, {1}, 5, 7}, Case{{1500}, {2}, 3, 4}, Case{{24, 30}, {1, 1}, 3, 9},
                        Case{{8, 16, 16}, {1, 2, 2}, 4, 6}, Case{{8, 24, 35}, {2, 2, 2}, 6, 5}}) {
    const int64_t N = 2, nd = static_cast<int64_t>(c.in.size());
    std::vector<int64_t> out(nd);
    int64_t is = 1, os = 1;
    for (int64_t d = 0; d < nd; ++d) {
      out[d] = (c.in[d] - 1) / c.strides[d] + 1;
      is *= c.in[d];
      os *= out[d];
    }
    ASSERT_GE(os, 512) << "a case too small for the GEMM path";
    const std::vector<float> x = seeded(N * c.C * is, 11), w = seeded(c.M * c.C, 12), b = seeded(c.M, 13),
                             z = seeded(N * c.M * os, 14);
    std::vector<float> linear(N * c.M * os);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t o = 0; o < os; ++o) {
          int64_t at = 0;  // the input position output o reads
          for (int64_t d = nd - 1, rem = o, scale = 1; d >= 0; --d) {
            at += rem % out[d] * c.strides[d] * scale;
            rem /= out[d];
            scale *= c.in[d];
          }
          double acc = b[m];
          for (int64_t ci = 0; ci < c.C; ++ci) acc += double(w[m * c.C + ci]) * x[(n * c.C + ci) * is + at];
          linear[(n * c.M + m) * os + o] = static_cast<float>(acc);
        }
    Shape xs = {N, c.C}, ws = {c.M, c.C}, ys = {N, c.M};
    for (int64_t d = 0; d < nd; ++d) {
      xs.push_back(c.in[d]);
      ws.push_back(1);
      ys.push_back(out[d]);
    }
    std::vector<Tensor> inputs = {Tensor::from_vector<float>(x, xs), Tensor::from_vector<float>(w, ws),
                                  Tensor::from_vector<float>(b, {c.M}), Tensor::from_vector<float>(z, ys)};
    const std::map<std::string, Attribute> attrs = {{"strides", attr_ints(c.strides)}};
    expect_conv_and_fused_match(attrs, inputs, ys, linear, z);
  }
}

// Convs whose kernel spans only the first spatial axis, over planes of at
// least 2048 positions, run as one GEMM per output plane over the input
// planes their taps read (cpu/leading_axis_conv.h): a video model's (3,1,1)
// temporal conv, one with depth stride and dilation whose first and last
// output planes read only padding, a 2-D (k,1) one, and one with more
// channels than one K block of the GEMM. As Conv, and as FusedConv with a
// residual and Relu (in the GEMM's epilogue) or LeakyRelu (after it).
TEST(Conv, LeadingAxisAsGemmMatchesDefinition) {
  struct Case {
    std::vector<int64_t> in;
    int64_t C, M, k, stride, dilation, pad_begin, pad_end;
  };
  for (const Case& c : {Case{{4, 48, 48}, 6, 5, 3, 1, 1, 1, 1}, Case{{5, 40, 52}, 3, 7, 2, 2, 3, 4, 6},
                        Case{{3, 2100}, 4, 3, 3, 1, 1, 0, 2}, Case{{2, 64, 32}, 1100, 2, 2, 1, 1, 1, 0}}) {
    ASSERT_TRUE(runs_as_leading_axis_gemm(
        [&] {
          std::vector<int64_t> ws = {c.M, c.C, c.k};
          ws.resize(c.in.size() + 2, 1);
          return ws;
        }(),
        [&] {
          SpatialAttrs a;
          a.strides.assign(c.in.size(), 1);
          a.strides[0] = c.stride;
          a.dilations.assign(c.in.size(), 1);
          a.dilations[0] = c.dilation;
          a.pads.assign(2 * c.in.size(), 0);
          a.pads[0] = c.pad_begin;
          a.pads[c.in.size()] = c.pad_end;
          std::vector<int64_t> kernel(c.in.size(), 1);
          kernel[0] = c.k;
          return compute_geometry(c.in, a, kernel);
        }(),
        1))
        << "a case that does not take the path under test";
    const int64_t N = 2, nd = static_cast<int64_t>(c.in.size());
    const int64_t out0 = (c.in[0] + c.pad_begin + c.pad_end - (c.k - 1) * c.dilation - 1) / c.stride + 1;
    int64_t P = 1;
    for (int64_t d = 1; d < nd; ++d) P *= c.in[d];
    const std::vector<float> x = seeded(N * c.C * c.in[0] * P, 31), w = seeded(c.M * c.C * c.k, 32),
                             b = seeded(c.M, 33), z = seeded(N * c.M * out0 * P, 34);
    std::vector<float> linear(N * c.M * out0 * P);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t o = 0; o < out0; ++o)
          for (int64_t p = 0; p < P; ++p) {
            double acc = b[m];
            for (int64_t ci = 0; ci < c.C; ++ci)
              for (int64_t k = 0; k < c.k; ++k) {
                const int64_t i = o * c.stride + k * c.dilation - c.pad_begin;
                if (i >= 0 && i < c.in[0])
                  acc += double(w[(m * c.C + ci) * c.k + k]) * x[((n * c.C + ci) * c.in[0] + i) * P + p];
              }
            linear[((n * c.M + m) * out0 + o) * P + p] = static_cast<float>(acc);
          }
    Shape xs = {N, c.C}, ws = {c.M, c.C, c.k}, ys = {N, c.M, out0};
    std::vector<int64_t> strides = {c.stride}, dilations = {c.dilation}, pads = {c.pad_begin};
    for (int64_t d = 0; d < nd; ++d) xs.push_back(c.in[d]);
    for (int64_t d = 1; d < nd; ++d) {
      ws.push_back(1);
      ys.push_back(c.in[d]);
      strides.push_back(1);
      dilations.push_back(1);
      pads.push_back(0);
    }
    pads.push_back(c.pad_end);
    pads.resize(2 * nd, 0);
    std::vector<Tensor> inputs = {Tensor::from_vector<float>(x, xs), Tensor::from_vector<float>(w, ws),
                                  Tensor::from_vector<float>(b, {c.M}), Tensor::from_vector<float>(z, ys)};
    const std::map<std::string, Attribute> attrs = {
        {"strides", attr_ints(strides)}, {"dilations", attr_ints(dilations)}, {"pads", attr_ints(pads)}};
    expect_conv_and_fused_match(attrs, inputs, ys, linear, z);
  }
}

TEST(ConvInteger, ZeroPoints) {
  Tensor x = Tensor::from_vector<uint8_t>({2, 3, 4, 5}, {1, 1, 2, 2});
  Tensor w = Tensor::from_vector<uint8_t>({1, 1, 1, 1}, {1, 1, 2, 2});
  Tensor xz = Tensor::scalar<uint8_t>(1);
  auto out = run_op(make_node("ConvInteger", {"x", "w", "xz"}, {"y"}), {x, w, xz}, 10);
  EXPECT_EQ(out[0].dtype(), DataType::Int32);
  EXPECT_EQ(out[0].data<int32_t>()[0], 10);
}

TEST(Conv, ChannelMismatchThrows) {
  Tensor x = Tensor::zeros(DataType::Float, {1, 3, 4, 4});
  Tensor w = Tensor::zeros(DataType::Float, {2, 2, 3, 3});
  EXPECT_THROW(run_op(make_node("Conv", {"x", "w"}, {"y"}), {x, w}, 11), onyx::Error);
}

}  // namespace onyx::test
