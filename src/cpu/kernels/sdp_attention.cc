// com.onyx ScaledDotProductAttention (docs/fused_ops.md): Softmax(Q K^T * scale + mask) V on
// heads-first tensors (K given as K^T, or as K with key_transposed 0), as PyTorch's exporters write scaled_dot_product_attention out (the
// optimizer's sdpa_fusion finds it). Per (batch, head) the scores stay in a thread's buffer:
// the [B, H, Sq, T] scores tensor, its mask Add and its Softmax pass are never materialized.
#include <algorithm>
#include <string>
#include <vector>

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

// Q [.., Sq, D], K^T [.., D, T] (or K [.., T, D]), V [.., T, Dv] with up to two leading dims (batch, heads)
// broadcast as in MatMul; mask (optional, additive) broadcast to the scores. Y [.., Sq, Dv].
class ScaledDotProductAttentionKernel final : public Kernel {
 public:
  explicit ScaledDotProductAttentionKernel(const KernelInitContext& ctx)
      : scale_(ctx.get_float("scale", 1.0f)),
        zero_masked_rows_(ctx.get_int("zero_masked_rows", 0) != 0),
        key_transposed_(ctx.get_int("key_transposed", 1) != 0) {}

  void run(KernelContext& ctx) const override {
    const Tensor &qt = ctx.input(0), &ktt = ctx.input(1), &vt = ctx.input(2);
    const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const int64_t rank = std::max({qt.rank(), ktt.rank(), vt.rank()});
    if (rank <= 4) {
      attend(qt, ktt, vt, mask, rank, nullptr, ctx);
      return;
    }
    run_outer_slices(qt, ktt, vt, mask, rank, ctx);
  }

 private:
  // Rank 5 and more (Twins' and NesT's local attention: [B, windows, heads, N, D]): the
  // dims before the last four are batch dims too, broadcast as in MatMul; each slice is a
  // 4-D attention over views of the operands.
  void run_outer_slices(const Tensor& qt, const Tensor& ktt, const Tensor& vt, const Tensor* mask, int64_t rank,
                        KernelContext& ctx) const {
    const int64_t outer_rank = rank - 4;
    std::vector<const Tensor*> operands = {&qt, &ktt, &vt};
    if (mask) operands.push_back(mask);
    for (const Tensor* t : operands)
      ONYX_KERNEL_CHECK(t->rank() >= 2, "ScaledDotProductAttention: operands must have rank >= 2, got " +
                                            shape_to_string(t->shape()));
    // Each operand's outer dims (1 where it has fewer), the broadcast outer shape and the
    // element strides of each operand over it (0 where it broadcasts).
    auto outer_dim = [&](const Tensor& t, int64_t d) { return d - (rank - t.rank()) >= 0 ? t.dim(d - (rank - t.rank())) : 1; };
    Shape outer(outer_rank, 1);
    for (int64_t d = 0; d < outer_rank; ++d)
      for (const Tensor* t : operands) {
        const int64_t size = outer_dim(*t, d);
        ONYX_KERNEL_CHECK(size == 1 || outer[d] == 1 || size == outer[d],
                          "ScaledDotProductAttention: operand " + shape_to_string(t->shape()) + " does not broadcast");
        outer[d] = std::max(outer[d], size);
      }
    auto inner_shape = [&](const Tensor& t) {
      return Shape(t.shape().end() - std::min<int64_t>(t.rank(), 4), t.shape().end());
    };
    auto outer_strides = [&](const Tensor& t) {
      std::vector<int64_t> strides(outer_rank, 0);
      int64_t stride = shape_numel(inner_shape(t));
      for (int64_t d = outer_rank - 1; d >= 0; --d) {
        const int64_t size = outer_dim(t, d);
        strides[d] = size == 1 ? 0 : stride;
        stride *= size;
      }
      return strides;
    };
    std::vector<std::vector<int64_t>> strides;
    for (const Tensor* t : operands) strides.push_back(outer_strides(*t));
    // The output: the outer shape, then a slice's [B, H, Sq, Dv].
    auto view = [](const Tensor& t, const Shape& shape, int64_t offset) {
      return Tensor::wrap(t.dtype(), shape, const_cast<float*>(t.data<float>()) + offset, t.holder());
    };
    Tensor first_q = view(qt, inner_shape(qt), 0), first_k = view(ktt, inner_shape(ktt), 0),
           first_v = view(vt, inner_shape(vt), 0);
    Shape slice_shape = attention_output_shape(first_q, first_k, first_v);
    Shape out_shape = outer;
    out_shape.insert(out_shape.end(), slice_shape.begin(), slice_shape.end());
    Tensor& y = ctx.allocate_output(0, DataType::Float, out_shape);
    const int64_t slices = shape_numel(outer), slice_size = shape_numel(slice_shape);
    for (int64_t s = 0; s < slices; ++s) {
      std::vector<int64_t> offsets(operands.size(), 0);
      for (int64_t d = outer_rank - 1, rest = s; d >= 0; --d) {
        const int64_t idx = rest % outer[d];
        rest /= outer[d];
        for (size_t k = 0; k < operands.size(); ++k) offsets[k] += idx * strides[k][d];
      }
      Tensor q = view(qt, inner_shape(qt), offsets[0]), k = view(ktt, inner_shape(ktt), offsets[1]),
             v = view(vt, inner_shape(vt), offsets[2]);
      Tensor m = mask ? view(*mask, inner_shape(*mask), offsets[3]) : Tensor();
      Tensor y_slice = Tensor::wrap(DataType::Float, slice_shape, y.data<float>() + s * slice_size, nullptr);
      attend(q, k, v, mask ? &m : nullptr, 4, &y_slice, ctx);
    }
  }

  // [B, H, Sq, Dv] of a 4-D attention (the broadcast batch and head dims).
  static Shape attention_output_shape(const Tensor& qt, const Tensor& ktt, const Tensor& vt) {
    const Operand4d q = as_4d(qt, "Q"), kt = as_4d(ktt, "K^T"), v = as_4d(vt, "V");
    return {std::max({q.dims[0], kt.dims[0], v.dims[0]}), std::max({q.dims[1], kt.dims[1], v.dims[1]}), q.dims[2],
            v.dims[3]};
  }

  // Q, K^T, V (and the mask) of rank <= 4; the output of rank `rank` is allocated, or written
  // into `out` (a slice of a higher-rank output) when given.
  void attend(const Tensor& qt, const Tensor& ktt, const Tensor& vt, const Tensor* mask, int64_t rank, Tensor* out,
              KernelContext& ctx) const {
    const char* key_name = key_transposed_ ? "K^T" : "K";
    const Operand4d q = as_4d(qt, "Q"), kt = as_4d(ktt, key_name), v = as_4d(vt, "V");
    const std::string shapes = "Q " + shape_to_string(qt.shape()) + ", " + key_name + " " +
                               shape_to_string(ktt.shape()) + " and V " + shape_to_string(vt.shape());
    // K^T [.., D, T], or K [.., T, D] (key_transposed 0).
    const int64_t key_d = kt.dims[key_transposed_ ? 2 : 3], T = kt.dims[key_transposed_ ? 3 : 2];
    const int64_t Sq = q.dims[2], D = q.dims[3], Dv = v.dims[3];
    ONYX_KERNEL_CHECK(key_d == D && v.dims[2] == T, "ScaledDotProductAttention: " + shapes + " do not multiply");
    int64_t grid[2];
    for (int d = 0; d < 2; ++d) {
      grid[d] = std::max({q.dims[d], kt.dims[d], v.dims[d]});
      for (const Operand4d* o : {&q, &kt, &v})
        ONYX_KERNEL_CHECK(o->dims[d] == 1 || o->dims[d] == grid[d],
                          "ScaledDotProductAttention: " + shapes + " do not broadcast");
    }
    const int64_t B = grid[0], H = grid[1];
    ONYX_KERNEL_CHECK(!mask || mask->rank() <= rank, "ScaledDotProductAttention: mask " +
                                                         shape_to_string(mask ? mask->shape() : Shape{}) +
                                                         " has a higher rank than the scores");
    const Shape full = {B, H, Sq, Dv};
    Tensor& y = out ? *out : ctx.allocate_output(0, DataType::Float, Shape(full.end() - rank, full.end()));
    if (y.numel() == 0) return;
    AttentionProblem p;
    p.B = B, p.N = H, p.Sq = Sq, p.T = T, p.Dqk = D, p.Dv = Dv;
    p.q = head_layout(q);
    p.k = head_layout(kt);  // K^T's rows are its D dims, of T values each; K's its T keys
    p.k_transposed = key_transposed_;
    p.v = head_layout(v);
    p.scale = scale_;
    if (mask) p.mask = mask_term(*mask, {B, H, Sq, T});
    p.zero_masked_rows = zero_masked_rows_;
    p.out = y.data<float>();
    p.heads_first_out = true;
    run_attention(p, ctx.thread_pool());
  }

  float scale_;
  bool zero_masked_rows_;
  bool key_transposed_;
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
