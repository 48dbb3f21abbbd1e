#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cpu/cpu_provider.h"
#include "model_builder.h"
#include "onnx/loader.h"
#include "runtime/execution_plan.h"
#include "runtime/executor.h"

namespace onyx {
namespace {

TEST(ExecutionPlan, ReleasesEachValueAfterItsLastReader) {
  // x -> Relu -> a -> Neg -> b -> Abs -> y ; a is also read by the last Add.
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = test::tensor_info("x", onnx::TensorProto::FLOAT, {4});
  *g->add_output() = test::tensor_info("y", onnx::TensorProto::FLOAT, {4});
  test::add_node(g, "Relu", {"x"}, {"a"});
  test::add_node(g, "Neg", {"a"}, {"b"});
  test::add_node(g, "Abs", {"b"}, {"c"});
  test::add_node(g, "Add", {"c", "a"}, {"y"});
  std::string bytes = test::serialize(m);
  Model model = load_model_from_bytes(bytes.data(), bytes.size(), "chain");
  SessionOptions options;
  CompileEnv env{&model, &cpu_kernel_registry(), &options, "chain", {}};
  auto plan = compile_graph(std::make_shared<const Graph>(model.graph), env, {});
  ASSERT_EQ(plan->nodes.size(), 4u);
  auto released = [&](int node) {
    std::vector<std::string> names;
    for (int s : plan->nodes[node].release_after) names.push_back(plan->slot_names[s]);
    std::sort(names.begin(), names.end());
    return names;
  };
  EXPECT_EQ(released(0), (std::vector<std::string>{"x"}));
  EXPECT_EQ(released(1), (std::vector<std::string>{}));
  EXPECT_EQ(released(2), (std::vector<std::string>{"b"}));
  EXPECT_EQ(released(3), (std::vector<std::string>{"a", "c"}));  // y is a graph output: kept
}

TEST(ExecutionPlan, DonatesOnlyIntermediatesAtTheirLastUse) {
  // x -> Relu -> a -> Neg -> b ; Add(b, a) -> c ; Add(c, c) -> y
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = test::tensor_info("x", onnx::TensorProto::FLOAT, {4});
  *g->add_output() = test::tensor_info("y", onnx::TensorProto::FLOAT, {4});
  test::add_node(g, "Relu", {"x"}, {"a"});
  test::add_node(g, "Neg", {"a"}, {"b"});
  test::add_node(g, "Add", {"b", "a"}, {"c"});
  test::add_node(g, "Add", {"c", "c"}, {"y"});
  std::string bytes = test::serialize(m);
  Model model = load_model_from_bytes(bytes.data(), bytes.size(), "chain");
  SessionOptions options;
  CompileEnv env{&model, &cpu_kernel_registry(), &options, "chain", {}};
  auto plan = compile_graph(std::make_shared<const Graph>(model.graph), env, {});
  ASSERT_EQ(plan->nodes.size(), 4u);
  EXPECT_TRUE(plan->nodes[0].donatable_inputs.empty());  // x is the caller's
  EXPECT_TRUE(plan->nodes[1].donatable_inputs.empty());  // a is read again later
  EXPECT_EQ(plan->nodes[2].donatable_inputs, (std::vector<int>{0, 1}));
  EXPECT_TRUE(plan->nodes[3].donatable_inputs.empty());  // c read twice by the node
}

TEST(ExecutionPlan, SortsNodesTopologically) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = test::tensor_info("x", onnx::TensorProto::FLOAT, {4});
  *g->add_output() = test::tensor_info("y", onnx::TensorProto::FLOAT, {4});
  test::add_node(g, "Neg", {"a"}, {"y"}, "second");
  test::add_node(g, "Relu", {"x"}, {"a"}, "first");
  std::string bytes = test::serialize(m);
  Model model = load_model_from_bytes(bytes.data(), bytes.size(), "unordered");
  SessionOptions options;
  CompileEnv env{&model, &cpu_kernel_registry(), &options, "unordered", {}};
  auto plan = compile_graph(std::make_shared<const Graph>(model.graph), env, {});
  EXPECT_EQ(plan->nodes[0].node->name, "first");
  EXPECT_EQ(plan->nodes[1].node->name, "second");
}

// W is read only by MatMuls, which pack it: its data is freed (type and shape
// kept). V is also read by an Identity, which needs the data: kept. Results
// stay right, the 1-D A included.
TEST(ExecutionPlan, FreesConstantsThatEveryReaderPacked) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = test::tensor_info("x", onnx::TensorProto::FLOAT, {2, 3});
  *g->add_input() = test::tensor_info("v", onnx::TensorProto::FLOAT, {3});
  for (const char* y : {"y1", "y2", "y3", "y4"}) *g->add_output() = test::tensor_info(y, onnx::TensorProto::FLOAT, {});
  *g->add_initializer() = test::float_tensor("W", {3, 2}, {1, 2, 3, 4, 5, 6});
  *g->add_initializer() = test::float_tensor("V", {3, 2}, {-1, 0, 0, 1, 2, 2});
  test::add_node(g, "MatMul", {"x", "W"}, {"y1"});
  test::add_node(g, "MatMul", {"v", "W"}, {"y2"});
  test::add_node(g, "MatMul", {"x", "V"}, {"y3"});
  test::add_node(g, "Identity", {"V"}, {"y4"});
  std::string bytes = test::serialize(m);
  Model model = load_model_from_bytes(bytes.data(), bytes.size(), "packed");
  SessionOptions options;
  CompileEnv env{&model, &cpu_kernel_registry(), &options, "packed", {}};
  auto plan = compile_graph(std::make_shared<const Graph>(model.graph), env, {});
  std::map<std::string, Tensor> constants;
  for (auto& [slot, t] : plan->constants) constants[plan->slot_names[slot]] = t;
  ASSERT_EQ(constants.size(), 2u);
  EXPECT_EQ(constants["W"].raw(), nullptr);
  EXPECT_EQ(constants["W"].shape(), (Shape{3, 2}));
  EXPECT_EQ(plan->graph->initializers.at("W").raw(), nullptr);
  ASSERT_NE(constants["V"].raw(), nullptr);
  EXPECT_EQ(constants["V"].data<float>()[5], 2.0f);

  RunEnv run_env;
  Tensor x = Tensor::from_vector<float>({1, 0, 2, -1, 1, 0}, {2, 3});
  Tensor v = Tensor::from_vector<float>({0, 1, 1}, {3});
  auto out = execute_graph(*plan, {Value(x), Value(v)}, {}, run_env);
  auto values = [](const Value& o) {
    const Tensor& t = o.tensor();
    return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  };
  EXPECT_EQ(values(out[0]), (std::vector<float>{11, 14, 2, 2}));
  EXPECT_EQ(out[1].tensor().shape(), (Shape{2}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{8, 10}));
  EXPECT_EQ(values(out[2]), (std::vector<float>{3, 4, 1, 1}));
  EXPECT_EQ(values(out[3]), (std::vector<float>{-1, 0, 0, 1, 2, 2}));
}

// Frames are kept across runs with the constants bound: a run that fails midway
// leaves nothing behind, the next run sees its own inputs, and outputs and the
// caller's inputs are not held by the kept frame.
TEST(ExecutionPlan, KeptFramesHoldOnlyTheConstants) {
  // y = Reshape(Add(x, b), shape): b and shape are constants; x of the wrong size fails in Reshape.
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = test::tensor_info("x", onnx::TensorProto::FLOAT, {-1});
  *g->add_output() = test::tensor_info("y", onnx::TensorProto::FLOAT, {2, 2});
  *g->add_initializer() = test::float_tensor("b", {1}, {10.0f});
  *g->add_initializer() = test::int64_tensor("shape", {2}, {2, 2});
  test::add_node(g, "Add", {"x", "b"}, {"a"});
  test::add_node(g, "Reshape", {"a", "shape"}, {"y"});
  std::string bytes = test::serialize(m);
  Model model = load_model_from_bytes(bytes.data(), bytes.size(), "frames");
  SessionOptions options;
  CompileEnv env{&model, &cpu_kernel_registry(), &options, "frames", {}};
  auto plan = compile_graph(std::make_shared<const Graph>(model.graph), env, {});
  ASSERT_EQ(plan->constants.size(), 2u);
  for (auto& pn : plan->nodes)
    for (int s : pn.release_after) EXPECT_NE(plan->slot_names[s], "b");  // constants are never released

  RunEnv run_env;
  Tensor bad = Tensor::from_vector<float>({1, 2, 3}, {3});
  EXPECT_THROW(execute_graph(*plan, {Value(bad)}, {}, run_env), Error);
  EXPECT_EQ(bad.holder().use_count(), 1);  // the failed run's frame let go of x and of Add's output
  for (int round = 0; round < 2; ++round) {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, float(round)}, {4});
    auto out = execute_graph(*plan, {Value(x)}, {}, run_env);
    const float* y = out[0].tensor().data<float>();
    EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{11, 12, 13, 10.0f + round}));
    EXPECT_EQ(x.holder().use_count(), 1);
    EXPECT_EQ(out[0].tensor().holder().use_count(), 1);
  }
}

// A freed buffer serves the next request it fits without wasting over half
// of it, the most recently freed first; a repeating run reaches a steady state.
TEST(BufferPool, ReusesBuffersThatFitMostRecentFirst) {
  auto pool = std::make_shared<BufferPool>();
  const void* first = nullptr;
  {
    Tensor a = pool->make(DataType::Float, {1024});  // 4096 bytes
    first = a.raw();
  }
  EXPECT_EQ(pool->cached_bytes(), 4096u);
  {
    Tensor b = pool->make(DataType::Float, {752});  // 3008 bytes: fits the 4096 one
    EXPECT_EQ(b.raw(), first);
    EXPECT_EQ(pool->cached_bytes(), 0u);
    Tensor c = pool->make(DataType::Float, {256});  // 1024 bytes: would waste most of it
    EXPECT_NE(c.raw(), first);
  }
  EXPECT_EQ(pool->cached_bytes(), 4096u + 1024u);  // capacities, not the sizes asked
  {
    Tensor d = pool->make(DataType::Float, {1000});  // the 4096 one (freed last)
    Tensor e = pool->make(DataType::Float, {300});   // 1200 bytes: the 1024 one is too small
    EXPECT_EQ(d.raw(), first);
    EXPECT_EQ(pool->cached_bytes(), 1024u);
  }
  size_t steady = 0;
  for (int run = 0; run < 6; ++run) {
    Tensor x = pool->make(DataType::Float, {2000});
    Tensor y = pool->make(DataType::Float, {600});
    x = Tensor();
    Tensor z = pool->make(DataType::Float, {1500});
    if (run == 2) steady = pool->cached_bytes();
    if (run > 2) {
      EXPECT_EQ(pool->cached_bytes(), steady) << "run " << run;
    }
  }
}

// A tensor that grows a little each run (a decoder's KV cache, 1 KB longer per step)
// keeps its buffer for several: past 64 KB capacities round up to eighths of a power of two
// (8 KB steps here), so 16 steps take 3 buffers, not 16.
TEST(BufferPool, GrowingTensorsReuseTheirBuffer) {
  auto pool = std::make_shared<BufferPool>();
  std::set<const void*> buffers;
  for (int64_t tokens = 100; tokens < 116; ++tokens) {  // 100 KB to 115 KB
    Tensor present = pool->make(DataType::Float, {1, 4, tokens, 64});
    buffers.insert(present.raw());
  }
  EXPECT_EQ(buffers.size(), 3u);  // 104, 112 and 120 KB
  EXPECT_EQ(pool->cached_bytes(), (104u + 112u + 120u) * 1024u);
}

}  // namespace
}  // namespace onyx
