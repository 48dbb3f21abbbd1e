// Kernels of the blocked-layout ops (domain com.onyx, docs/fused_ops.md):
// NchwcConv, NchwcMaxPool, NchwcAveragePool, NchwcGlobalAveragePool,
// ReorderInput, ReorderOutput. The optimizer's nchwc_layout pass emits them
// only when this build has oneDNN (the reorders alone are portable).
#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_conv.h"
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

class NchwcConvKernel final : public Kernel {
 public:
  explicit NchwcConvKernel(const KernelInitContext& ctx) : block_(read_block(ctx)), group_(ctx.get_int("group", 1)) {
    DnnlConvConfig cfg;
    cfg.attrs = SpatialAttrs::read(ctx);
    cfg.group = ctx.get_int("group", 1);
    cfg.activation = ctx.get_string("activation", "");
    cfg.activation_params = ctx.get_floats("activation_params", {});
    cfg.constant_weights = ctx.constant_input(1) != nullptr;
    if (!DnnlConv::supports(cfg, 4)) kernel_fail("NchwcConv: unsupported activation '" + cfg.activation + "'");
    conv_ = std::make_unique<DnnlConv>(cfg);
    // Onyx's own AVX-512 direct kernel where it beats oneDNN (nchwc_conv.h)
    direct_ = NchwcDirectConv::create(cfg, block_, ctx.constant_input(2) != nullptr);
  }
  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    ONYX_KERNEL_CHECK(x.dtype() == DataType::Float && w.dtype() == DataType::Float && (!b || b->dtype() == DataType::Float),
                      "NchwcConv supports float only");
    ONYX_KERNEL_CHECK(x.rank() == w.rank() || x.rank() == w.rank() + 1, "NchwcConv: input " + shape_to_string(x.shape()) +
                                                                            " does not fit weights " + shape_to_string(w.shape()));
    DnnlConv::Io io;
    io.x = x.data<float>();
    io.x_shape = x.shape();
    io.x_block = x.rank() == w.rank() ? 0 : block_;
    io.w = &w;
    io.b = b;
    io.y_block = block_;
    Shape xl;
    if (io.x_block) {
      xl = {x.dim(0), w.dim(1) * group_};
      for (int i = 2; i < w.rank(); ++i) xl.push_back(x.dim(i));
    } else {
      xl = x.shape();
    }
    ONYX_KERNEL_CHECK(!b || b->numel() == w.dim(0), "NchwcConv bias size mismatch");
    Shape ys = blocked_shape(conv_->output_shape(xl, w.shape()), block_);
    if (z) {
      ONYX_KERNEL_CHECK(z->dtype() == DataType::Float && z->shape() == ys,
                        "NchwcConv residual " + shape_to_string(z->shape()) + " must have the output's shape " +
                            shape_to_string(ys));
      io.z = z->data<float>();
    }
    Tensor& y = ctx.allocate_output(0, DataType::Float, ys);
    if (y.numel() == 0) return;
    ThreadPool* pool = ctx.thread_pool();
    if (direct_ && direct_->use_for(io, pool)) direct_->run(io, y.data<float>(), pool);
    else conv_->run(io, y.data<float>(), pool);
  }

 private:
  int block_;
  int64_t group_;
  std::unique_ptr<DnnlConv> conv_;
  std::unique_ptr<NchwcDirectConv> direct_;
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

}  // namespace

void register_nchwc(KernelRegistry& r) {
  r.add("ReorderInput", 1, kMaxOpset,
        [](const KernelInitContext& c) -> std::unique_ptr<Kernel> { return std::make_unique<ReorderInputKernel>(c); },
        kDomain);
  r.add("ReorderOutput", 1, kMaxOpset,
        [](const KernelInitContext& c) -> std::unique_ptr<Kernel> { return std::make_unique<ReorderOutputKernel>(c); },
        kDomain);
  if (!dnnl_available()) return;
  r.add("NchwcConv", 1, kMaxOpset, make_nchwc_conv, kDomain);
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
