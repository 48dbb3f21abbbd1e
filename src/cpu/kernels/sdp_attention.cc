// com.onyx ScaledDotProductAttention (docs/fused_ops.md): Softmax(Q K^T * scale + mask) V on
// heads-first tensors (K given as K^T, or as K with key_transposed 0), as PyTorch's exporters write scaled_dot_product_attention out (the
// optimizer's sdpa_fusion finds it). Per (batch, head) the scores stay in a thread's buffer:
// the [B, H, Sq, T] scores tensor, its mask Add and its Softmax pass are never materialized.
#include <algorithm>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/kernels/attention_core.h"
#include "cpu/shape_copy.h"
#include "kernels/kernel.h"

namespace onyx {
namespace {

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

// A key or value the fusion took from before Hugging Face's repeat_kv, Reshape(Expand(
// Unsqueeze(x, 2), S), R): read in place with each head serving `repeat` query heads when S
// and R are that repeat ([B, Hk, rep, T, D] merged to [B, Hk * rep, T, D]); otherwise the
// tensor those three ops make, materialized here.
struct KvOperand {
  Tensor t;
  int64_t repeat = 1;
};

KvOperand repeated_kv(const Tensor& x, const Tensor& expand_shape, const Tensor& reshape_shape) {
  ONYX_KERNEL_CHECK(x.rank() >= 2, "ScaledDotProductAttention: a repeated K / V must have rank >= 2, got " +
                                       shape_to_string(x.shape()));
  Shape u = x.shape();
  u.insert(u.begin() + 2, 1);  // Unsqueeze(x, 2)
  const std::vector<int64_t> sv = expand_shape.to_int64_vector();
  for (int64_t d : sv)
    ONYX_KERNEL_CHECK(d >= 0, "Expand: negative dimension in shape " + shape_to_string(sv));
  const Shape e = broadcast_shapes({u, sv});
  const Shape r = shape_detail::reshape_target(e, reshape_shape.to_int64_vector(), false);
  if (x.rank() == 4 && e.size() == 5 && e[0] == u[0] && e[1] == u[1] && e[3] == u[3] && e[4] == u[4] &&
      r == Shape{e[0], e[1] * e[2], e[3], e[4]})
    return {x, e[2]};
  // Anything else: the broadcast copy, read as R.
  Tensor expanded(DataType::Float, e);
  shape_detail::strided_copy_tensor(x, 0, broadcast_strides(u, e), expanded);
  return {expanded.reshaped(r), 1};
}

KvOperand kv_operand(const Tensor& x, KernelContext& ctx, size_t shapes_at, const char* what) {
  if (!ctx.has_input(shapes_at)) return {x, 1};
  ONYX_KERNEL_CHECK(ctx.has_input(shapes_at + 1) && x.dtype() == DataType::Float,
                    std::string("ScaledDotProductAttention: ") + what + "'s repeat needs float input and both shapes");
  return repeated_kv(x, ctx.input(shapes_at), ctx.input(shapes_at + 1));
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
    const Tensor& qt = ctx.input(0);
    const KvOperand k = kv_operand(ctx.input(1), ctx, 4, "K"), v = kv_operand(ctx.input(2), ctx, 6, "V");
    const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const int64_t rank = std::max({qt.rank(), k.t.rank(), v.t.rank()});
    if (rank <= 4) {
      attend(qt, k.t, v.t, mask, rank, nullptr, ctx, k.repeat, v.repeat);
      return;
    }
    ONYX_KERNEL_CHECK(k.repeat == 1 && v.repeat == 1, "ScaledDotProductAttention: grouped heads need 4-D operands");
    run_outer_slices(qt, k.t, v.t, mask, rank, ctx);
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
  // k_repeat / v_repeat: query heads each K / V head serves (grouped-query attention).
  void attend(const Tensor& qt, const Tensor& ktt, const Tensor& vt, const Tensor* mask, int64_t rank, Tensor* out,
              KernelContext& ctx, int64_t k_repeat = 1, int64_t v_repeat = 1) const {
    const char* key_name = key_transposed_ ? "K^T" : "K";
    const Operand4d q = as_4d(qt, "Q");
    Operand4d kt = as_4d(ktt, key_name), v = as_4d(vt, "V");
    const HeadLayout k_layout = head_layout(kt), v_layout = head_layout(v);
    kt.dims[1] *= k_repeat;  // the heads they stand for, in the broadcast checks below
    v.dims[1] *= v_repeat;
    const std::string shapes = "Q " + shape_to_string(qt.shape()) + ", " + key_name + " " +
                               shape_to_string(ktt.shape()) + " and V " + shape_to_string(vt.shape());
    // K^T [.., D, T], or K [.., T, D] (key_transposed 0).
    const int64_t key_d = kt.dims[key_transposed_ ? 2 : 3], T = kt.dims[key_transposed_ ? 3 : 2];
    const int64_t Sq = q.dims[2], D = q.dims[3], Dv = v.dims[3];
    ONYX_KERNEL_CHECK(key_d == D && v.dims[2] == T, "ScaledDotProductAttention: " + shapes + " do not multiply");
    int64_t grid[2];
    for (int d = 0; d < 2; ++d) {
      grid[d] = std::max({q.dims[d], kt.dims[d], v.dims[d]});
      for (const Operand4d* o : {&q, static_cast<const Operand4d*>(&kt), static_cast<const Operand4d*>(&v)})
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
    p.k = k_layout;  // K^T's rows are its D dims, of T values each; K's its T keys
    p.k.group = k_repeat;
    p.k_transposed = key_transposed_;
    p.v = v_layout;
    p.v.group = v_repeat;
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
