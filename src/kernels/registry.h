// Kernel registry: maps (domain, op type, opset range) to a kernel factory.
// Each provider owns one; it claims a node by finding a kernel here whose
// optional `supports` accepts it.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace onyx {

struct KernelDef {
  std::string domain;  // "" for ai.onnx
  std::string op_type;
  int64_t since_version = 1;
  int64_t until_version = 1 << 30;  // inclusive
  KernelFactory factory;
  std::function<bool(const Node&)> supports;  // optional finer check (types, attributes)
  // Inputs a device kernel reads on the host (shapes, indices such as
  // Reshape's shape or Slice's starts): the partitioner keeps them there.
  std::vector<int> host_inputs;
  // Optional check of the element types of the node's inputs (Undefined where
  // unknown), used when partitioning: device kernels state the types they run.
  std::function<bool(const std::vector<DataType>&)> supports_types;
};

class KernelRegistry {
 public:
  // Registers `factory` for op_type at opsets [since, until].
  void add(const std::string& op_type, int64_t since, int64_t until, KernelFactory factory,
           const std::string& domain = "");
  void add(KernelDef def);
  const KernelDef* find(const Node& node, int64_t opset) const;
  // The definition of op_type in `domain` covering `opset` (its `supports` not
  // asked), or null.
  const KernelDef* definition(const std::string& domain, const std::string& op_type, int64_t opset) const;
  bool has_op(const std::string& domain, const std::string& op_type) const;
  size_t size() const;

 private:
  std::map<std::pair<std::string, std::string>, std::vector<KernelDef>> defs_;
};

constexpr int64_t kMaxOpset = 1 << 30;

// Convenience: a factory making a LambdaKernel from `make(ctx)`, which reads the
// attributes and returns the run function.
template <class Make>
KernelFactory lambda_factory(Make make) {
  return [make](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> {
    return std::make_unique<LambdaKernel>(make(ctx));
  };
}

}  // namespace onyx
