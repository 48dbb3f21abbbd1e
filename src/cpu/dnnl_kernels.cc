// Kernels of the blocked-layout ops (domain com.onyx, docs/fused_ops.md):
// NchwcConv, NchwcPointwiseDepthwise, NchwcMaxPool, NchwcAveragePool, NchwcGlobalAveragePool,
// ReorderInput, ReorderOutput. The optimizer's nchwc_layout pass emits them
// only when this build has oneDNN (the reorders alone are portable).
#include "base/aligned_memory.h"
#include "cpu/blocked_conv.h"
#include "cpu/dilation_phases.h"
#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_conv.h"
#include "cpu/nchwc_pointwise_depthwise.h"
#include "cpu/nchwc_pool.h"
#include "kernels/registry.h"

namespace onyx {

namespace {

const std::string kDomain = "com.onyx";

int read_block(const AttributeReader& a) {
  int64_t b = a.get_int("block", 16);
  if (b != 8 && b != 16) kernel_fail("block must be 8 or 16, got " + std::to_string(b));
  return static_cast<int>(b);
}

// The convolution config of a node's conv attributes.
DnnlConvConfig conv_config(const KernelInitContext& ctx, bool constant_weights) {
  DnnlConvConfig cfg;
  cfg.attrs = SpatialAttrs::read(ctx);
  cfg.group = ctx.get_int("group", 1);
  cfg.activation = ctx.get_string("activation", "");
  cfg.activation_params = ctx.get_floats("activation_params", {});
  cfg.constant_weights = constant_weights;
  if (!DnnlConv::supports(cfg, 4)) kernel_fail("unsupported activation '" + cfg.activation + "'");
  return cfg;
}

// A dilated stride-1 3x3 convolution with "same" padding, on a blocked image
// whose sides divide by the dilation, as the undilated one over the image's
// phases (dilation_phases.h), where that one runs as Winograd: dilated ResNet
// backbones (DeepLabV3, FCN). One-node models, A/B against the dilated direct
// kernel, 1 / 2 threads: 512 -> 512 at dilation 4 on 32x32 1.65x / 1.72x,
// 256 at dilation 2 on 32x32 1.93x / 1.84x, on 14x14 (7x7 phases) 1.39x /
// 1.22x. Where the phases are too small or narrow for Winograd it lost:
// 4x4 phases 0.82x, 16 channels 0.79x.
class DilatedAsPhases {
 public:
  static std::unique_ptr<DilatedAsPhases> create(const DnnlConvConfig& cfg, const Tensor* w, int block,
                                                 bool bias_constant) {
    const SpatialAttrs& a = cfg.attrs;
    std::vector<int64_t> kernel = a.kernel;
    if (kernel.empty() && w && w->rank() == 4) kernel = {w->dim(2), w->dim(3)};
    if (kernel != std::vector<int64_t>{3, 3} || a.dilations.size() != 2 || a.pads.size() != 4 ||
        a.auto_pad != "NOTSET" || cfg.group != 1 || !cfg.constant_weights)
      return nullptr;
    for (int64_t s : a.strides)
      if (s != 1) return nullptr;
    const int64_t dh = a.dilations[0], dw = a.dilations[1];
    if (dh * dw <= 1) return nullptr;
    for (int i = 0; i < 2; ++i)
      if (a.pads[i] != a.dilations[i] || a.pads[i + 2] != a.dilations[i]) return nullptr;
    DnnlConvConfig undilated = cfg;
    undilated.attrs.kernel = kernel;
    undilated.attrs.dilations = {1, 1};
    undilated.attrs.pads = {1, 1, 1, 1};
    return std::unique_ptr<DilatedAsPhases>(new DilatedAsPhases(dh, dw, undilated, block, bias_constant));
  }
  // Blocked input, no residual, sides that divide, and phases Winograd takes: at least
  // 7x7, 32 channels in and out (what both Winograd kernels' policies start from).
  bool use_for(const DnnlConv::Io& io) const {
    if (io.x_block == 0 || io.z || io.x_shape.size() != 5 || io.w->rank() != 4) return false;
    const int64_t H = io.x_shape[2], W = io.x_shape[3];
    return H % dh_ == 0 && W % dw_ == 0 && (H / dh_) * (W / dw_) >= 7 * 7 && io.w->dim(0) >= 32 && io.w->dim(1) >= 32;
  }
  void run(const DnnlConv::Io& io, const Shape& y_blocked, float* y, ThreadPool* pool) const {
    thread_local AlignedScratch x_scratch, y_scratch;
    const Shape xs = dilation_phases_shape(io.x_shape, dh_, dw_), ys = dilation_phases_shape(y_blocked, dh_, dw_);
    float* x_phases = x_scratch.get(static_cast<size_t>(shape_numel(xs)));
    float* y_phases = y_scratch.get(static_cast<size_t>(shape_numel(ys)));
    image_to_dilation_phases(io.x, io.x_shape, dh_, dw_, x_phases, pool);
    DnnlConv::Io phases = io;
    phases.x = x_phases;
    phases.x_shape = xs;
    undilated_.run(phases, y_phases, pool);
    dilation_phases_to_image(y_phases, y_blocked, dh_, dw_, y, pool);
  }

 private:
  DilatedAsPhases(int64_t dh, int64_t dw, const DnnlConvConfig& undilated, int block, bool bias_constant)
      : dh_(dh), dw_(dw), undilated_(undilated, block, bias_constant) {}
  int64_t dh_, dw_;
  BlockedConv undilated_;
};

// The logical NCHW shape of a conv input stored plain or blocked.
Shape logical_input(const Tensor& x, const Tensor& w, int64_t group, bool blocked) {
  if (!blocked) return x.shape();
  Shape xl = {x.dim(0), w.dim(1) * group};
  for (int i = 2; i < w.rank(); ++i) xl.push_back(x.dim(i));
  return xl;
}

void check_float(const Tensor* t, const char* op) {
  ONYX_KERNEL_CHECK(!t || t->dtype() == DataType::Float, std::string(op) + " supports float only");
}

class NchwcConvKernel final : public Kernel {
 public:
  explicit NchwcConvKernel(const KernelInitContext& ctx)
      : NchwcConvKernel(ctx, conv_config(ctx, ctx.constant_input(1) != nullptr)) {}
  NchwcConvKernel(const KernelInitContext& ctx, const DnnlConvConfig& cfg)
      : block_(read_block(ctx)),
        group_(cfg.group),
        conv_(cfg, block_, ctx.constant_input(2) != nullptr),
        phases_(DilatedAsPhases::create(cfg, ctx.constant_input(1), block_, ctx.constant_input(2) != nullptr)) {}
  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    for (const Tensor* t : {&x, &w, b}) check_float(t, "NchwcConv");
    ONYX_KERNEL_CHECK(x.rank() == w.rank() || x.rank() == w.rank() + 1, "NchwcConv: input " + shape_to_string(x.shape()) +
                                                                            " does not fit weights " + shape_to_string(w.shape()));
    DnnlConv::Io io;
    io.x = x.data<float>();
    io.x_shape = x.shape();
    io.x_block = x.rank() == w.rank() ? 0 : block_;
    io.w = &w;
    io.b = b;
    io.y_block = block_;
    ONYX_KERNEL_CHECK(!b || b->numel() == w.dim(0), "NchwcConv bias size mismatch");
    Shape ys = blocked_shape(conv_.output_shape(logical_input(x, w, group_, io.x_block != 0), w.shape()), block_);
    Tensor* y_in_z = nullptr;
    if (z) {
      ONYX_KERNEL_CHECK(z->dtype() == DataType::Float && z->shape() == ys,
                        "NchwcConv residual " + shape_to_string(z->shape()) + " must have the output's shape " +
                            shape_to_string(ys));
      io.z = z->data<float>();
      // y = conv(x) + z in z's buffer when z dies here: oneDNN then sums in
      // place instead of copying z into y first
      y_in_z = ctx.take_input_for_output(3, 0, DataType::Float, ys);
    }
    Tensor& y = y_in_z ? *y_in_z : ctx.allocate_output(0, DataType::Float, ys);
    if (y.numel() == 0) return;
    if (phases_ && phases_->use_for(io)) phases_->run(io, ys, y.data<float>(), ctx.thread_pool());
    else conv_.run(io, y.data<float>(), ctx.thread_pool());
  }

 private:
  int block_;
  int64_t group_;
  BlockedConv conv_;
  std::unique_ptr<DilatedAsPhases> phases_;
};

// A 1x1 NchwcConv feeding a depthwise one (docs/fused_ops.md): fused band by
// band where that pays (nchwc_pointwise_depthwise.h), else the two
// convolutions one after the other through a per-thread buffer.
class NchwcPointwiseDepthwiseKernel final : public Kernel {
 public:
  explicit NchwcPointwiseDepthwiseKernel(const KernelInitContext& ctx)
      : block_(read_block(ctx)),
        pointwise_(pointwise_config(ctx), block_, ctx.constant_input(2) != nullptr),
        depthwise_(conv_config(ctx, ctx.constant_input(3) != nullptr), block_, ctx.constant_input(4) != nullptr) {
    const Tensor* w_pw = ctx.constant_input(1);
    const Tensor* w_dw = ctx.constant_input(3);
    const bool biases_constant = (!ctx.has_input(2) || ctx.constant_input(2)) && (!ctx.has_input(4) || ctx.constant_input(4));
    if (w_pw && w_dw && biases_constant && block_ == 16)
      fused_ = NchwcPointwiseDepthwise::create(pointwise_config(ctx), *w_pw, ctx.constant_input(2),
                                               conv_config(ctx, true), *w_dw, ctx.constant_input(4));
  }
  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w_pw = ctx.input(1);
    const Tensor* b_pw = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor& w_dw = ctx.input(3);
    const Tensor* b_dw = ctx.has_input(4) ? &ctx.input(4) : nullptr;
    for (const Tensor* t : {&x, &w_pw, b_pw, &w_dw, b_dw}) check_float(t, "NchwcPointwiseDepthwise");
    ONYX_KERNEL_CHECK(w_pw.rank() == 4 && w_dw.rank() == 4 && w_dw.dim(0) == w_pw.dim(0) && w_dw.dim(1) == 1,
                      "NchwcPointwiseDepthwise: weights " + shape_to_string(w_pw.shape()) + " and " +
                          shape_to_string(w_dw.shape()) + " are not a 1x1 and a depthwise convolution");
    const bool blocked = x.rank() == 5;
    ONYX_KERNEL_CHECK((blocked && x.dim(-1) == block_) || x.rank() == 4,
                      "NchwcPointwiseDepthwise needs a 2-D image input, got " + shape_to_string(x.shape()));
    ONYX_KERNEL_CHECK(!b_pw || b_pw->numel() == w_pw.dim(0), "NchwcPointwiseDepthwise pointwise bias size mismatch");
    ONYX_KERNEL_CHECK(!b_dw || b_dw->numel() == w_dw.dim(0), "NchwcPointwiseDepthwise depthwise bias size mismatch");
    ThreadPool* pool = ctx.thread_pool();
    if (fused_ && blocked && fused_->pays_for(x.shape(), pool)) {
      Tensor& y = ctx.allocate_output(0, DataType::Float, fused_->output_shape(x.shape()));
      if (y.numel() > 0) fused_->run(x.data<float>(), x.shape(), y.data<float>(), pool);
      return;
    }
    DnnlConv::Io io;
    io.x = x.data<float>();
    io.x_shape = x.shape();
    io.x_block = blocked ? block_ : 0;
    io.w = &w_pw;
    io.b = b_pw;
    io.y_block = block_;
    const Shape mid_logical = pointwise_.output_shape(logical_input(x, w_pw, 1, blocked), w_pw.shape());
    const Shape mid = blocked_shape(mid_logical, block_);
    thread_local AlignedScratch mid_scratch;
    float* mid_buf = mid_scratch.get(static_cast<size_t>(shape_numel(mid)));
    const Shape ys = blocked_shape(depthwise_.output_shape(mid_logical, w_dw.shape()), block_);
    Tensor& y = ctx.allocate_output(0, DataType::Float, ys);
    if (y.numel() == 0) return;
    pointwise_.run(io, mid_buf, pool);
    io.x = mid_buf;
    io.x_shape = mid;
    io.x_block = block_;
    io.w = &w_dw;
    io.b = b_dw;
    depthwise_.run(io, y.data<float>(), pool);
  }

 private:
  static DnnlConvConfig pointwise_config(const KernelInitContext& ctx) {
    DnnlConvConfig cfg;
    cfg.attrs.kernel = {1, 1};
    cfg.activation = ctx.get_string("pointwise_activation", "");
    cfg.activation_params = ctx.get_floats("pointwise_activation_params", {});
    cfg.constant_weights = ctx.constant_input(1) != nullptr;
    if (!DnnlConv::supports(cfg, 4)) kernel_fail("unsupported activation '" + cfg.activation + "'");
    return cfg;
  }

  int block_;
  BlockedConv pointwise_, depthwise_;
  std::unique_ptr<NchwcPointwiseDepthwise> fused_;
};

std::unique_ptr<Kernel> make_nchwc_conv(const KernelInitContext& ctx) { return std::make_unique<NchwcConvKernel>(ctx); }

class NchwcPoolKernel final : public Kernel {
 public:
  NchwcPoolKernel(const KernelInitContext& ctx, DnnlPoolConfig::Kind kind) : block_(read_block(ctx)) {
    DnnlPoolConfig cfg;
    cfg.kind = kind;
    if (kind != DnnlPoolConfig::GlobalAverage) cfg.attrs = SpatialAttrs::read(ctx);
    cfg.count_include_pad = ctx.get_int("count_include_pad", 0) != 0;
    pool_ = std::make_unique<DnnlPool>(cfg);
    BlockedPoolConfig own;
    own.kind = static_cast<BlockedPoolConfig::Kind>(kind);
    own.attrs = cfg.attrs;
    own.count_include_pad = cfg.count_include_pad;
    blocked_ = std::make_unique<BlockedPool>(own);
  }
  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ONYX_KERNEL_CHECK(x.dtype() == DataType::Float && x.rank() >= 4 && x.dim(-1) == block_,
                      "Nchwc pooling needs a float blocked input, got " + shape_to_string(x.shape()));
    Shape xl = {x.dim(0), x.dim(1) * block_};
    for (int i = 2; i < x.rank() - 1; ++i) xl.push_back(x.dim(i));
    Shape ys = blocked_shape(pool_->output_shape(xl), block_);
    Tensor& y = ctx.allocate_output(0, DataType::Float, ys);
    if (y.numel() == 0) return;
    // 2-D pooling runs in Onyx's own blocked kernels (twice oneDNN's speed
    // here); oneDNN keeps 1-D and 3-D.
    if (x.rank() == 5) blocked_->run(x.data<float>(), xl, block_, y.data<float>(), ctx.thread_pool());
    else pool_->run(x.data<float>(), xl, block_, y.data<float>(), ctx.thread_pool());
  }

 private:
  int block_;
  std::unique_ptr<DnnlPool> pool_;
  std::unique_ptr<BlockedPool> blocked_;
};

// blocked -> NCHW, or -> NHWC (channels_last = 1) for a Transpose(0, 2, 3, 1) it replaces.
class ReorderOutputKernel final : public Kernel {
 public:
  explicit ReorderOutputKernel(const KernelInitContext& ctx)
      : channels_(ctx.get_int("channels")), channels_last_(ctx.get_int("channels_last", 0) != 0) {}
  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ONYX_KERNEL_CHECK(x.dtype() == DataType::Float && x.rank() >= 3, "ReorderOutput needs a float blocked tensor");
    int64_t block = x.dim(-1);
    ONYX_KERNEL_CHECK(
        x.dim(1) == (channels_ + block - 1) / block,
        "ReorderOutput: " + shape_to_string(x.shape()) + " does not hold " + std::to_string(channels_) + " channels");
    Shape spatial(x.shape().begin() + 2, x.shape().end() - 1);
    Shape ps = {x.dim(0), channels_};
    if (channels_last_) ps = {x.dim(0)};
    ps.insert(ps.end(), spatial.begin(), spatial.end());
    if (channels_last_) ps.push_back(channels_);
    Tensor& y = ctx.allocate_output(0, DataType::Float, ps);
    if (y.numel() == 0) return;
    if (channels_last_)
      reorder_blocked_to_channels_last(x.data<float>(), ps, static_cast<int>(block), y.data<float>(),
                                       ctx.thread_pool());
    else
      reorder_from_blocked(x.data<float>(), ps, static_cast<int>(block), y.data<float>(), ctx.thread_pool());
  }

 private:
  int64_t channels_;
  bool channels_last_;
};

// NCHW -> blocked, or NHWC (channels_last = 1) -> blocked for a Transpose(0, 3, 1, 2) it replaces.
class ReorderInputKernel final : public Kernel {
 public:
  explicit ReorderInputKernel(const KernelInitContext& ctx)
      : block_(read_block(ctx)), channels_last_(ctx.get_int("channels_last", 0) != 0) {}
  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ONYX_KERNEL_CHECK(x.dtype() == DataType::Float && x.rank() >= 3, "ReorderInput needs a float tensor of rank >= 3");
    Shape plain = x.shape();
    if (channels_last_) {  // the NCHW shape it stands for
      plain = {x.dim(0), x.dim(-1)};
      plain.insert(plain.end(), x.shape().begin() + 1, x.shape().end() - 1);
    }
    Tensor& y = ctx.allocate_output(0, DataType::Float, blocked_shape(plain, block_));
    if (y.numel() == 0) return;
    if (channels_last_)
      reorder_channels_last_to_blocked(x.data<float>(), x.shape(), block_, y.data<float>(), ctx.thread_pool());
    else
      reorder_to_blocked(x.data<float>(), x.shape(), block_, y.data<float>(), ctx.thread_pool());
  }

 private:
  int block_;
  bool channels_last_;
};

// Whether oneDNN, every blocked conv's fallback, takes a node's activations
// (not a HardSwish with a beta other than 1/2).
bool blocked_activations_supported(const Node& n) {
  auto supported = [&](const char* act, const char* params) {
    DnnlConvConfig cfg;
    const Attribute* a = n.attr(act);
    const Attribute* p = n.attr(params);
    cfg.activation = a ? a->s : "";
    if (p) cfg.activation_params = p->floats;
    return DnnlConv::supports(cfg, 4);
  };
  return supported("activation", "activation_params") &&
         supported("pointwise_activation", "pointwise_activation_params");
}

void add_blocked_conv(KernelRegistry& r, const std::string& op, KernelFactory factory) {
  KernelDef d;
  d.domain = kDomain;
  d.op_type = op;
  d.since_version = 1;
  d.until_version = kMaxOpset;
  d.factory = std::move(factory);
  d.supports = blocked_activations_supported;
  r.add(std::move(d));
}

}  // namespace

void register_nchwc(KernelRegistry& r) {
  r.add("ReorderInput", 1, kMaxOpset,
        [](const KernelInitContext& c) -> std::unique_ptr<Kernel> { return std::make_unique<ReorderInputKernel>(c); },
        kDomain);
  r.add("ReorderOutput", 1, kMaxOpset,
        [](const KernelInitContext& c) -> std::unique_ptr<Kernel> { return std::make_unique<ReorderOutputKernel>(c); },
        kDomain);
  if (!dnnl_available()) return;
  add_blocked_conv(r, "NchwcConv", make_nchwc_conv);
  add_blocked_conv(r, "NchwcPointwiseDepthwise", [](const KernelInitContext& c) -> std::unique_ptr<Kernel> {
    return std::make_unique<NchwcPointwiseDepthwiseKernel>(c);
  });
  r.add("NchwcMaxPool", 1, kMaxOpset,
        [](const KernelInitContext& c) -> std::unique_ptr<Kernel> {
          return std::make_unique<NchwcPoolKernel>(c, DnnlPoolConfig::Max);
        },
        kDomain);
  r.add("NchwcAveragePool", 1, kMaxOpset,
        [](const KernelInitContext& c) -> std::unique_ptr<Kernel> {
          return std::make_unique<NchwcPoolKernel>(c, DnnlPoolConfig::Average);
        },
        kDomain);
  r.add("NchwcGlobalAveragePool", 1, kMaxOpset,
        [](const KernelInitContext& c) -> std::unique_ptr<Kernel> {
          return std::make_unique<NchwcPoolKernel>(c, DnnlPoolConfig::GlobalAverage);
        },
        kDomain);
}

}  // namespace onyx
