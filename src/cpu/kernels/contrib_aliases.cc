// ONNX Runtime contrib ops (com.microsoft) that are ONNX ops under another
// domain or name, kept from before ONNX had them: older tf2onnx, ORT's PyTorch
// export helpers and models saved by older ORT versions hold them. Each runs
// the ONNX kernel of the opset whose semantics it has.
#include <stdexcept>

#include "cpu/cpu_provider.h"

namespace onyx {

namespace {

void alias(KernelRegistry& r, const std::string& contrib_op, const std::string& domain, const std::string& op,
           int64_t opset) {
  const KernelDef* def = r.definition(domain, op, opset);
  if (!def) throw std::logic_error("contrib alias " + contrib_op + ": no kernel for " + op + " at opset " +
                                   std::to_string(opset) + " is registered yet");
  KernelDef a = *def;
  a.domain = "com.microsoft";
  a.op_type = contrib_op;
  a.since_version = 1;
  a.until_version = kMaxOpset;
  a.factory = [factory = def->factory, opset](const KernelInitContext& ic) {
    KernelInitContext as_onnx = ic.at_opset(opset);
    std::unique_ptr<Kernel> kernel = factory(as_onnx);
    ic.adopt_packed(as_onnx);
    return kernel;
  };
  r.add(std::move(a));
}

}  // namespace

void register_contrib_aliases(KernelRegistry& r) {
  alias(r, "TransposeMatMul", "com.microsoft", "FusedMatMul", 1);  // FusedMatMul's name before ORT 1.8
  alias(r, "Trilu", "", "Trilu", 14);
  alias(r, "GatherND", "", "GatherND", 11);
  alias(r, "GridSample", "", "GridSample", 16);
  alias(r, "Pad", "", "Pad", 11);
  alias(r, "Range", "", "Range", 11);  // its delta is optional (range_run)
}

}  // namespace onyx
