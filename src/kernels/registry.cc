#include "kernels/registry.h"

#include "kernels/dispatch.h"

namespace onyx {

void kernel_fail(const std::string& reason) { fail(ErrorCode::InvalidArgument, reason); }

void unsupported_type(DataType t, const char* what) {
  fail(ErrorCode::NotImplemented, "element type " + dtype_name(t) + " is not supported here (expected " + what + ")");
}

void check_dtype(const char* op, const char* name, const Tensor& t, DataType want) {
  if (t.dtype() != want)
    kernel_fail(std::string(op) + ": " + name + " must be " + dtype_name(want) + ", got " + dtype_name(t.dtype()));
}

// ---- AttributeReader ----

const Attribute* AttributeReader::find(const std::string& name, AttrType expected) const {
  const Attribute* a = node_.attr(name);
  if (!a) return nullptr;
  if (a->type != expected)
    fail(ErrorCode::InvalidGraph, "attribute '" + name + "' has type " + attr_type_name(a->type) + ", expected " +
                                      attr_type_name(expected));
  return a;
}

const Attribute& AttributeReader::get(const std::string& name, AttrType expected) const {
  const Attribute* a = find(name, expected);
  if (!a) fail(ErrorCode::InvalidGraph, "required attribute '" + name + "' is missing");
  return *a;
}

int64_t AttributeReader::get_int(const std::string& name, int64_t def) const {
  const Attribute* a = find(name, AttrType::Int);
  return a ? a->i : def;
}
int64_t AttributeReader::get_int(const std::string& name) const { return get(name, AttrType::Int).i; }
float AttributeReader::get_float(const std::string& name, float def) const {
  const Attribute* a = find(name, AttrType::Float);
  return a ? a->f : def;
}
std::string AttributeReader::get_string(const std::string& name, const std::string& def) const {
  const Attribute* a = find(name, AttrType::String);
  return a ? a->s : def;
}
std::vector<int64_t> AttributeReader::get_ints(const std::string& name, std::vector<int64_t> def) const {
  const Attribute* a = find(name, AttrType::Ints);
  return a ? a->ints : def;
}
std::vector<float> AttributeReader::get_floats(const std::string& name, std::vector<float> def) const {
  const Attribute* a = find(name, AttrType::Floats);
  return a ? a->floats : def;
}
std::vector<std::string> AttributeReader::get_strings(const std::string& name, std::vector<std::string> def) const {
  const Attribute* a = find(name, AttrType::Strings);
  return a ? a->strings : def;
}
Tensor AttributeReader::get_tensor(const std::string& name) const { return get(name, AttrType::Tensor).t; }

std::shared_ptr<const CompiledGraph> KernelInitContext::subgraph(const std::string& name) const {
  get(name, AttrType::Graph);  // checks presence and type
  return compile_subgraph_(name);
}

const Tensor& KernelContext::input(size_t i) const {
  if (!has_input(i)) kernel_fail("input " + std::to_string(i) + " is required but missing");
  const Value& v = input_value(i);
  if (!v.is_tensor()) kernel_fail("input " + std::to_string(i) + " must be a tensor, got " + v.kind_name());
  return v.tensor();
}

// ---- KernelRegistry ----

void KernelRegistry::add(const std::string& op_type, int64_t since, int64_t until, KernelFactory factory,
                         const std::string& domain) {
  KernelDef def;
  def.domain = domain;
  def.op_type = op_type;
  def.since_version = since;
  def.until_version = until;
  def.factory = std::move(factory);
  add(std::move(def));
}

void KernelRegistry::add(KernelDef def) {
  auto key = std::make_pair(def.domain, def.op_type);
  defs_[key].push_back(std::move(def));
}

const KernelDef* KernelRegistry::find(const Node& node, int64_t opset) const {
  auto it = defs_.find({canonical_domain(node.domain), node.op_type});
  if (it == defs_.end()) return nullptr;
  for (const KernelDef& d : it->second)
    if (opset >= d.since_version && opset <= d.until_version && (!d.supports || d.supports(node))) return &d;
  return nullptr;
}

const KernelDef* KernelRegistry::definition(const std::string& domain, const std::string& op_type,
                                            int64_t opset) const {
  auto it = defs_.find({canonical_domain(domain), op_type});
  if (it == defs_.end()) return nullptr;
  for (const KernelDef& d : it->second)
    if (opset >= d.since_version && opset <= d.until_version) return &d;
  return nullptr;
}

bool KernelRegistry::has_op(const std::string& domain, const std::string& op_type) const {
  return defs_.count({canonical_domain(domain), op_type}) != 0;
}

size_t KernelRegistry::size() const {
  size_t n = 0;
  for (auto& [k, v] : defs_) n += v.size();
  return n;
}

}  // namespace onyx
