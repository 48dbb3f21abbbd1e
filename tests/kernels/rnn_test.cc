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

TEST(RNN, BadWeightShape) {
  EXPECT_THROW(run_op(make_node("LSTM", {"x", "w", "r"}, {"y"}, {{"hidden_size", attr_int(2)}}),
                      {f({1}, {1, 1, 1}), f({0, 0, 0, 0}, {1, 4, 1}), f({0, 0, 0, 0}, {1, 4, 1})}, 14),
               onyx::Error);
}

}  // namespace
}  // namespace onyx::test
