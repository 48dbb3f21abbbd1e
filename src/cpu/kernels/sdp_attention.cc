// com.onyx ScaledDotProductAttention (docs/fused_ops.md): Softmax(Q K^T * scale + mask) V on
// heads-first tensors, as PyTorch's exporters write scaled_dot_product_attention out (the
// optimizer's sdpa_fusion finds it). Per (batch, head) the scores stay in a thread's buffer:
// the [B, H, Sq, T] scores tensor, its mask Add and its Softmax pass are never materialized.
#include <algorithm>
#include <string>

#include "cpu/cpu_provider.h"
#include "cpu/kernels/attention_core.h"
#include "kernels/kernel.h"

namespace onyx {
namespace {

std::string S(int64_t v) { return std::to_string(v); }

// The strides of a mask broadcast to [B, H, Sq, T] (0 along its dims of size 1).
ScoreTerm mask_term(const Tensor& m, const Shape& scores) {
  ONYX_KERNEL_CHECK(m.dtype() == DataType::Float && m.rank() <= 4,
                    "ScaledDotProductAttention: the mask must be float of rank <= 4, got " + dtype_name(m.dtype()) +
                        " " + shape_to_string(m.shape()));
  int64_t strides[4] = {0, 0, 0, 0}, stride = 1;
  for (int d = 3; d >= 0; --d) {
    const int md = d - (4 - static_cast<int>(m.rank()));
    const int64_t size = md >= 0 ? m.dim(md) : 1;
    ONYX_KERNEL_CHECK(size == 1 || size == scores[d],
                      "ScaledDotProductAttention: mask " + shape_to_string(m.shape()) +
                          " does not broadcast to the scores " + shape_to_string(scores));
    strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  ScoreTerm t;
  t.data = m.data<float>();
  t.batch = strides[0], t.head = strides[1], t.row = strides[2], t.col = strides[3];
  return t;
}

// Q, K^T or V as 4-D: rank 2 or 3 gets leading dims of 1 (MatMul broadcasting).
struct Operand4d {
  const float* data;
  int64_t dims[4];
};
Operand4d as_4d(const Tensor& t, const char* what) {
  ONYX_KERNEL_CHECK(t.dtype() == DataType::Float && t.rank() >= 2 && t.rank() <= 4,
                    std::string("ScaledDotProductAttention: ") + what + " must be float of rank 2 to 4, got " +
                        dtype_name(t.dtype()) + " " + shape_to_string(t.shape()));
  Operand4d o{t.data<float>(), {1, 1, 1, 1}};
  for (int64_t d = 0; d < t.rank(); ++d) o.dims[4 - t.rank() + d] = t.dim(d);
  return o;
}

// A head's view in the [B, H] grid (stride 0 where the operand broadcasts).
HeadLayout head_layout(const Operand4d& t) {
  const int64_t plane = t.dims[2] * t.dims[3];
  return {t.data, t.dims[0] == 1 ? 0 : t.dims[1] * plane, t.dims[1] == 1 ? 0 : plane, t.dims[3], 1};
}

// Q [.., Sq, D], K^T [.., D, T], V [.., T, Dv] with up to two leading dims (batch, heads)
// broadcast as in MatMul; mask (optional, additive) broadcast to the scores. Y [.., Sq, Dv].
class ScaledDotProductAttentionKernel final : public Kernel {
 public:
  explicit ScaledDotProductAttentionKernel(const KernelInitContext& ctx)
      : scale_(ctx.get_float("scale", 1.0f)), zero_masked_rows_(ctx.get_int("zero_masked_rows", 0) != 0) {}

  void run(KernelContext& ctx) const override {
    const Tensor &qt = ctx.input(0), &ktt = ctx.input(1), &vt = ctx.input(2);
    const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const Operand4d q = as_4d(qt, "Q"), kt = as_4d(ktt, "K^T"), v = as_4d(vt, "V");
    const std::string shapes = "Q " + shape_to_string(qt.shape()) + ", K^T " + shape_to_string(ktt.shape()) +
                               " and V " + shape_to_string(vt.shape());
    const int64_t Sq = q.dims[2], D = q.dims[3], T = kt.dims[3], Dv = v.dims[3];
    ONYX_KERNEL_CHECK(kt.dims[2] == D && v.dims[2] == T, "ScaledDotProductAttention: " + shapes + " do not multiply");
    int64_t grid[2];
    for (int d = 0; d < 2; ++d) {
      grid[d] = std::max({q.dims[d], kt.dims[d], v.dims[d]});
      for (const Operand4d* o : {&q, &kt, &v})
        ONYX_KERNEL_CHECK(o->dims[d] == 1 || o->dims[d] == grid[d],
                          "ScaledDotProductAttention: " + shapes + " do not broadcast");
    }
    const int64_t B = grid[0], H = grid[1];
    const int64_t rank = std::max({qt.rank(), ktt.rank(), vt.rank()});
    ONYX_KERNEL_CHECK(!mask || mask->rank() <= rank, "ScaledDotProductAttention: mask " +
                                                         shape_to_string(mask ? mask->shape() : Shape{}) +
                                                         " has a higher rank than the scores");
    const Shape full = {B, H, Sq, Dv};
    Tensor& y = ctx.allocate_output(0, DataType::Float, Shape(full.end() - rank, full.end()));
    if (y.numel() == 0) return;
    AttentionProblem p;
    p.B = B, p.N = H, p.Sq = Sq, p.T = T, p.Dqk = D, p.Dv = Dv;
    p.q = head_layout(q);
    p.k = head_layout(kt);  // K^T's rows are its D dims, of T values each
    p.k_transposed = true;
    p.v = head_layout(v);
    p.scale = scale_;
    if (mask) p.mask = mask_term(*mask, {B, H, Sq, T});
    p.zero_masked_rows = zero_masked_rows_;
    p.out = y.data<float>();
    p.heads_first_out = true;
    run_attention(p, ctx.thread_pool());
  }

 private:
  float scale_;
  bool zero_masked_rows_;
};

}  // namespace

void register_sdp_attention(KernelRegistry& r) {
  r.add("ScaledDotProductAttention", 1, kMaxOpset,
        [](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> {
          return std::make_unique<ScaledDotProductAttentionKernel>(ctx);
        },
        "com.onyx");
}

}  // namespace onyx
