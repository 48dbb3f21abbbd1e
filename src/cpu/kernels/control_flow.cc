// If, Loop and Scan: kernels that run subgraphs through the executor
// (ctx.run_subgraph), which supplies the outer-scope values they read.
#include <algorithm>

#include "cpu/axis_ops.h"
#include "cpu/cpu_provider.h"
#include "kernels/broadcast.h"

namespace onyx {

namespace {

bool truth(const Tensor& t, const char* what) {
  ONYX_KERNEL_CHECK(t.numel() == 1, std::string(what) + " must hold one element, got shape " + shape_to_string(t.shape()));
  return t.int_at(0) != 0;
}

std::vector<TypeInfo> output_types(const KernelInitContext& ctx, const std::string& attr) {
  std::vector<TypeInfo> types;
  for (auto& vi : ctx.get(attr, AttrType::Graph).g->outputs) types.push_back(vi.type);
  return types;
}

// The values a subgraph is fed: its inputs less the IR < 4 ones that only
// declare an initializer.
std::vector<TypeInfo> fed_input_types(const Graph& g) {
  std::vector<TypeInfo> types;
  for (auto& vi : g.inputs)
    if (!g.is_initializer(vi.name)) types.push_back(vi.type);
  return types;
}

// Two declared types that cannot describe one value (unknown parts match
// anything; an optional(T) may hold a T).
bool types_conflict(const TypeInfo& a, const TypeInfo& b) {
  using K = TypeInfo::Kind;
  if (a.kind == K::Unknown || b.kind == K::Unknown) return false;
  if (a.kind != b.kind) {
    if (a.kind == K::Optional) return a.inner && types_conflict(*a.inner, b);
    if (b.kind == K::Optional) return b.inner && types_conflict(a, *b.inner);
    return true;
  }
  if (a.kind == TypeInfo::Kind::Tensor)
    return a.elem_type != DataType::Undefined && b.elem_type != DataType::Undefined && a.elem_type != b.elem_type;
  return a.inner && b.inner && types_conflict(*a.inner, *b.inner);
}

std::string count_of(size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// If's branches must give the node's outputs, one type for each.
void check_branches(const KernelInitContext& ctx) {
  auto then_types = output_types(ctx, "then_branch"), else_types = output_types(ctx, "else_branch");
  ONYX_KERNEL_CHECK(then_types.size() == ctx.num_outputs() && else_types.size() == ctx.num_outputs(),
                    "If has " + count_of(ctx.num_outputs(), "output") + " but then_branch gives " +
                        std::to_string(then_types.size()) + " and else_branch " + std::to_string(else_types.size()));
  for (size_t i = 0; i < then_types.size(); ++i)
    ONYX_KERNEL_CHECK(!types_conflict(then_types[i], else_types[i]),
                      "If output " + std::to_string(i) + " is " + then_types[i].to_string() + " in then_branch but " +
                          else_types[i].to_string() + " in else_branch");
}

// A Loop body takes (iteration, condition, carried...) and gives
// (condition, carried..., scan outputs...), each carried value keeping its type.
void check_loop_body(const KernelInitContext& ctx) {
  const Graph& body = *ctx.get("body", AttrType::Graph).g;
  size_t n_carried = ctx.num_inputs() - 2;
  auto ins = fed_input_types(body);
  ONYX_KERNEL_CHECK(ins.size() == 2 + n_carried,
                    "the Loop body takes " + count_of(ins.size(), "input") + ", but the Loop feeds it " +
                        std::to_string(2 + n_carried) + " (iteration number, condition and " +
                        count_of(n_carried, "loop-carried value") + ")");
  ONYX_KERNEL_CHECK(body.outputs.size() >= 1 + n_carried && ctx.num_outputs() <= body.outputs.size() - 1,
                    "the Loop body gives " + count_of(body.outputs.size(), "output") + ", the Loop needs 1 + " +
                        std::to_string(n_carried) + " loop-carried + scan outputs for its " +
                        count_of(ctx.num_outputs(), "output"));
  for (size_t i = 0; i < n_carried; ++i)
    ONYX_KERNEL_CHECK(!types_conflict(ins[2 + i], body.outputs[1 + i].type),
                      "loop-carried value " + std::to_string(i) + " enters the body as " + ins[2 + i].to_string() +
                          " but leaves it as " + body.outputs[1 + i].type.to_string());
}

class IfKernel final : public Kernel {
 public:
  explicit IfKernel(const KernelInitContext& ctx)
      : then_(ctx.subgraph("then_branch")), else_(ctx.subgraph("else_branch")) {
    check_branches(ctx);
  }
  void run(KernelContext& ctx) const override {
    const CompiledGraph& branch = truth(ctx.input(0), "If condition") ? *then_ : *else_;
    std::vector<Value> outs = ctx.run_subgraph(branch, {});
    ONYX_KERNEL_CHECK(outs.size() >= ctx.num_outputs(), "the taken branch returns " + std::to_string(outs.size()) +
                                                            " values but If has " + std::to_string(ctx.num_outputs()) +
                                                            " outputs");
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, std::move(outs[i]));
  }

 private:
  std::shared_ptr<const CompiledGraph> then_, else_;
};

// Declared types may be missing, so the values are checked as they come.
void check_same_dtype(const Value& before, const Value& after, size_t i) {
  if (!before.is_tensor() || !after.is_tensor()) return;
  DataType a = before.tensor().dtype(), b = after.tensor().dtype();
  ONYX_KERNEL_CHECK(a == b, "loop-carried value " + std::to_string(i) + " was " + dtype_name(a) +
                                " and the Loop body returned " + dtype_name(b));
}

// An empty scan output when the loop ran zero times: shape [0] of the declared type.
Value empty_scan_output(const TypeInfo& type) {
  DataType dt = type.kind == TypeInfo::Kind::Tensor && type.elem_type != DataType::Undefined ? type.elem_type : DataType::Float;
  Shape shape{0};
  for (auto& d : type.shape) shape.push_back(d.value >= 0 ? d.value : 0);
  return Value(Tensor(dt, shape));
}

class LoopKernel final : public Kernel {
 public:
  explicit LoopKernel(const KernelInitContext& ctx)
      : body_(ctx.subgraph("body")), body_outputs_(output_types(ctx, "body")) {
    check_loop_body(ctx);
  }

  void run(KernelContext& ctx) const override {
    int64_t max_trips = INT64_MAX;
    if (ctx.has_input(0)) {
      const Tensor& m = ctx.input(0);
      ONYX_KERNEL_CHECK(m.numel() == 1, "Loop trip count M must hold one element, got shape " + shape_to_string(m.shape()));
      max_trips = m.int_at(0);
    }
    bool cond = ctx.has_input(1) ? truth(ctx.input(1), "Loop condition") : true;
    size_t n_carried = ctx.num_inputs() - 2;
    size_t n_scan = body_outputs_.size() - 1 - n_carried;
    std::vector<Value> carried;
    for (size_t i = 0; i < n_carried; ++i) carried.push_back(ctx.has_input(2 + i) ? ctx.input_value(2 + i) : Value());
    std::vector<std::vector<Tensor>> scans(n_scan);
    for (int64_t trip = 0; trip < max_trips && cond; ++trip) {
      std::vector<Value> in;
      in.push_back(Value(Tensor::scalar<int64_t>(trip)));
      in.push_back(Value(Tensor::scalar<bool>(cond)));
      for (auto& v : carried) in.push_back(v);
      std::vector<Value> out = ctx.run_subgraph(*body_, std::move(in));
      cond = truth(out[0].tensor(), "Loop body condition output");
      for (size_t i = 0; i < n_carried; ++i) {
        check_same_dtype(carried[i], out[1 + i], i);
        carried[i] = std::move(out[1 + i]);
      }
      for (size_t i = 0; i < n_scan; ++i) scans[i].push_back(out[1 + n_carried + i].tensor());
    }
    for (size_t i = 0; i < n_carried && i < ctx.num_outputs(); ++i) ctx.set_output(i, std::move(carried[i]));
    for (size_t i = 0; i < n_scan && n_carried + i < ctx.num_outputs(); ++i) {
      Value v = scans[i].empty() ? empty_scan_output(body_outputs_[1 + n_carried + i]) : Value(stack_axis(scans[i], 0));
      ctx.set_output(n_carried + i, std::move(v));
    }
  }

 private:
  std::shared_ptr<const CompiledGraph> body_;
  std::vector<TypeInfo> body_outputs_;
};

class ScanKernel final : public Kernel {
 public:
  explicit ScanKernel(const KernelInitContext& ctx) : body_(ctx.subgraph("body")) {
    legacy_batch_ = ctx.opset() < 9;
    num_scan_inputs_ = ctx.get_int("num_scan_inputs");
    size_t first = legacy_batch_ ? 1 : 0;
    num_states_ = static_cast<int64_t>(ctx.num_inputs() - first) - num_scan_inputs_;
    num_scan_outputs_ = static_cast<int64_t>(ctx.num_outputs()) - num_states_;
    ONYX_KERNEL_CHECK(num_states_ >= 0 && num_scan_outputs_ >= 0, "Scan has inconsistent input and output counts");
    const Graph& body = *ctx.get("body", AttrType::Graph).g;
    size_t n_in = fed_input_types(body).size(), n_out = body.outputs.size();
    ONYX_KERNEL_CHECK(n_in == static_cast<size_t>(num_states_ + num_scan_inputs_) &&
                          n_out == static_cast<size_t>(num_states_ + num_scan_outputs_),
                      "the Scan body takes " + count_of(n_in, "input") + " and gives " + count_of(n_out, "output") +
                          ", but the Scan has " + count_of(num_states_, "state variable") + ", " +
                          count_of(num_scan_inputs_, "scan input") + " and " + count_of(num_scan_outputs_, "scan output"));
    in_dirs_ = ctx.get_ints(legacy_batch_ ? "directions" : "scan_input_directions", {});
    out_dirs_ = ctx.get_ints("scan_output_directions", {});
    in_axes_ = ctx.get_ints("scan_input_axes", {});
    out_axes_ = ctx.get_ints("scan_output_axes", {});
  }

  void run(KernelContext& ctx) const override {
    size_t first = legacy_batch_ ? 1 : 0;
    std::vector<Value> states;
    std::vector<Tensor> scans;
    for (int64_t i = 0; i < num_states_; ++i) states.push_back(ctx.input_value(first + i));
    for (int64_t i = 0; i < num_scan_inputs_; ++i) scans.push_back(ctx.input(first + num_states_ + i));
    if (!legacy_batch_) {
      run_one(ctx, states, scans, 0, [&](size_t i, Value v) { ctx.set_output(i, std::move(v)); });
      return;
    }
    // Opset 8: axis 0 of every input is a batch; scan along axis 1 of each batch item.
    ONYX_KERNEL_CHECK(!ctx.has_input(0), "Scan-8 sequence_lens is not supported");
    int64_t batch = scans.empty() ? states[0].tensor().dim(0) : scans[0].dim(0);
    std::vector<std::vector<Tensor>> outs(ctx.num_outputs());
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Value> s;
      std::vector<Tensor> x;
      for (auto& v : states) s.push_back(Value(index_axis(v.tensor(), 0, b)));
      for (auto& t : scans) x.push_back(index_axis(t, 0, b));
      run_one(ctx, s, x, 0, [&](size_t i, Value v) { outs[i].push_back(v.tensor()); });
    }
    for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(i, Value(stack_axis(outs[i], 0)));
  }

 private:
  template <class Emit>
  void run_one(KernelContext& ctx, std::vector<Value> states, const std::vector<Tensor>& scans, int, Emit emit) const {
    std::vector<int64_t> axes;
    int64_t length = -1;
    for (size_t i = 0; i < scans.size(); ++i) {
      int64_t axis = i < in_axes_.size() ? normalize_axis(in_axes_[i], scans[i].rank()) : 0;
      axes.push_back(axis);
      int64_t len = scans[i].dim(static_cast<int>(axis));
      ONYX_KERNEL_CHECK(length < 0 || len == length, "Scan inputs have different sequence lengths");
      length = len;
    }
    if (length < 0) length = 0;
    std::vector<std::vector<Tensor>> outs(num_scan_outputs_);
    for (int64_t t = 0; t < length; ++t) {
      std::vector<Value> in = states;
      for (size_t i = 0; i < scans.size(); ++i) {
        bool reverse = i < in_dirs_.size() && in_dirs_[i] == 1;
        in.push_back(Value(index_axis(scans[i], static_cast<int>(axes[i]), reverse ? length - 1 - t : t)));
      }
      std::vector<Value> out = ctx.run_subgraph(*body_, std::move(in));
      for (int64_t i = 0; i < num_states_; ++i) states[i] = std::move(out[i]);
      for (int64_t i = 0; i < num_scan_outputs_; ++i) outs[i].push_back(out[num_states_ + i].tensor());
    }
    for (int64_t i = 0; i < num_states_; ++i) emit(i, states[i]);
    for (int64_t i = 0; i < num_scan_outputs_; ++i) {
      bool reverse = static_cast<size_t>(i) < out_dirs_.size() && out_dirs_[i] == 1;
      if (reverse) std::reverse(outs[i].begin(), outs[i].end());
      ONYX_KERNEL_CHECK(!outs[i].empty(), "Scan with zero iterations cannot infer its scan output shapes");
      int rank = outs[i][0].rank() + 1;
      int axis = static_cast<size_t>(i) < out_axes_.size() ? static_cast<int>(normalize_axis(out_axes_[i], rank)) : 0;
      emit(num_states_ + i, Value(stack_axis(outs[i], axis)));
    }
  }

  std::shared_ptr<const CompiledGraph> body_;
  bool legacy_batch_ = false;
  int64_t num_scan_inputs_ = 0, num_states_ = 0, num_scan_outputs_ = 0;
  std::vector<int64_t> in_dirs_, out_dirs_, in_axes_, out_axes_;
};

template <class K>
KernelFactory make() {
  return [](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> { return std::make_unique<K>(ctx); };
}

}  // namespace

void register_control_flow(KernelRegistry& r) {
  r.add("If", 1, kMaxOpset, make<IfKernel>());
  r.add("Loop", 1, kMaxOpset, make<LoopKernel>());
  r.add("Scan", 8, kMaxOpset, make<ScanKernel>());
}

}  // namespace onyx
