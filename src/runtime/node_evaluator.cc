#include "runtime/node_evaluator.h"

namespace onyx {

std::vector<Value> evaluate_node(const Node& node, int64_t opset, const std::vector<Value>& inputs,
                                 const KernelRegistry& registry, ThreadPool* pool) {
  const KernelDef* def = registry.find(node, opset);
  if (!def) fail(ErrorCode::NotImplemented, "no kernel for node " + node.describe());
  std::vector<const Tensor*> constants;
  for (auto& v : inputs) constants.push_back(v.is_tensor() ? &v.tensor() : nullptr);
  KernelInitContext init(node, opset, constants, [](const std::string&) -> std::shared_ptr<const CompiledGraph> {
    kernel_fail("subgraphs cannot run outside a session");
  });
  auto kernel = def->factory(init);
  SingleNodeContext ctx(node, inputs, pool);
  kernel->run(ctx);
  return std::move(ctx.outputs());
}

}  // namespace onyx
