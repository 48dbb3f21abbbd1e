// GraphView's fresh value names: never a name the graph uses in any role.
#include <gtest/gtest.h>

#include "opt/graph_view.h"
#include "opt/rewrite.h"

namespace onyx {
namespace {

TEST(GraphView, FreshNameSkipsEveryUsedName) {
  Graph g;
  g.inputs.push_back({"x", {}});
  g.initializers.emplace("w", Tensor::scalar<float>(1.f));
  g.nodes.push_back(make_node("Add", "add", {"x", "w"}, {"y"}));
  g.nodes.push_back(make_node("Relu", "relu", {"y"}, {"y_1"}));
  g.outputs.push_back({"y_1", {}});
  const GraphView view(g);
  EXPECT_EQ(view.fresh_name("x"), "x_1");
  EXPECT_EQ(view.fresh_name("w"), "w_1");
  EXPECT_EQ(view.fresh_name("y"), "y_2");  // y_1 is a node output and the graph output
  EXPECT_EQ(view.fresh_name("z"), "z");
  EXPECT_EQ(view.fresh_name("y_1"), "y_1_1");
}

}  // namespace
}  // namespace onyx
