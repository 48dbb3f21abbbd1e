#include <cmath>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor f(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, s); }

TEST(RNN, ForwardReverseBidirectional) {
  auto x = f({1, 2}, {2, 1, 1});
  auto fw = run_op(make_node("RNN", {"x", "w", "r"}, {"y", "yh"},
                             {{"hidden_size", attr_int(1)}}),
                   {x, f({0.5f}, {1, 1, 1}), f({0.25f}, {1, 1, 1})}, 14);
  // default tanh: h1 = tanh(0.5), h2 = tanh(1 + 0.25 h1)
  float h1 = std::tanh(0.5f), h2 = std::tanh(1 + 0.25f * h1);
  EXPECT_EQ(fw[0].shape(), (Shape{2, 1, 1, 1}));
  expect_near(fw[0], {h1, h2});
  expect_near(fw[1], {h2});
  Attribute relu2;
  relu2.type = AttrType::Strings;
  relu2.strings = {"Relu", "Relu"};
  auto bi = run_op(make_node("RNN", {"x", "w", "r"}, {"y", "yh"},
                             {{"hidden_size", attr_int(1)}, {"direction", attr_string("bidirectional")},
                              {"activations", relu2}}),
                   {x, f({0.5f, 0.5f}, {2, 1, 1}), f({0.25f, 0.25f}, {2, 1, 1})}, 14);
  EXPECT_EQ(bi[0].shape(), (Shape{2, 2, 1, 1}));
  expect_near(bi[0], {0.5f, 0.75f, 1.125f, 1.0f});
  expect_near(bi[1], {1.125f, 0.75f});
}

TEST(RNN, SequenceLensAndLayout) {
  // batch 2, seq 2, lens {2, 1}; identity-ish weights with Relu
  Attribute relu;
  relu.type = AttrType::Strings;
  relu.strings = {"Relu"};
  auto x = f({1, 10, 2, 20}, {2, 2, 1});  // [seq, batch, in]
  auto r = run_op(make_node("RNN", {"x", "w", "r", "", "sl"}, {"y", "yh"},
                            {{"hidden_size", attr_int(1)}, {"activations", relu}}),
                  {x, f({1}, {1, 1, 1}), f({1}, {1, 1, 1}), Tensor(), Tensor::from_vector<int32_t>({2, 1}, {2})}, 14);
  // batch 0: 1, 3; batch 1: 10, then padded
  expect_near(r[0], {1, 10, 3, 0});
  expect_near(r[1], {3, 10});
  auto xb = f({1, 2, 10, 20}, {2, 2, 1});  // [batch, seq, in]
  auto rb = run_op(make_node("RNN", {"x", "w", "r"}, {"y", "yh"},
                             {{"hidden_size", attr_int(1)}, {"activations", relu}, {"layout", attr_int(1)}}),
                   {xb, f({1}, {1, 1, 1}), f({1}, {1, 1, 1})}, 14);
  EXPECT_EQ(rb[0].shape(), (Shape{2, 2, 1, 1}));
  expect_near(rb[0], {1, 3, 10, 30});
  EXPECT_EQ(rb[1].shape(), (Shape{2, 1, 1}));
  expect_near(rb[1], {3, 30});
}

TEST(GRU, ZeroWeights) {
  // z = r = 0.5, candidate tanh(0) = 0: H = 0.5 * H0
  auto r = run_op(make_node("GRU", {"x", "w", "r", "", "", "h0"}, {"y", "yh"}, {{"hidden_size", attr_int(1)}}),
                  {f({3}, {1, 1, 1}), f({0, 0, 0}, {1, 3, 1}), f({0, 0, 0}, {1, 3, 1}), Tensor(), Tensor(),
                   f({2}, {1, 1, 1})},
                  14);
  expect_near(r[0], {1});
  expect_near(r[1], {1});
}

TEST(LSTM, ZeroWeightsWithInitialC) {
  auto r = run_op(make_node("LSTM", {"x", "w", "r", "", "", "", "c0"}, {"y", "yh", "yc"}, {{"hidden_size", attr_int(1)}}),
                  {f({3}, {1, 1, 1}), f({0, 0, 0, 0}, {1, 4, 1}), f({0, 0, 0, 0}, {1, 4, 1}), Tensor(), Tensor(),
                   Tensor(), f({1}, {1, 1, 1})},
                  14);
  // i = o = f = 0.5, c~ = 0: C = 0.5, H = 0.5 * tanh(0.5)
  expect_near(r[2], {0.5f});
  expect_near(r[1], {0.5f * std::tanh(0.5f)});
}

Tensor as_double(const Tensor& t) {
  Tensor d(DataType::Double, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}

// Bidirectional layers run one direction per task: on two threads, float LSTM
// and GRU must match the double path (one thread) in every output.
TEST(RNN, BidirectionalOnThreadsMatchesDouble) {
  const int64_t seq = 7, batch = 2, in = 3, H = 5;
  ThreadPool pool(2);
  for (const char* op : {"LSTM", "GRU"}) {
    const int64_t G = std::string(op) == "LSTM" ? 4 : 3;
    std::vector<Tensor> inputs = {pattern({seq, batch, in}, 1), pattern({2, G * H, in}, 2), pattern({2, G * H, H}, 3),
                                  pattern({2, 2 * G * H}, 4), Tensor::from_vector<int32_t>({7, 4}, {2}),
                                  pattern({2, batch, H}, 5)};
    std::vector<std::string> names = {"x", "w", "r", "b", "sl", "h0"};
    std::vector<std::string> outs = {"y", "yh"};
    if (G == 4) outs.push_back("yc");
    Node node = make_node(op, names, outs, {{"hidden_size", attr_int(H)}, {"direction", attr_string("bidirectional")}});
    auto got = run_op(node, inputs, 14, &pool);
    std::vector<Tensor> dinputs;
    for (auto& t : inputs) dinputs.push_back(t.dtype() == DataType::Float ? as_double(t) : t);
    auto want = run_op(node, dinputs, 14);
    for (size_t o = 0; o < outs.size(); ++o) {
      ASSERT_EQ(got[o].shape(), want[o].shape()) << op << " output " << o;
      for (int64_t i = 0; i < got[o].numel(); ++i)
        ASSERT_NEAR(got[o].data<float>()[i], want[o].data<double>()[i], 1e-5) << op << " output " << o << " at " << i;
    }
  }
}

// The float LSTM / GRU steps run their gates fused in vectors (16 lanes, here
// one full vector and a tail of 3); the double path runs the general loops.
// Peepholes, clip, input_forget, linear_before_reset and reverse must agree.
TEST(RNN, FusedGateVariantsMatchDouble) {
  const int64_t seq = 5, batch = 3, in = 4, H = 19;
  struct Variant {
    const char* op;
    std::map<std::string, Attribute> attrs;
    bool peepholes;
  };
  const std::vector<Variant> variants = {
      {"LSTM", {{"clip", attr_float(0.9f)}}, true},
      {"LSTM", {{"input_forget", attr_int(1)}, {"direction", attr_string("reverse")}}, true},
      {"LSTM", {}, false},
      {"GRU", {{"linear_before_reset", attr_int(1)}, {"clip", attr_float(0.8f)}}, false},
      {"GRU", {{"clip", attr_float(0.8f)}, {"direction", attr_string("reverse")}}, false},
  };
  for (const Variant& v : variants) {
    const int64_t G = std::string(v.op) == "LSTM" ? 4 : 3;
    std::vector<Tensor> inputs = {pattern({seq, batch, in}, 6), pattern({1, G * H, in}, 7), pattern({1, G * H, H}, 8),
                                  pattern({1, 2 * G * H}, 9), Tensor::from_vector<int32_t>({5, 2, 4}, {3}),
                                  pattern({1, batch, H}, 10)};
    std::vector<std::string> names = {"x", "w", "r", "b", "sl", "h0"};
    std::vector<std::string> outs = {"y", "yh"};
    if (G == 4) {
      inputs.push_back(pattern({1, batch, H}, 11));
      names.push_back("c0");
      outs.push_back("yc");
      if (v.peepholes) {
        inputs.push_back(pattern({1, 3 * H}, 12));
        names.push_back("p");
      }
    }
    auto attrs = v.attrs;
    attrs["hidden_size"] = attr_int(H);
    Node node = make_node(v.op, names, outs, attrs);
    auto got = run_op(node, inputs, 14);
    std::vector<Tensor> dinputs;
    for (auto& t : inputs) dinputs.push_back(t.dtype() == DataType::Float ? as_double(t) : t);
    auto want = run_op(node, dinputs, 14);
    for (size_t o = 0; o < outs.size(); ++o) {
      ASSERT_EQ(got[o].shape(), want[o].shape()) << v.op << " output " << o;
      double largest = 0;
      for (int64_t i = 0; i < got[o].numel(); ++i) {
        largest = std::max(largest, std::abs(want[o].data<double>()[i]));
        ASSERT_NEAR(got[o].data<float>()[i], want[o].data<double>()[i], 2e-6) << v.op << " output " << o << " at " << i;
      }
      EXPECT_GT(largest, 0.1) << v.op << " output " << o;  // not a trivially zero state
    }
  }
}

TEST(RNN, BadWeightShape) {
  EXPECT_THROW(run_op(make_node("LSTM", {"x", "w", "r"}, {"y"}, {{"hidden_size", attr_int(2)}}),
                      {f({1}, {1, 1, 1}), f({0, 0, 0, 0}, {1, 4, 1}), f({0, 0, 0, 0}, {1, 4, 1})}, 14),
               onyx::Error);
}

// com.microsoft DynamicQuantizeLSTM: int8 weights stored transposed ([D, in, 4H],
// [D, H, 4H]) with per-column scales. Against ONNX's LSTM on the dequantized
// weights: only the 8-bit quantization of X and H separates them (ORT-equal
// results are checked by scripts/check_contrib_ops.py), so a wrong layout or
// gate order would be far off. Bad weight types and scale shapes are refused.
TEST(DynamicQuantizeLSTM, MatchesLstmOnDequantizedWeights) {
  const int64_t D = 2, T = 4, B = 2, I = 3, H = 2, G = 4 * H;
  auto ints = [](int64_t n, int seed) {
    std::vector<int8_t> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int8_t>((i * 53 + seed * 29) % 201 - 100);
    return v;
  };
  std::vector<int8_t> wq = ints(D * I * G, 1), rq = ints(D * H * G, 2);
  std::vector<float> ws(D * G), rs(D * G);
  for (int64_t i = 0; i < D * G; ++i) ws[i] = 0.004f + 0.0005f * (i % 5), rs[i] = 0.006f - 0.0004f * (i % 4);
  // ONNX LSTM weights: W[d, g, i] = wq[d, i, g] * ws[d, g]
  std::vector<float> w(D * G * I), r(D * G * H);
  for (int64_t d = 0; d < D; ++d)
    for (int64_t g = 0; g < G; ++g) {
      for (int64_t i = 0; i < I; ++i) w[(d * G + g) * I + i] = wq[(d * I + i) * G + g] * ws[d * G + g];
      for (int64_t i = 0; i < H; ++i) r[(d * G + g) * H + i] = rq[(d * H + i) * G + g] * rs[d * G + g];
    }
  Tensor x = pattern({T, B, I}, 3), bias = pattern({D, 2 * G}, 4);
  auto reference = run_op(make_node("LSTM", {"x", "w", "r", "b"}, {"y", "yh", "yc"},
                                    {{"hidden_size", attr_int(H)}, {"direction", attr_string("bidirectional")}}),
                          {x, f(w, {D, G, I}), f(r, {D, G, H}), bias}, 14);
  const std::vector<std::string> in = {"x", "w", "r", "b", "", "", "", "", "ws", "wz", "rs", "rz"};
  auto q8 = [](const std::vector<int8_t>& v, Shape s) { return Tensor::from_vector<int8_t>(v, s); };
  const Node node = make_node("DynamicQuantizeLSTM", in, {"y", "yh", "yc"},
                              {{"hidden_size", attr_int(H)}, {"direction", attr_string("bidirectional")}},
                              "com.microsoft");
  const Tensor zeros = q8(std::vector<int8_t>(D * G, 0), {D, G});
  auto got = run_op(node, {x, q8(wq, {D, I, G}), q8(rq, {D, H, G}), bias, Tensor(), Tensor(), Tensor(), Tensor(),
                           f(ws, {D, G}), zeros, f(rs, {D, G}), zeros});
  ASSERT_EQ(got.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(got[k].shape(), reference[k].shape());
    for (int64_t i = 0; i < got[k].numel(); ++i)
      EXPECT_NEAR(got[k].float_at(i), reference[k].float_at(i), 0.02) << "output " << k << " at " << i;
  }
  auto message = [&](std::vector<Tensor> inputs) {
    try {
      run_op(node, inputs);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({x, f(w, {D, I, G}), q8(rq, {D, H, G}), bias, Tensor(), Tensor(), Tensor(), Tensor(),
                     f(ws, {D, G}), zeros, f(rs, {D, G}), zeros})
                .find("W and R must be int8 or uint8"),
            std::string::npos);
  EXPECT_NE(message({x, q8(wq, {D, I, G}), q8(rq, {D, H, G}), bias, Tensor(), Tensor(), Tensor(), Tensor(),
                     f({0.1f, 0.2f, 0.3f}, {3}), zeros, f(rs, {D, G}), zeros})
                .find("W_scale has shape [3]"),
            std::string::npos);
}

}  // namespace
}  // namespace onyx::test
