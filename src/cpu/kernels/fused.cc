// Kernels of the fused ops the optimizer introduces (domain com.onyx, see
// docs/fused_ops.md): FusedConv, FusedMatMul, Gelu, SkipLayerNormalization,
// Attention.
#include <cmath>
#include <optional>

#include "base/cpu_features.h"
#include "cpu/conv_as_gemm.h"
#include "cpu/depth_planes_conv.h"
#include "cpu/cpu_provider.h"
#include "cpu/grouped_conv1d.h"
#include "cpu/dnnl_conv.h"
#include "cpu/gemm.h"
#include "cpu/gemm_vmath.h"
#include "cpu/half_via_float.h"
#include "cpu/kernels/attention_core.h"
#include "cpu/vm_parallel.h"
#include "kernels/broadcast.h"

namespace onyx {

namespace {

const std::string kDomain = "com.onyx";

// Applies an activation in place.
ONYX_VECTOR_CLONES void apply_activation(float* y, int64_t n, const std::string& act, const std::vector<float>& p) {
  if (act.empty()) return;
  if (act == "Relu") {
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0 ? y[i] : 0;
  } else if (act == "LeakyRelu") {
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] >= 0 ? y[i] : y[i] * p[0];
  } else if (act == "Clip") {
    for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i], p[0]), p[1]);
  } else if (act == "Sigmoid") {
    vm::sigmoid(y, y, n);
  } else if (act == "Tanh") {
    vm::tanh(y, y, n);
  } else if (act == "Swish") {
    vm::swish(y, y, n, p.empty() ? 1.0f : p[0]);
  } else if (act == "HardSigmoid") {
    for (int64_t i = 0; i < n; ++i) y[i] = std::min(1.0f, std::max(0.0f, p[0] * y[i] + p[1]));
  } else if (act == "HardSwish") {
    const float alpha = p.size() > 0 ? p[0] : 1.0f / 6, beta = p.size() > 1 ? p[1] : 0.5f;
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] * std::min(1.0f, std::max(0.0f, std::fma(alpha, y[i], beta)));
  } else if (act == "Gelu") {
    vm::gelu_erf(y, y, n);
  } else if (act == "GeluTanh") {
    vm::gelu_tanh(y, y, n);
  } else {
    kernel_fail("unknown fused activation '" + act + "'");
  }
}

// The activation the GEMM's epilogue applies for `act` (a fused node's
// activation name; Gelu with `tanh` is its tanh form), or nothing where it
// has none: the caller applies `act` after the GEMM.
std::optional<GemmActivation> epilogue_activation(const std::string& act, bool tanh, const std::vector<float>& params) {
  if (act.empty()) return GemmActivation::None;
  if (act == "Relu") return GemmActivation::Relu;
  if (act == "Gelu") return tanh ? GemmActivation::GeluTanh : GemmActivation::Gelu;
  if (act == "GeluTanh") return GemmActivation::GeluTanh;
  if (act == "Swish" && (params.empty() || params == std::vector<float>{1.0f})) return GemmActivation::Swish;
  return std::nullopt;
}

// Forwards a fused node's inputs to an inner kernel and captures its output.
class CaptureContext final : public KernelContext {
 public:
  CaptureContext(KernelContext& outer, const Node& inner) : outer_(outer), inner_(inner) {}
  const Node& node() const override { return inner_; }
  size_t num_inputs() const override { return inner_.inputs.size(); }
  bool has_input(size_t i) const override { return i < inner_.inputs.size() && outer_.has_input(i); }
  const Value& input_value(size_t i) const override { return outer_.input_value(i); }
  size_t num_outputs() const override { return 1; }
  bool wants_output(size_t i) const override { return i == 0; }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    out_ = Value(Tensor(dtype, shape));
    return out_.tensor();
  }
  void set_output(size_t i, Value v) override { out_ = std::move(v); }
  ThreadPool* thread_pool() const override { return outer_.thread_pool(); }
  std::vector<Value> run_subgraph(const CompiledGraph& g, std::vector<Value> in) const override {
    return outer_.run_subgraph(g, std::move(in));
  }
  Value& output() { return out_; }

 private:
  KernelContext& outer_;
  const Node& inner_;
  Value out_;
};

// y + z with broadcasting; in place when z does not grow y.
Tensor add_residual(Tensor y, const Tensor& z) {
  ONYX_KERNEL_CHECK(z.dtype() == DataType::Float, "FusedConv residual must be float");
  Shape shape = broadcast_shapes({y.shape(), z.shape()});
  if (shape == y.shape() && z.shape() == y.shape()) {
    float* yp = y.data<float>();
    const float* zp = z.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) yp[i] += zp[i];
    return y;
  }
  Tensor out(DataType::Float, shape);
  std::vector<int64_t> yo = broadcast_offsets(y.shape(), shape), zo = broadcast_offsets(z.shape(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = y.data<float>()[yo[i]] + z.data<float>()[zo[i]];
  return out;
}

// Conv (by the CPU Conv kernel), plus an optional residual Z, then an activation.
class FusedConvKernel final : public Kernel {
 public:
  explicit FusedConvKernel(const KernelInitContext& ctx) {
    conv_node_ = ctx.node();
    conv_node_.op_type = "Conv";
    conv_node_.domain = "";
    conv_node_.attributes.erase("activation");
    conv_node_.attributes.erase("activation_params");
    conv_node_.inputs.resize(3);  // X, W, B: the residual Z is ours
    while (!conv_node_.inputs.empty() && conv_node_.inputs.back().empty()) conv_node_.inputs.pop_back();
    activation_ = ctx.get_string("activation", "");
    params_ = ctx.get_floats("activation_params", {});
    std::vector<const Tensor*> constants;
    for (size_t i = 0; i < conv_node_.inputs.size(); ++i) constants.push_back(ctx.constant_input(i));
    KernelInitContext inner(conv_node_, 17, constants, nullptr);
    const KernelDef* def = cpu_kernel_registry().find(conv_node_, 17);
    if (!def) kernel_fail("no Conv kernel for FusedConv");
    conv_ = def->factory(inner);
    // Float convolutions run in oneDNN with the residual and activation as post-ops.
    DnnlConvConfig cfg;
    cfg.attrs = attrs_ = SpatialAttrs::read(ctx);
    cfg.group = group_ = ctx.get_int("group", 1);
    cfg.activation = activation_;
    cfg.activation_params = params_;
    cfg.constant_weights = ctx.constant_input(1) != nullptr;
    if (dnnl_available() && DnnlConv::supports(cfg, 4)) dnnl_ = std::make_unique<DnnlConv>(cfg);
    depth_planes_ = DepthPlanesConv::create(cfg, ctx.constant_input(1), ctx.constant_input(2) != nullptr);
  }
  void run(KernelContext& ctx) const override {
    if (run_as_gemm(ctx)) return;
    if (depth_planes_ && run_depth_planes(ctx)) return;
    if (dnnl_ && run_dnnl(ctx)) return;
    CaptureContext inner(ctx, conv_node_);
    conv_->run(inner);
    Tensor y = inner.output().tensor();
    ONYX_KERNEL_CHECK(y.dtype() == DataType::Float, "FusedConv supports float only");
    if (ctx.has_input(3)) y = add_residual(y, ctx.input(3));
    apply_activation(y.data<float>(), y.numel(), activation_, params_);
    ctx.set_output(0, Value(y));
  }

 private:
  // Float X, W and bias whose ranks and channels make a convolution of this
  // group; anything else is left to the generic path (and its errors).
  bool float_operands_fit(const KernelContext& ctx) const {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    return x.dtype() == DataType::Float && w.dtype() == DataType::Float && (!b || b->dtype() == DataType::Float) &&
           x.rank() >= 3 && x.rank() == w.rank() && x.dim(1) == w.dim(1) * group_ && w.dim(0) % group_ == 0 &&
           (!b || b->numel() == w.dim(0));
  }

  // No residual Z, or a float one of the output's shape ys; any other Z is
  // left to the generic path (and its error).
  static bool residual_fits(const KernelContext& ctx, const Shape& ys) {
    return !ctx.has_input(3) || (ctx.input(3).dtype() == DataType::Float && ctx.input(3).shape() == ys);
  }

  // The convs that run as GEMMs over the plain input (cpu/conv_as_gemm.h);
  // false (nothing done) for the others.
  bool run_as_gemm(KernelContext& ctx) const {
    if (!float_operands_fit(ctx)) return false;
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const SpatialGeometry g = compute_geometry(Shape(x.shape().begin() + 2, x.shape().end()), attrs_,
                                               std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()));
    const ConvAsGemm gemm_conv = conv_as_gemm(w.shape(), g, group_);
    if (!gemm_conv) return false;
    Shape ys = {x.dim(0), w.dim(0)};
    ys.insert(ys.end(), g.out.begin(), g.out.end());
    if (!residual_fits(ctx, ys)) return false;
    Tensor& y = ctx.allocate_output(0, DataType::Float, ys);
    const auto in_gemm = epilogue_activation(activation_, false, params_);
    gemm_conv(x.data<float>(), x.dim(0), x.dim(1), w.data<float>(), w.dim(0), b ? b->data<float>() : nullptr,
              z ? z->data<float>() : nullptr, g, in_gemm.value_or(GemmActivation::None), y.data<float>(),
              ctx.thread_pool());
    if (!in_gemm) apply_activation(y.data<float>(), y.numel(), activation_, params_);
    return true;
  }

  // 3-D convs one plane deep as 2-D ones (cpu/depth_planes_conv.h); false
  // (nothing done) for the others.
  bool run_depth_planes(KernelContext& ctx) const {
    if (!float_operands_fit(ctx)) return false;
    const Tensor& x = ctx.input(0);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (!depth_planes_->use_for(x.shape(), b, ctx.thread_pool())) return false;
    const Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const Shape ys = depth_planes_->output_shape(x.shape());
    if (!residual_fits(ctx, ys)) return false;
    Tensor& y = ctx.allocate_output(0, DataType::Float, ys);
    depth_planes_->run(x.data<float>(), x.shape(), b, z ? z->data<float>() : nullptr, y.data<float>(),
                       ctx.thread_pool());
    return true;
  }

  // The oneDNN path; false (nothing done) for cases it leaves to the generic one.
  bool run_dnnl(KernelContext& ctx) const {
    if (!float_operands_fit(ctx)) return false;
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (x.rank() > 5 || x.numel() == 0 || is_pointwise_head(w.shape(), attrs_, group_) ||
        is_small_group_conv1d(x.rank(), w.shape(), group_))
      return false;
    Shape ys = dnnl_->output_shape(x.shape(), w.shape());
    if (!residual_fits(ctx, ys)) return false;
    Tensor& y = ctx.allocate_output(0, DataType::Float, ys);
    if (y.numel() == 0) return true;
    DnnlConv::Io io;
    io.x = x.data<float>();
    io.x_shape = x.shape();
    io.w = &w;
    io.b = b;
    io.z = z ? z->data<float>() : nullptr;
    if (!dnnl_->run(io, y.data<float>(), ctx.thread_pool()))
      apply_activation(y.data<float>(), y.numel(), activation_, params_);
    return true;
  }

  std::unique_ptr<DnnlConv> dnnl_;
  std::unique_ptr<DepthPlanesConv> depth_planes_;
  SpatialAttrs attrs_;
  int64_t group_ = 1;
  Node conv_node_;
  std::unique_ptr<Kernel> conv_;
  std::string activation_;
  std::vector<float> params_;
};

// Y = act(A @ W + bias), W a 2-D float matrix (packed once at init when it is
// a constant), A of any rank >= 1. Bias and activation run in the GEMM epilogue.
class FusedMatMulKernel final : public Kernel {
 public:
  explicit FusedMatMulKernel(const KernelInitContext& ctx) {
    const std::string act = ctx.get_string("activation", "");
    const std::vector<float> params = ctx.get_floats("activation_params", {});
    if (auto in_gemm = epilogue_activation(act, ctx.get_string("approximate", "none") == "tanh", params)) {
      epi_act_ = *in_gemm;
    } else {
      activation_ = act;  // applied after the GEMM
      params_ = params;
    }
    const Tensor* w = ctx.constant_input(1);
    if (w && w->dtype() == DataType::Float && w->rank() == 2) {
      packed_ = gemm_pack_b(false, w->dim(0), w->dim(1), w->data<float>(), w->dim(1));
      if (!packed_.empty()) ctx.packed_constant(1);
    }
    const Tensor* b = ctx.constant_input(2);
    if (b && b->dtype() == DataType::Float) bias_ = *b;
  }
  void run(KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& w = ctx.input(1);
    ONYX_KERNEL_CHECK(a.dtype() == DataType::Float && w.dtype() == DataType::Float && w.rank() == 2,
                      "FusedMatMul needs float A and a 2-D float W");
    ONYX_KERNEL_CHECK(a.rank() >= 1 && a.dim(-1) == w.dim(0),
                      "FusedMatMul: A " + shape_to_string(a.shape()) + " and W " + shape_to_string(w.shape()) +
                          " do not multiply");
    int64_t K = w.dim(0), N = w.dim(1), M = K > 0 ? a.numel() / K : 0;
    Shape out_shape = a.shape();
    out_shape.back() = N;
    Tensor& y = ctx.allocate_output(0, DataType::Float, out_shape);
    float* yp = y.data<float>();
    GemmEpilogue epi;
    epi.activation = epi_act_;
    if (ctx.has_input(2)) {
      const Tensor& b = bias_.defined() ? bias_ : ctx.input(2);
      ONYX_KERNEL_CHECK(b.dtype() == DataType::Float && b.numel() == N,
                        "FusedMatMul bias has " + std::to_string(b.numel()) + " values, expected " + std::to_string(N));
      epi.bias = b.data<float>();
    }
    if (!packed_.empty())
      gemm_f32_packed(false, M, 1.0f, a.data<float>(), K, packed_, 0.0f, yp, N, ctx.thread_pool(), epi);
    else
      gemm_f32(false, false, M, N, K, 1.0f, a.data<float>(), K, w.data<float>(), N, 0.0f, yp, N, ctx.thread_pool(), epi);
    if (!activation_.empty()) apply_activation(yp, y.numel(), activation_, params_);
  }

 private:
  GemmActivation epi_act_ = GemmActivation::None;
  std::string activation_;
  std::vector<float> params_;
  PackedB packed_;
  Tensor bias_;
};

class GeluKernel final : public Kernel {
 public:
  explicit GeluKernel(const KernelInitContext& ctx) : tanh_(ctx.get_string("approximate", "none") == "tanh") {}
  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ONYX_KERNEL_CHECK(x.dtype() == DataType::Float, "Gelu supports float only");
    Tensor& y = ctx.allocate_output(0, DataType::Float, x.shape());
    vm::parallel_map(ctx.thread_pool(), x.data<float>(), y.data<float>(), x.numel(),
                     tanh_ ? vm::gelu_tanh : vm::gelu_erf);
  }

 private:
  bool tanh_;
};

// y = LayerNorm(input + skip) * gamma + beta over the last axis.
class SkipLayerNormKernel final : public Kernel {
 public:
  explicit SkipLayerNormKernel(const KernelInitContext& ctx) : eps_(ctx.get_float("epsilon", 1e-5f)) {}
  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& s = ctx.input(1);
    const Tensor& gamma = ctx.input(2);
    const Tensor* beta = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    ONYX_KERNEL_CHECK(x.dtype() == DataType::Float && s.dtype() == DataType::Float, "SkipLayerNormalization: float only");
    Shape shape = broadcast_shapes({x.shape(), s.shape()});
    int64_t H = shape.back(), rows = shape_numel(shape) / H;
    ONYX_KERNEL_CHECK(gamma.numel() == H && (!beta || beta->numel() == H), "SkipLayerNormalization: scale size mismatch");
    ONYX_KERNEL_CHECK(gamma.dtype() == DataType::Float && (!beta || beta->dtype() == DataType::Float),
                      "SkipLayerNormalization: scale and bias must be float");
    Tensor& y = ctx.allocate_output(0, DataType::Float, shape);
    const float *xp = x.data<float>(), *sp = s.data<float>(), *g = gamma.data<float>();
    const float* b = beta ? beta->data<float>() : nullptr;
    float* yp = y.data<float>();
    if (x.rank() >= 1 && s.rank() >= 1 && x.dim(-1) == H && s.dim(-1) == H) {
      // Same shapes, or a broadcast over whole rows, as word + position embeddings ([B, S, H] +
      // [1, S, H]): offsets per row, and each row takes the vector pass.
      ThreadPool* pool = rows * H > 32768 ? ctx.thread_pool() : nullptr;
      Shape row_shape(shape.begin(), shape.end() - 1);
      std::vector<int64_t> xr = broadcast_offsets(Shape(x.shape().begin(), x.shape().end() - 1), row_shape);
      std::vector<int64_t> sr = broadcast_offsets(Shape(s.shape().begin(), s.shape().end() - 1), row_shape);
      parallel_for(pool, rows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) vm::layer_norm(xp + xr[r] * H, sp + sr[r] * H, yp + r * H, H, g, b, eps_);
      });
      return;
    }
    std::vector<int64_t> xo = broadcast_offsets(x.shape(), shape), so = broadcast_offsets(s.shape(), shape);
    parallel_for(ctx.thread_pool(), rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* row = yp + r * H;
        double sum = 0;
        for (int64_t h = 0; h < H; ++h) {
          int64_t k = r * H + h;
          row[h] = xp[xo[k]] + sp[so[k]];
          sum += row[h];
        }
        float mean = static_cast<float>(sum / H);
        double var = 0;
        for (int64_t h = 0; h < H; ++h) var += (row[h] - mean) * (row[h] - mean);
        float inv = 1.0f / std::sqrt(static_cast<float>(var / H) + eps_);
        for (int64_t h = 0; h < H; ++h) row[h] = (row[h] - mean) * inv * g[h] + (b ? b[h] : 0.0f);
      }
    });
  }

 private:
  float eps_;
};

// Self-attention with packed Q/K/V projection weights [hidden, 3*hidden]
// (packed for the GEMM once at init when constant; the bias is added in the
// GEMM epilogue), then the shared attention core (attention_core.h).
class AttentionKernel final : public Kernel {
 public:
  explicit AttentionKernel(const KernelInitContext& ctx)
      : heads_(ctx.get_int("num_heads")), scale_(ctx.get_float("scale", 0.0f)) {
    ONYX_KERNEL_CHECK(heads_ > 0, "Attention needs num_heads > 0");
    const Tensor* w = ctx.constant_input(1);
    if (w && w->dtype() == DataType::Float && w->rank() == 2) {
      packed_ = gemm_pack_b(false, w->dim(0), w->dim(1), w->data<float>(), w->dim(1));
      if (!packed_.empty()) ctx.packed_constant(1);
    }
  }
  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& bias = ctx.input(2);
    ONYX_KERNEL_CHECK(x.dtype() == DataType::Float && x.rank() == 3, "Attention needs a float [batch, seq, hidden] input");
    ONYX_KERNEL_CHECK(w.dtype() == DataType::Float && w.rank() == 2 && bias.dtype() == DataType::Float,
                      "Attention needs 2-D float weights and a float bias");
    int64_t B = x.dim(0), S = x.dim(1), hidden_in = x.dim(2), hidden = w.dim(1) / 3, D = hidden / heads_;
    ONYX_KERNEL_CHECK(w.dim(0) == hidden_in && w.dim(1) == 3 * hidden && bias.numel() == 3 * hidden &&
                          D * heads_ == hidden,
                      "Attention weights " + shape_to_string(w.shape()) + " do not fit the input " + shape_to_string(x.shape()));
    float scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(D));
    // The additive mask, broadcast to [B, heads, S, S].
    const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    std::vector<int64_t> mask_strides;
    if (mask) {
      ONYX_KERNEL_CHECK(mask->dtype() == DataType::Float && mask->rank() <= 4, "Attention mask must be float, rank <= 4");
      broadcast_shapes({mask->shape(), Shape{B, heads_, S, S}});
      mask_strides = broadcast_strides(mask->shape(), Shape{B, heads_, S, S});
    }
    Tensor& out = ctx.allocate_output(0, DataType::Float, {B, S, hidden});
    if (out.numel() == 0) return;
    // QKV = x @ W + b  -> [B*S, 3*hidden], in a per-thread scratch buffer
    thread_local std::vector<float> qkv_buf;
    const int64_t ld = 3 * hidden;
    if (qkv_buf.size() < static_cast<size_t>(B * S * ld)) qkv_buf.resize(static_cast<size_t>(B * S * ld));
    float* qkv = qkv_buf.data();
    GemmEpilogue epi;
    epi.bias = bias.data<float>();
    if (!packed_.empty())
      gemm_f32_packed(false, B * S, 1.0f, x.data<float>(), hidden_in, packed_, 0.0f, qkv, ld, ctx.thread_pool(), epi);
    else
      gemm_f32(false, false, B * S, ld, hidden_in, 1.0f, x.data<float>(), hidden_in, w.data<float>(), ld, 0.0f, qkv,
               ld, ctx.thread_pool(), epi);
    AttentionProblem p;
    p.B = B, p.N = heads_, p.Sq = S, p.T = S, p.Dqk = D, p.Dv = D, p.scale = scale;
    p.q = {qkv, S * ld, D, ld};
    p.k = {qkv + hidden, S * ld, D, ld};
    p.v = {qkv + 2 * hidden, S * ld, D, ld};
    if (mask) p.mask = {mask->data<float>(), mask_strides[0], mask_strides[1], mask_strides[2], mask_strides[3]};
    p.out = out.data<float>();
    run_attention(p, ctx.thread_pool());
  }

 private:
  int64_t heads_;
  float scale_;
  PackedB packed_;
};

template <class K>
KernelFactory make() {
  return [](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> { return std::make_unique<K>(ctx); };
}

}  // namespace

void register_fused(KernelRegistry& r) {
  // The fusions also match float16 / bfloat16 graphs: those run in float.
  r.add("FusedConv", 1, kMaxOpset, half_via_float(make<FusedConvKernel>()), kDomain);
  r.add("FusedMatMul", 1, kMaxOpset, half_via_float(make<FusedMatMulKernel>()), kDomain);
  r.add("Gelu", 1, kMaxOpset, half_via_float(make<GeluKernel>()), kDomain);
  r.add("SkipLayerNormalization", 1, kMaxOpset, half_via_float(make<SkipLayerNormKernel>()), kDomain);
  r.add("Attention", 1, kMaxOpset, half_via_float(make<AttentionKernel>()), kDomain);
}

}  // namespace onyx
