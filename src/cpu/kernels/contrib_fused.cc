// ONNX Runtime's fused contrib ops (domain com.microsoft) as its graph
// optimizer (models saved at level "extended") and its transformers optimizer
// write them: FusedConv, FusedMatMul, FusedGemm, and the GELU family (Gelu,
// BiasGelu, FastGelu, QuickGelu). Behaviour checked against onnxruntime
// (scripts/contrib_cases/fused_activations.py).
//
// FusedConv and FusedGemm run the kernels Onyx already has (com.onyx
// FusedConv; Gemm plus the ONNX activation ops) built from the CPU registry,
// so they share those kernels' weight packing and oneDNN paths.
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"
#include "cpu/gemm_vmath.h"
#include "cpu/half_via_float.h"
#include "cpu/matmul_plan.h"
#include "cpu/shape_copy.h"
#include "cpu/vm_parallel.h"
#include "runtime/node_evaluator.h"

namespace onyx {
namespace {

const char* kMicrosoft = "com.microsoft";

// The CPU registry's kernel for `node`, made with the outer node's constant
// inputs (same input order); constants the inner kernel packs are declared
// packed on the outer context too, so the session can free them.
std::unique_ptr<Kernel> make_registered_kernel(const KernelInitContext& outer, const Node& node, int64_t opset) {
  std::vector<const Tensor*> constants;
  for (size_t i = 0; i < node.inputs.size(); ++i) constants.push_back(outer.constant_input(i));
  KernelInitContext inner(node, opset, constants, nullptr);
  inner.set_provider(outer.provider());
  const KernelDef* def = cpu_kernel_registry().find(node, opset);
  if (!def) kernel_fail("no CPU kernel for " + node.op_type + " (needed by " + outer.node().op_type + ")");
  std::unique_ptr<Kernel> kernel = def->factory(inner);
  for (size_t i = 0; i < constants.size(); ++i)
    if (inner.constant_was_packed(i)) outer.packed_constant(i);
  return kernel;
}

// Runs an inner kernel for the outer node: its inputs are the outer node's
// (or `inputs` when given), its output 0 is allocated as the outer node's
// output 0, so the session's planned buffer is used and nothing is copied.
class ForwardingContext final : public KernelContext {
 public:
  ForwardingContext(KernelContext& outer, const Node& inner, const std::vector<Value>* inputs = nullptr)
      : outer_(outer), inner_(inner), inputs_(inputs) {}
  const Node& node() const override { return inner_; }
  size_t num_inputs() const override { return inner_.inputs.size(); }
  bool has_input(size_t i) const override {
    if (inputs_) return i < inputs_->size() && !(*inputs_)[i].is_none();
    return i < inner_.inputs.size() && outer_.has_input(i);
  }
  const Value& input_value(size_t i) const override {
    if (!inputs_) return outer_.input_value(i);
    if (!has_input(i)) kernel_fail(inner_.op_type + ": input " + std::to_string(i) + " is missing");
    return (*inputs_)[i];
  }
  size_t num_outputs() const override { return 1; }
  bool wants_output(size_t i) const override { return i == 0; }
  Tensor& allocate_output(size_t, DataType dtype, const Shape& shape) override {
    out_ = &outer_.allocate_output(0, dtype, shape);
    return *out_;
  }
  void set_output(size_t, Value v) override {
    set_ = v;  // shares the tensor's buffer
    out_ = &set_.tensor();
    outer_.set_output(0, std::move(v));
  }
  ThreadPool* thread_pool() const override { return outer_.thread_pool(); }
  std::vector<Value> run_subgraph(const CompiledGraph& g, std::vector<Value> in) const override {
    return outer_.run_subgraph(g, std::move(in));
  }
  // The output the inner kernel wrote (null before it ran).
  Tensor* output() const { return out_; }

 private:
  KernelContext& outer_;
  const Node& inner_;
  const std::vector<Value>* inputs_;
  Tensor* out_ = nullptr;
  Value set_;
};

// ---- FusedConv

// ORT's FusedConv takes the activations of its MLAS convolution, each with a
// fixed number of activation_params; com.onyx FusedConv computes the same
// thing (Y = act(Conv(X, W, B) + Z)) for all of them.
void check_conv_activation(const KernelInitContext& ic) {
  static const std::map<std::string, size_t> kParams = {{"Relu", 0}, {"Tanh", 0},        {"Sigmoid", 0},
                                                        {"LeakyRelu", 1}, {"Clip", 2}, {"HardSigmoid", 2}};
  std::string act = ic.get_string("activation", "");
  if (act.empty()) return;
  auto it = kParams.find(act);
  if (it == kParams.end())
    kernel_fail("FusedConv: unsupported activation '" + act + "' (Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid)");
  size_t got = ic.get_floats("activation_params", {}).size();
  if (got != it->second)
    kernel_fail("FusedConv: activation " + act + " needs " + std::to_string(it->second) +
                " activation_params, got " + std::to_string(got));
}

std::unique_ptr<Kernel> make_fused_conv(const KernelInitContext& ic) {
  check_conv_activation(ic);
  Node conv = ic.node();
  conv.domain = "com.onyx";
  return make_registered_kernel(ic, conv, 1);
}

// ---- FusedGemm

// Y = act(Gemm(A, B, C)); the activation is one of ORT's elementwise
// functors, its attributes given as activation_alpha / _beta / _gamma.
class FusedGemmKernel final : public Kernel {
 public:
  explicit FusedGemmKernel(const KernelInitContext& ic) : act_(ic.get_string("activation", "")) {
    gemm_node_ = ic.node();
    gemm_node_.op_type = "Gemm";
    gemm_node_.domain = "";
    Node act_node;
    act_node.op_type = act_;
    act_node.inputs = {"x"};
    act_node.outputs = {"y"};
    for (auto it = gemm_node_.attributes.begin(); it != gemm_node_.attributes.end();) {
      if (it->first.rfind("activation", 0) != 0) {
        ++it;
        continue;
      }
      if (it->first.rfind("activation_", 0) == 0) act_node.attributes[it->first.substr(11)] = it->second;
      it = gemm_node_.attributes.erase(it);
    }
    gemm_ = make_registered_kernel(ic, gemm_node_, 13);
    alpha_ = act_node.attributes.count("alpha") ? act_node.attributes["alpha"].f : 1.0f;
    beta_ = act_node.attributes.count("beta") ? act_node.attributes["beta"].f : 1.0f;
    // Not ONNX ops (ORT-only functors): computed here, and like ORT they need both parameters.
    if (act_ == "ScaledTanh" || act_ == "ParametricSoftplus") {
      ONYX_KERNEL_CHECK(act_node.attributes.count("alpha") && act_node.attributes.count("beta"),
                        "FusedGemm: activation " + act_ + " needs activation_alpha and activation_beta");
      return;
    }
    static const std::set<std::string> kOnnx = {"Celu", "Elu",  "HardSigmoid",     "LeakyRelu", "Relu", "Selu",
                                                "Sigmoid", "Softplus", "Softsign", "Tanh", "ThresholdedRelu"};
    if (act_.empty() || act_ == "Relu") return;
    if (!kOnnx.count(act_))
      kernel_fail("FusedGemm: unsupported activation '" + act_ +
                  "' (Celu, Elu, HardSigmoid, LeakyRelu, Relu, Selu, Sigmoid, Softplus, Softsign, Tanh, "
                  "ThresholdedRelu, ScaledTanh, ParametricSoftplus)");
    act_node_ = act_node;
    activation_ = make_registered_kernel(ic, act_node_, 17);
  }

  void run(KernelContext& ctx) const override {
    ONYX_KERNEL_CHECK(ctx.input(0).dtype() == DataType::Float,
                      "FusedGemm supports float only, got " + dtype_name(ctx.input(0).dtype()));
    if (!activation_) {
      ForwardingContext gemm(ctx, gemm_node_);
      gemm_->run(gemm);
      if (gemm.output()) apply_in_place(*gemm.output());
      return;
    }
    std::vector<Value> in;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) in.push_back(ctx.has_input(i) ? ctx.input_value(i) : Value());
    SingleNodeContext gemm(gemm_node_, in, ctx.thread_pool());
    gemm_->run(gemm);
    std::vector<Value> act_in;
    act_in.push_back(std::move(gemm.outputs()[0]));
    ForwardingContext act(ctx, act_node_, &act_in);
    activation_->run(act);
  }

 private:
  void apply_in_place(Tensor& t) const {
    float* p = t.data<float>();
    const int64_t n = t.numel();
    if (act_ == "Relu") {
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] < 0.0f ? 0.0f : p[i];  // NaN stays NaN, as in Relu
    } else if (act_ == "ScaledTanh") {
      for (int64_t i = 0; i < n; ++i) p[i] *= beta_;
      vm::tanh(p, p, n);
      for (int64_t i = 0; i < n; ++i) p[i] *= alpha_;
    } else if (act_ == "ParametricSoftplus") {
      for (int64_t i = 0; i < n; ++i) {
        float v = beta_ * p[i];
        p[i] = alpha_ * (v > 0.0f ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)));
      }
    }
  }

  std::string act_;
  float alpha_ = 1.0f, beta_ = 1.0f;
  Node gemm_node_, act_node_;
  std::unique_ptr<Kernel> gemm_, activation_;
};

// ---- FusedMatMul

// A with its first axis moved to the second-to-last place: transBatch reads
// [M, b0, ..., bn, K] as the batch [b0, ..., bn] of [M, K] matrices.
Tensor batch_axis_last(const Tensor& t) {
  const int64_t r = t.rank();
  Shape out(t.shape().begin() + 1, t.shape().end());
  out.insert(out.end() - 1, t.dim(0));
  std::vector<int64_t> in_strides(r, 1), strides(r);
  for (int64_t d = r - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * t.dim(d + 1);
  for (int64_t d = 0; d < r - 2; ++d) strides[d] = in_strides[d + 1];
  strides[r - 2] = in_strides[0];
  strides[r - 1] = 1;
  Tensor y(DataType::Float, out);
  shape_detail::strided_copy(t.data<float>(), 0, strides, y.data<float>(), out);
  return y;
}

// The matrix shape op() reads: the last two dims swapped when transposed.
Shape logical_shape(const Shape& s, bool trans) {
  Shape l = s;
  if (trans && l.size() >= 2) std::swap(l[l.size() - 1], l[l.size() - 2]);
  return l;
}

// Y = alpha * op(A) @ op(B), numpy-broadcast over the batch dimensions. A
// transposed operand is read by the GEMM in place; a transBatch one is copied
// to the plain layout first. A 1-D operand ignores its transpose flag (as ORT does).
class FusedMatMulKernel final : public Kernel {
 public:
  explicit FusedMatMulKernel(const KernelInitContext& ic)
      : alpha_(ic.get_float("alpha", 1.0f)), trans_a_(ic.get_int("transA", 0) != 0),
        trans_b_(ic.get_int("transB", 0) != 0), batch_a_(ic.get_int("transBatchA", 0) != 0),
        batch_b_(ic.get_int("transBatchB", 0) != 0) {
    const Tensor* w = ic.constant_input(1);
    if (w && w->dtype() == DataType::Float && w->rank() == 2 && w->numel() > 0 && !batch_a_ && !batch_b_) {
      int64_t K = trans_b_ ? w->dim(1) : w->dim(0), N = trans_b_ ? w->dim(0) : w->dim(1);
      packed_ = gemm_pack_b(trans_b_, K, N, w->data<float>(), w->dim(1));
      if (!packed_.empty()) {
        b_shape_ = w->shape();
        ic.packed_constant(1);
      }
    }
  }

  void run(KernelContext& ctx) const override {
    const Tensor& a_in = ctx.input(0);
    const Tensor& b_in = ctx.input(1);
    ONYX_KERNEL_CHECK(a_in.dtype() == DataType::Float && b_in.dtype() == DataType::Float,
                      "FusedMatMul supports float only, got A " + dtype_name(a_in.dtype()) + " and B " +
                          dtype_name(b_in.dtype()));
    if (batch_a_ || batch_b_)
      ONYX_KERNEL_CHECK(a_in.rank() > 2 && a_in.rank() == b_in.rank(),
                        "FusedMatMul: transBatchA/transBatchB need A and B of the same rank >= 3, got " +
                            shape_to_string(a_in.shape()) + " and " + shape_to_string(b_in.shape()));
    Tensor a = batch_a_ ? batch_axis_last(a_in) : a_in;
    Tensor b = batch_b_ ? batch_axis_last(b_in) : b_in;
    const bool ta = trans_a_ && a.rank() >= 2, tb = trans_b_ && b.rank() >= 2;
    Shape as = logical_shape(a.shape(), ta), bs = logical_shape(packed_.empty() ? b.shape() : b_shape_, tb);
    check_inner_dims(as, bs);
    MatMulPlan p = plan_matmul(as, bs, !ta);
    Tensor& y = ctx.allocate_output(0, DataType::Float, p.out_shape);
    if (y.numel() == 0) return;
    float* yp = y.data<float>();
    const int64_t lda = ta ? p.M : p.K, ldb = tb ? p.K : p.N;
    for (int64_t i = 0; i < p.batches; ++i) {
      const float* ap = a.data<float>() + p.a_off[i];
      float* out = yp + i * p.M * p.N;
      if (!packed_.empty())
        gemm_f32_packed(ta, p.M, alpha_, ap, lda, packed_, 0.0f, out, p.N, ctx.thread_pool());
      else
        gemm_f32(ta, tb, p.M, p.N, p.K, alpha_, ap, lda, b.data<float>() + p.b_off[i], ldb, 0.0f, out, p.N,
                 ctx.thread_pool());
    }
  }

 private:
  void check_inner_dims(const Shape& as, const Shape& bs) const {
    if (as.empty() || bs.empty()) return;  // plan_matmul names the rank problem
    int64_t ka = as.back(), kb = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
    if (ka != kb)
      kernel_fail("FusedMatMul: A" + std::string(trans_a_ ? "^T" : "") + " " + shape_to_string(as) + " and B" +
                  (trans_b_ ? "^T" : "") + " " + shape_to_string(bs) + " do not multiply (" + std::to_string(ka) +
                  " vs " + std::to_string(kb) + ")");
  }

  float alpha_;
  bool trans_a_, trans_b_, batch_a_, batch_b_;
  PackedB packed_;
  Shape b_shape_;
};

// ---- GELU family

using VectorFn = std::function<void(const float*, float*, int64_t)>;

// y = f(x + bias): bias (input 1) is 1-D over x's last dimension.
class BiasActivationKernel final : public Kernel {
 public:
  BiasActivationKernel(std::string op, VectorFn f, bool bias_required = false)
      : op_(std::move(op)), f_(std::move(f)), bias_required_(bias_required) {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ONYX_KERNEL_CHECK(x.dtype() == DataType::Float, op_ + " supports float only, got " + dtype_name(x.dtype()));
    const Tensor* bias = ctx.has_input(1) ? &ctx.input(1) : nullptr;
    ONYX_KERNEL_CHECK(bias || !bias_required_, op_ + ": the bias (input 1) is required");
    if (bias) check_bias(x, *bias);
    Tensor& y = ctx.allocate_output(0, DataType::Float, x.shape());
    const int64_t n = x.numel();
    if (n == 0) return;
    if (!bias) {
      vm::parallel_map(ctx.thread_pool(), x.data<float>(), y.data<float>(), n, f_);
      return;
    }
    const int64_t H = bias->numel(), rows = n / H;
    const int64_t rows_per_task = std::max<int64_t>(1, 8192 / H);
    const float *xp = x.data<float>(), *bp = bias->data<float>();
    float* yp = y.data<float>();
    parallel_for(n > 32768 ? ctx.thread_pool() : nullptr, (rows + rows_per_task - 1) / rows_per_task,
                 [&](int64_t t0, int64_t t1) {
                   int64_t r0 = t0 * rows_per_task, r1 = std::min(rows, t1 * rows_per_task);
                   for (int64_t r = r0; r < r1; ++r)
                     for (int64_t h = 0; h < H; ++h) yp[r * H + h] = xp[r * H + h] + bp[h];
                   f_(yp + r0 * H, yp + r0 * H, (r1 - r0) * H);
                 });
  }

 private:
  void check_bias(const Tensor& x, const Tensor& bias) const {
    ONYX_KERNEL_CHECK(bias.dtype() == DataType::Float, op_ + ": bias must be float, got " + dtype_name(bias.dtype()));
    ONYX_KERNEL_CHECK(bias.rank() == 1, op_ + ": bias must be 1-D, got " + shape_to_string(bias.shape()));
    ONYX_KERNEL_CHECK(x.rank() >= 1 && bias.dim(0) == x.dim(-1),
                      op_ + ": bias " + shape_to_string(bias.shape()) + " does not match the last dimension of X " +
                          shape_to_string(x.shape()));
  }

  std::string op_;
  VectorFn f_;
  bool bias_required_;
};

KernelFactory bias_activation(const std::string& op, VectorFn f, bool bias_required = false) {
  return [op, f, bias_required](const KernelInitContext&) -> std::unique_ptr<Kernel> {
    return std::make_unique<BiasActivationKernel>(op, f, bias_required);
  };
}

// x * sigmoid(alpha x), alpha 1.702 by default: GELU's sigmoid approximation.
std::unique_ptr<Kernel> make_quick_gelu(const KernelInitContext& ic) {
  float alpha = ic.get_float("alpha", 1.702f);
  return std::make_unique<BiasActivationKernel>(
      "QuickGelu", [alpha](const float* x, float* y, int64_t n) { vm::swish(x, y, n, alpha); });
}

template <class K>
KernelFactory make() {
  return [](const KernelInitContext& ic) -> std::unique_ptr<Kernel> { return std::make_unique<K>(ic); };
}

}  // namespace

void register_contrib_fused(KernelRegistry& r) {
  r.add("FusedConv", 1, kMaxOpset, make_fused_conv, kMicrosoft);
  // float16 / bfloat16 run in float, as in onnxruntime (which casts around them).
  r.add("FusedGemm", 1, kMaxOpset, half_via_float(make<FusedGemmKernel>()), kMicrosoft);
  r.add("FusedMatMul", 1, kMaxOpset, half_via_float(make<FusedMatMulKernel>()), kMicrosoft);
  r.add("Gelu", 1, kMaxOpset, half_via_float(bias_activation("Gelu", vm::gelu_erf)), kMicrosoft);
  r.add("BiasGelu", 1, kMaxOpset, half_via_float(bias_activation("BiasGelu", vm::gelu_erf, true)), kMicrosoft);
  r.add("FastGelu", 1, kMaxOpset, half_via_float(bias_activation("FastGelu", vm::gelu_tanh)), kMicrosoft);
  r.add("QuickGelu", 1, kMaxOpset, half_via_float(make_quick_gelu), kMicrosoft);
}

}  // namespace onyx
