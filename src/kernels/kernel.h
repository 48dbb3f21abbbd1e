// The kernel interface every provider implements.
//
// A kernel is created once per node when the session is built (its factory
// gets a KernelInitContext: attributes, opset, constant inputs to pre-pack),
// and `run` is then called once per execution with a KernelContext. `run` is
// const: one kernel object serves concurrent runs of a session, so all
// per-run state lives in the context.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "ir/graph.h"
#include "onyx/status.h"
#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx {

class CompiledGraph;  // a subgraph prepared for execution (runtime/execution_plan.h)
class ExecutionProvider;  // kernels/execution_provider.h

// Reading a node's attributes, with defaults and type checks that name the node.
class AttributeReader {
 public:
  explicit AttributeReader(const Node& node) : node_(node) {}
  bool has(const std::string& name) const { return node_.attr(name) != nullptr; }
  int64_t get_int(const std::string& name, int64_t def) const;
  int64_t get_int(const std::string& name) const;  // required
  float get_float(const std::string& name, float def) const;
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> def = {}) const;
  std::vector<std::string> get_strings(const std::string& name, std::vector<std::string> def = {}) const;
  Tensor get_tensor(const std::string& name) const;  // required
  const Attribute& get(const std::string& name, AttrType expected) const;  // required, type-checked
  const Node& node() const { return node_; }

 private:
  const Attribute* find(const std::string& name, AttrType expected) const;
  const Node& node_;
};

class KernelInitContext : public AttributeReader {
 public:
  KernelInitContext(const Node& node, int64_t opset, std::vector<const Tensor*> constant_inputs,
                    std::function<std::shared_ptr<const CompiledGraph>(const std::string&)> subgraph_compiler)
      : AttributeReader(node), opset_(opset), constants_(std::move(constant_inputs)),
        compile_subgraph_(std::move(subgraph_compiler)) {}

  int64_t opset() const { return opset_; }
  size_t num_inputs() const { return node().inputs.size(); }
  size_t num_outputs() const { return node().outputs.size(); }
  bool has_input(size_t i) const { return i < node().inputs.size() && !node().inputs[i].empty(); }
  bool has_output(size_t i) const { return i < node().outputs.size() && !node().outputs[i].empty(); }
  // The input's value when it is a constant (an initializer not overridable at
  // run time), else null. Use it to pre-pack weights once.
  const Tensor* constant_input(size_t i) const { return i < constants_.size() ? constants_[i] : nullptr; }
  // Declares that the kernel keeps its own (pre-packed) copy of constant input
  // i and never reads that input's data at run time, only its type and shape.
  // When every reader of a constant says so, the session frees its data.
  // (Const because factories get the context const: this is their one other
  // output besides the kernel.)
  void packed_constant(size_t i) const {
    if (!constant_input(i)) return;
    packed_.resize(constants_.size());
    packed_[i] = true;
  }
  bool constant_was_packed(size_t i) const { return i < packed_.size() && packed_[i]; }
  // This context as a kernel of another opset sees it: an alias (a contrib op
  // that is an ONNX op of that opset) runs the ONNX kernel's factory on it,
  // then adopt_packed takes over what that factory packed.
  KernelInitContext at_opset(int64_t opset) const {
    KernelInitContext c = *this;
    c.opset_ = opset;
    return c;
  }
  void adopt_packed(const KernelInitContext& other) const { packed_ = other.packed_; }
  // Prepares the graph held by attribute `name` for execution.
  std::shared_ptr<const CompiledGraph> subgraph(const std::string& name) const;
  // The provider the kernel is made for (device kernels keep it for their
  // stream, handles and memory); null outside a session.
  ExecutionProvider* provider() const { return provider_; }
  void set_provider(ExecutionProvider* p) { provider_ = p; }

 private:
  ExecutionProvider* provider_ = nullptr;
  int64_t opset_;
  std::vector<const Tensor*> constants_;
  mutable std::vector<bool> packed_;
  std::function<std::shared_ptr<const CompiledGraph>(const std::string&)> compile_subgraph_;
};

class KernelContext {
 public:
  virtual ~KernelContext() = default;
  virtual const Node& node() const = 0;
  virtual size_t num_inputs() const = 0;
  // False for an omitted optional input (empty name or beyond the list).
  virtual bool has_input(size_t i) const = 0;
  virtual const Value& input_value(size_t i) const = 0;
  const Tensor& input(size_t i) const;  // checked: present and a tensor

  virtual size_t num_outputs() const = 0;
  // False when the output is omitted (empty name, or beyond the node's outputs); kernels may skip its work.
  virtual bool wants_output(size_t i) const = 0;
  virtual Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) = 0;
  virtual void set_output(size_t i, Value value) = 0;
  // Output `out` in the buffer of input `in`, when that input is a tensor of
  // this dtype and shape that no one reads after this node and nothing else
  // shares (an intermediate at its last use); else null, and the kernel
  // allocates. The input then reads the same memory the kernel writes.
  virtual Tensor* take_input_for_output(size_t in, size_t out, DataType dtype, const Shape& shape) { return nullptr; }

  virtual ThreadPool* thread_pool() const = 0;
  // Runs a subgraph (If/Loop/Scan body) with the given inputs; outer-scope
  // values it reads come from this node's frame.
  virtual std::vector<Value> run_subgraph(const CompiledGraph& graph, std::vector<Value> inputs) const = 0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(KernelContext& ctx) const = 0;
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelInitContext&)>;

// A kernel made from a plain function, for ops with nothing to pre-compute
// beyond their attributes. The lambda's captures are its state.
class LambdaKernel final : public Kernel {
 public:
  explicit LambdaKernel(std::function<void(KernelContext&)> fn) : fn_(std::move(fn)) {}
  void run(KernelContext& ctx) const override { fn_(ctx); }

 private:
  std::function<void(KernelContext&)> fn_;
};

// Throws an InvalidArgument error; the executor adds the model and node.
[[noreturn]] void kernel_fail(const std::string& reason);
#define ONYX_KERNEL_CHECK(cond, reason) \
  do {                                  \
    if (!(cond)) ::onyx::kernel_fail(reason); \
  } while (0)

}  // namespace onyx
