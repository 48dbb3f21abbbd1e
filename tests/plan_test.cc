#include <gtest/gtest.h>

#include "cpu/cpu_provider.h"
#include "model_builder.h"
#include "onnx/loader.h"
#include "runtime/execution_plan.h"

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
  CompileEnv env{&model, &cpu_kernel_registry(), &options, "chain"};
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
  CompileEnv env{&model, &cpu_kernel_registry(), &options, "unordered"};
  auto plan = compile_graph(std::make_shared<const Graph>(model.graph), env, {});
  EXPECT_EQ(plan->nodes[0].node->name, "first");
  EXPECT_EQ(plan->nodes[1].node->name, "second");
}

}  // namespace
}  // namespace onyx
