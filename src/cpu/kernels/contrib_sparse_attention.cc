// com.microsoft SparseAttention (Phi-3-small's block-sparse attention) as
// ONNX Runtime's CPU provider computes it: grouped-query attention over a KV
// cache of fixed length, causal, where each head's layout (CSR rows of
// blocks) says which earlier key blocks a query block sees.
//
// ORT's kernel runs only when past and present key / value share one buffer
// (IO binding); here present is a copy of past with the new rows written in,
// which gives the same values. Where a batch's key length is shorter than
// total_sequence_length, ORT's kernel reads the attention probabilities back
// at the wrong offsets (written with the longest length as stride, read with
// the batch's own); this computes the documented attention instead.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/float_values.h"
#include "cpu/kernels/attention_rows.h"
#include "cpu/kernels/rotary.h"

namespace onyx {
namespace {

const char* const kMsDomain = "com.microsoft";
enum Inputs { kQuery, kKey, kValue, kPastKey, kPastValue, kRows, kCols, kTotalLen, kKeyLens, kCos, kSin };

struct SparseAttrs {
  int64_t heads, kv_heads, block;
  float scale;
  bool rotary, interleaved;
};

struct SparseDims {
  int64_t B, S, D, cache, layouts, row_stride, col_stride, total;
  bool packed, prompt;
};

std::string str(int64_t v) {
  return std::to_string(v);
}

[[noreturn]] void sa_fail(const std::string& what) {
  kernel_fail("SparseAttention: " + what);
}

SparseDims check_sparse_inputs(KernelContext& ctx, const SparseAttrs& a) {
  const Tensor& q = ctx.input(kQuery);
  SparseDims d{};
  if (q.dtype() != DataType::Float && q.dtype() != DataType::Float16)
    sa_fail("query must be float or float16, got " + dtype_name(q.dtype()));
  if (q.rank() != 3) sa_fail("query must be 3-D, got " + shape_to_string(q.shape()));
  d.B = q.dim(0);
  d.S = q.dim(1);
  d.packed = !ctx.has_input(kKey);
  if (d.packed != !ctx.has_input(kValue)) sa_fail("key and value must both be given, or both omitted (packed QKV)");
  const int64_t width = d.packed ? a.heads + 2 * a.kv_heads : a.heads;
  if (q.dim(2) % width != 0) sa_fail("query's last dimension " + str(q.dim(2)) + " is not a multiple of " + str(width));
  d.D = q.dim(2) / width;
  if (d.D % 8 != 0) sa_fail("head size must be a multiple of 8, got " + str(d.D));
  if (!d.packed) {
    const Tensor& k = ctx.input(kKey);
    const Shape want{d.B, d.S, a.kv_heads * d.D};
    if (k.shape() != want || ctx.input(kValue).shape() != want)
      sa_fail("key and value must be " + shape_to_string(want) + ", got " + shape_to_string(k.shape()) + " and " +
              shape_to_string(ctx.input(kValue).shape()));
  }
  for (size_t i : {kKey, kValue, kPastKey, kPastValue, kCos, kSin})
    if (ctx.has_input(i) && ctx.input(i).dtype() != q.dtype())
      sa_fail("input " + str(i) + " must have query's type " + dtype_name(q.dtype()));
  const Tensor& pk = ctx.input(kPastKey);
  if (pk.rank() != 4 || pk.dim(0) != d.B || pk.dim(1) != a.kv_heads || pk.dim(3) != d.D ||
      ctx.input(kPastValue).shape() != pk.shape())
    sa_fail("past_key and past_value must be [" + str(d.B) + ", " + str(a.kv_heads) + ", cache, " + str(d.D) +
            "], got " + shape_to_string(pk.shape()) + " and " + shape_to_string(ctx.input(kPastValue).shape()));
  d.cache = pk.dim(2);
  const Tensor& rows = ctx.input(kRows);
  const Tensor& cols = ctx.input(kCols);
  for (const Tensor* t : {&rows, &cols, &ctx.input(kTotalLen), &ctx.input(kKeyLens)})
    if (t->dtype() != DataType::Int32)
      sa_fail("the block indices and lengths must be int32, got " + dtype_name(t->dtype()));
  if (rows.rank() != 2 || rows.dim(0) <= 0 || rows.dim(1) <= 1 || a.heads % rows.dim(0) != 0)
    sa_fail("block_row_indices must be [layouts, blocks + 1] with num_heads a multiple of layouts, got " +
            shape_to_string(rows.shape()));
  d.layouts = rows.dim(0);
  d.row_stride = rows.dim(1);
  const int64_t blocks = d.row_stride - 1;
  if (cols.rank() != 2 || cols.dim(0) != d.layouts || cols.dim(1) > blocks * blocks)
    sa_fail("block_col_indices must be [" + str(d.layouts) + ", nnz <= " + str(blocks * blocks) + "], got " +
            shape_to_string(cols.shape()));
  d.col_stride = cols.dim(1);
  if (ctx.input(kTotalLen).numel() != 1) sa_fail("total_sequence_length must hold one value");
  d.total = ctx.input(kTotalLen).data<int32_t>()[0];
  if (d.total > blocks * a.block || d.total > d.cache || d.total < d.S)
    sa_fail("total_sequence_length " + str(d.total) + " must be within [" + str(d.S) + ", min(cache " + str(d.cache) +
            ", layout length " + str(blocks * a.block) + ")]");
  if (ctx.input(kKeyLens).shape() != Shape{d.B})
    sa_fail("key_total_sequence_lengths must be [" + str(d.B) + "], got " +
            shape_to_string(ctx.input(kKeyLens).shape()));
  d.prompt = d.total == d.S;
  return d;
}

// Every index in the layouts must name a block inside them, else the mask
// would be written out of bounds (ORT does not check).
void check_layouts(const int32_t* rows, const int32_t* cols, const SparseDims& d) {
  const int64_t blocks = d.row_stride - 1;
  for (int64_t l = 0; l < d.layouts; ++l) {
    const int32_t* r = rows + l * d.row_stride;
    for (int64_t i = 0; i < blocks; ++i)
      if (r[i] < 0 || r[i] > r[i + 1] || r[i + 1] > d.col_stride)
        sa_fail("block_row_indices of layout " + str(l) + " are not a CSR row index into " + str(d.col_stride) +
                " columns");
    for (int64_t j = 0; j < r[blocks]; ++j)
      if (cols[l * d.col_stride + j] < 0 || cols[l * d.col_stride + j] >= blocks)
        sa_fail("block_col_indices of layout " + str(l) + " hold block " + str(cols[l * d.col_stride + j]) +
                " outside [0, " + str(blocks) + ")");
  }
}

// Per batch: keys and values before this step (ORT's past length), and the
// length key_total_sequence_lengths gives.
std::vector<int64_t> key_lengths(KernelContext& ctx, const SparseDims& d) {
  const int32_t* lens = ctx.input(kKeyLens).data<int32_t>();
  std::vector<int64_t> out(static_cast<size_t>(d.B));
  for (int64_t b = 0; b < d.B; ++b) {
    out[b] = lens[b];
    const bool fits = d.prompt ? lens[b] == d.S : lens[b] >= d.S && lens[b] <= d.total;
    if (!fits)
      sa_fail("key_total_sequence_lengths[" + str(b) + "] = " + str(lens[b]) + " does not fit " + str(d.S) +
              " new tokens in total_sequence_length " + str(d.total));
  }
  return out;
}

void apply_sparse_rotary(KernelContext& ctx, const SparseAttrs& a, const SparseDims& d,
                         const std::vector<int64_t>& lens, std::vector<float>& q, std::vector<float>& k) {
  if (!ctx.has_input(kCos) || !ctx.has_input(kSin)) sa_fail("do_rotary needs cos_cache and sin_cache");
  const Tensor& c = ctx.input(kCos);
  const Tensor& s = ctx.input(kSin);
  if (d.D % 16 != 0) sa_fail("do_rotary needs a head size that is a multiple of 16, got " + str(d.D));
  if (c.rank() != 2 || c.shape() != s.shape() || c.dim(1) % 8 != 0 || c.dim(1) > d.D / 16 * 8 || c.dim(0) < d.total)
    sa_fail("cos_cache and sin_cache must both be [>= " + str(d.total) + ", rotary_dim / 2] with rotary_dim / 2 a " +
            "multiple of 8 and at most head size / 2, got " + shape_to_string(c.shape()) + " and " +
            shape_to_string(s.shape()));
  std::vector<int64_t> rows(static_cast<size_t>(d.B * d.S));  // a prompt starts at 0; later tokens end at the length
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t i = 0; i < d.S; ++i) rows[b * d.S + i] = d.prompt ? i : lens[b] - (d.S - i);
  std::vector<float> c_scratch, s_scratch;
  const float* cv = float_values(c, c_scratch);
  const float* sv = float_values(s, s_scratch);
  const int64_t rot = 2 * c.dim(1);
  rotary_rotate(q.data(), q.data(), RotaryLayout{d.B, a.heads, d.S, d.D, true}, cv, sv, rot, a.interleaved, rows);
  rotary_rotate(k.data(), k.data(), RotaryLayout{d.B, a.kv_heads, d.S, d.D, true}, cv, sv, rot, a.interleaved, rows);
}

// Which keys query position `pos` may see in one layout: all up to it
// (causal) when its block row holds as many blocks as a dense lower triangle
// would, else only the keys of its listed blocks. Written into `visible`.
void visible_keys(const int32_t* rows, const int32_t* cols, int64_t pos, int64_t block, std::vector<char>& visible) {
  const int64_t rb = pos / block;
  const int32_t begin = rows[rb], end = rows[rb + 1];
  if (end - begin == rb + 1) {
    std::fill(visible.begin(), visible.end(), 1);
    return;
  }
  std::fill(visible.begin(), visible.end(), 0);
  const int64_t keys = static_cast<int64_t>(visible.size());
  for (int32_t j = begin; j < end; ++j) {
    const int64_t first = cols[j] * block;
    if (first < keys) std::fill_n(visible.begin() + first, std::min(block, keys - first), 1);
  }
}

// Softmax over the first n scores, ORT's way: masked scores hold the lowest
// float (a row with every key masked comes out uniform, as in ORT).
void softmax_prefix(float* x, int64_t n) {
  const float mx = *std::max_element(x, x + n);
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) sum += x[i] = std::exp(x[i] - mx);
  for (int64_t i = 0; i < n; ++i) x[i] /= sum;
}

void run_sparse_attention(KernelContext& ctx, const SparseAttrs& a) {
  const SparseDims d = check_sparse_inputs(ctx, a);
  const int32_t* rows = ctx.input(kRows).data<int32_t>();
  const int32_t* cols = ctx.input(kCols).data<int32_t>();
  check_layouts(rows, cols, d);
  const std::vector<int64_t> lens = key_lengths(ctx, d);
  // Q, K, V as [B, S, heads * D] each.
  std::vector<float> q, k, v;
  if (d.packed) {
    const std::vector<float> qkv = load_floats<float>(ctx.input(kQuery));
    const int64_t row = (a.heads + 2 * a.kv_heads) * d.D, qw = a.heads * d.D, kw = a.kv_heads * d.D;
    for (int64_t t = 0; t < d.B * d.S; ++t) {
      const float* p = qkv.data() + t * row;
      q.insert(q.end(), p, p + qw);
      k.insert(k.end(), p + qw, p + qw + kw);
      v.insert(v.end(), p + qw + kw, p + row);
    }
  } else {
    q = load_floats<float>(ctx.input(kQuery));
    k = load_floats<float>(ctx.input(kKey));
    v = load_floats<float>(ctx.input(kValue));
  }
  if (a.rotary) apply_sparse_rotary(ctx, a, d, lens, q, k);
  // Present = past with the new rows written at the past length.
  std::vector<float> pk = load_floats<float>(ctx.input(kPastKey)), pv = load_floats<float>(ctx.input(kPastValue));
  for (int64_t b = 0; b < d.B; ++b) {
    const int64_t past = d.prompt ? 0 : lens[b] - d.S;
    for (int64_t h = 0; h < a.kv_heads; ++h)
      for (int64_t s = 0; s < d.S; ++s) {
        const int64_t src = ((b * d.S + s) * a.kv_heads + h) * d.D,
                      dst = ((b * a.kv_heads + h) * d.cache + past + s) * d.D;
        std::copy_n(k.data() + src, d.D, pk.data() + dst);
        std::copy_n(v.data() + src, d.D, pv.data() + dst);
      }
  }
  const float scale = a.scale == 0.f ? 1.f / std::sqrt(static_cast<float>(d.D)) : a.scale;
  const int64_t group = a.heads / a.kv_heads;
  std::vector<float> out(static_cast<size_t>(d.B * d.S * a.heads * d.D));
  // One (batch, head) per task: a query row's scores, mask, softmax and values.
  parallel_for(ctx.thread_pool(), d.B * a.heads, [&](int64_t i0, int64_t i1) {
    std::vector<float> scores;
    std::vector<char> visible(static_cast<size_t>(d.total));  // keys past the total are never read
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t b = i / a.heads, h = i % a.heads, past = d.prompt ? 0 : lens[b] - d.S;
      const int32_t* lr = rows + (h % d.layouts) * d.row_stride;
      const int32_t* lc = cols + (h % d.layouts) * d.col_stride;
      const bool sparse = lr[d.row_stride - 1] < d.row_stride * (d.row_stride - 1) / 2;
      const float* keys = pk.data() + (b * a.kv_heads + h / group) * d.cache * d.D;
      const float* values = pv.data() + (b * a.kv_heads + h / group) * d.cache * d.D;
      for (int64_t s = 0; s < d.S; ++s) {
        const int64_t pos = past + s, causal = pos + 1;
        scores.resize(static_cast<size_t>(causal));
        attention_row_scores(q.data() + ((b * d.S + s) * a.heads + h) * d.D, keys, causal, d.D, d.D, false, scale,
                             scores.data());
        if (sparse) {
          visible_keys(lr, lc, pos, a.block, visible);
          for (int64_t t = 0; t < causal; ++t)
            if (!visible[t]) scores[t] = std::numeric_limits<float>::lowest();
        }
        softmax_prefix(scores.data(), causal);
        attention_row_values(scores.data(), values, causal, d.D, d.D, out.data() + ((b * d.S + s) * a.heads + h) * d.D);
      }
    }
  });
  const DataType dt = ctx.input(kQuery).dtype();
  store_floats(out.data(), ctx.allocate_output(0, dt, {d.B, d.S, a.heads * d.D}));
  const Shape cache_shape{d.B, a.kv_heads, d.cache, d.D};
  if (ctx.wants_output(1)) store_floats(pk.data(), ctx.allocate_output(1, dt, cache_shape));
  if (ctx.wants_output(2)) store_floats(pv.data(), ctx.allocate_output(2, dt, cache_shape));
}

}  // namespace

void register_contrib_sparse_attention(KernelRegistry& r) {
  r.add("SparseAttention", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          SparseAttrs a{ic.get_int("num_heads"),         ic.get_int("kv_num_heads"),
                        ic.get_int("sparse_block_size"), ic.get_float("scale", 0.f),
                        ic.get_int("do_rotary", 0) == 1, ic.get_int("rotary_interleaved", 0) == 1};
          if (a.heads <= 0 || a.kv_heads <= 0 || a.heads % a.kv_heads != 0)
            sa_fail("num_heads (" + str(a.heads) + ") must be a positive multiple of kv_num_heads (" + str(a.kv_heads) +
                    ")");
          if (a.block <= 0) sa_fail("sparse_block_size must be positive, got " + str(a.block));
          return [a](KernelContext& ctx) { run_sparse_attention(ctx, a); };
        }),
        kMsDomain);
}

}  // namespace onyx
