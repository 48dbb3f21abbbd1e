// ONNX Runtime's transformer normalization contrib ops, as its transformers
// optimizer emits them: SkipLayerNormalization, SkipSimplifiedLayerNormalization,
// EmbedLayerNormalization (com.microsoft) and SimplifiedLayerNormalization
// (ORT registers it in the default domain). Attention and MultiHeadAttention
// live in contrib_attention.cc. Behaviour checked against onnxruntime.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/kernel_families.h"
#include "cpu/gemm_vmath.h"
#include "cpu/half_via_float.h"
#include "cpu/row_reduce.h"

namespace onyx {
namespace {

const char* kMicrosoft = "com.microsoft";

std::string S(int64_t v) { return std::to_string(v); }

// ORT's default epsilon for the Skip* and Embed* normalizations.
constexpr float kBertEpsilon = 1e-12f;

void require_float(const Tensor& t, const std::string& op, const char* what) {
  if (t.dtype() != DataType::Float)
    kernel_fail(op + ": " + what + " must be float, got " + dtype_name(t.dtype()));
}

// A per-channel parameter (gamma, beta, bias): H values, 1-D.
const float* channel_param(const KernelContext& ctx, size_t i, int64_t H, const std::string& op, const char* what) {
  if (!ctx.has_input(i)) return nullptr;
  const Tensor& t = ctx.input(i);
  require_float(t, op, what);
  if (t.rank() != 1 || t.dim(0) != H)
    kernel_fail(op + ": " + what + " shape " + shape_to_string(t.shape()) + " should be [" + S(H) + "]");
  return t.data<float>();
}

// Normalizes row (n values) into y: LayerNorm ((x - mean) * inv_std) or, when
// `rms`, RMS norm (x * inv_rms); then * gamma (+ beta). Returns {mean, inv_std}.
struct RowStats {
  float mean, inv_std;
};
RowStats normalize_row(const float* x, float* y, int64_t n, const float* gamma, const float* beta, float eps, bool rms) {
  double sum = 0, sq = 0;
  if (!rms)
    for (int64_t i = 0; i < n; ++i) sum += x[i];
  float mean = rms ? 0.f : static_cast<float>(sum / n);
  for (int64_t i = 0; i < n; ++i) {
    double d = x[i] - mean;
    sq += d * d;
  }
  float inv = 1.f / std::sqrt(static_cast<float>(sq / n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * gamma[i] + (beta ? beta[i] : 0.f);
  return {mean, inv};
}

// ---- SkipLayerNormalization / SkipSimplifiedLayerNormalization ----
// y = Norm(input + skip + bias) * gamma (+ beta). Optional outputs: mean and
// inv_std_var per row ([..., 1]; the simplified form has no mean, ORT gives
// zeros), and input + skip + bias itself.

class SkipNormKernel final : public Kernel {
 public:
  SkipNormKernel(const KernelInitContext& ic, bool simplified)
      : simplified_(simplified), eps_(ic.get_float("epsilon", kBertEpsilon)),
        op_(simplified ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization") {}

  void run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& skip = ctx.input(1);
    require_float(x, op_, "input");
    require_float(skip, op_, "skip");
    if (x.rank() != 2 && x.rank() != 3)
      kernel_fail(op_ + ": input must be 2-D or 3-D, got shape " + shape_to_string(x.shape()));
    const int64_t H = x.dim(-1), rows = H ? x.numel() / H : 0;
    check_skip(x, skip);
    const int64_t skip_rows = H ? skip.numel() / H : 0;  // skip repeats over the batch when it has fewer rows
    const float* gamma = channel_param(ctx, 2, H, op_, "gamma");
    if (!gamma) kernel_fail(op_ + ": gamma is required");
    const float* beta = simplified_ ? nullptr : channel_param(ctx, 3, H, op_, "beta");
    const float* bias = channel_param(ctx, simplified_ ? 3 : 4, H, op_, "bias");

    Tensor& y = ctx.allocate_output(0, DataType::Float, x.shape());
    Shape stat_shape = x.shape();
    stat_shape.back() = 1;
    float* mean = ctx.wants_output(1) ? ctx.allocate_output(1, DataType::Float, stat_shape).data<float>() : nullptr;
    float* inv = ctx.wants_output(2) ? ctx.allocate_output(2, DataType::Float, stat_shape).data<float>() : nullptr;
    float* sum = ctx.wants_output(3) ? ctx.allocate_output(3, DataType::Float, x.shape()).data<float>() : nullptr;
    if (rows == 0 || H == 0) return;
    const float *xp = x.data<float>(), *sp = skip.data<float>();
    float* yp = y.data<float>();
    const bool fast = !simplified_ && !mean && !inv;
    parallel_for(rows * H > 32768 ? ctx.thread_pool() : nullptr, rows, [&](int64_t r0, int64_t r1) {
      std::vector<float> scratch(sum ? 0 : static_cast<size_t>(H));
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = xp + r * H;
        const float* sr = sp + (r % skip_rows) * H;
        float* yr = yp + r * H;
        if (fast && !bias && !sum) {  // the common BERT case: one vectorized pass over x + skip
          vm::layer_norm(xr, sr, yr, H, gamma, beta, eps_);
          continue;
        }
        float* t = sum ? sum + r * H : scratch.data();
        for (int64_t i = 0; i < H; ++i) t[i] = xr[i] + sr[i] + (bias ? bias[i] : 0.f);
        if (fast) {
          vm::layer_norm(t, nullptr, yr, H, gamma, beta, eps_);
          continue;
        }
        RowStats st = normalize_row(t, yr, H, gamma, beta, eps_, simplified_);
        if (mean) mean[r] = st.mean;
        if (inv) inv[r] = st.inv_std;
      }
    });
  }

 private:
  // skip: the input's shape, or its last two dimensions (3-D with batch 1 or 2-D).
  void check_skip(const Tensor& x, const Tensor& skip) const {
    bool ok = skip.shape() == x.shape();
    if (!ok && x.rank() == 3 && (skip.rank() == 2 || (skip.rank() == 3 && skip.dim(0) == 1)))
      ok = skip.dim(-1) == x.dim(-1) && skip.dim(-2) == x.dim(-2);
    if (!ok)
      kernel_fail(op_ + ": skip shape " + shape_to_string(skip.shape()) + " should be the input's " +
                  shape_to_string(x.shape()) + " or its last two dimensions");
  }

  bool simplified_;
  float eps_;
  std::string op_;
};

// ---- SimplifiedLayerNormalization (default domain, ORT) ----
// RMS norm over axes [axis, rank): Y = X / sqrt(mean(X^2) + eps) * scale;
// optional output inv_std_var ([..., 1, ...] over the normalized axes).

class SimplifiedLayerNormKernel final : public Kernel {
 public:
  explicit SimplifiedLayerNormKernel(const KernelInitContext& ic)
      : axis_(ic.get_int("axis", -1)), eps_(ic.get_float("epsilon", 1e-5f)) {
    int64_t stash = ic.get_int("stash_type", 1);
    if (stash != 1) kernel_fail("SimplifiedLayerNormalization: stash_type must be 1 (float), got " + S(stash));
  }
  void run(KernelContext& ctx) const override {
    const std::string op = "SimplifiedLayerNormalization";
    const Tensor& x = ctx.input(0);
    const Tensor& scale = ctx.input(1);
    require_float(x, op, "X");
    require_float(scale, op, "scale");
    const int64_t rank = x.rank();
    if (axis_ < -rank || axis_ >= std::max<int64_t>(rank, 1))
      kernel_fail(op + ": axis " + S(axis_) + " is out of range for rank " + S(rank));
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    int64_t inner = 1;
    for (int64_t d = axis; d < rank; ++d) inner *= x.dim(d);
    const int64_t rows = inner ? x.numel() / inner : 0;
    if (scale.numel() != inner)
      kernel_fail(op + ": scale has " + S(scale.numel()) + " values, expected " + S(inner) +
                  " (the normalized dimensions of X " + shape_to_string(x.shape()) + ")");
    Tensor& y = ctx.allocate_output(0, DataType::Float, x.shape());
    Shape stat_shape = x.shape();
    for (int64_t d = axis; d < rank; ++d) stat_shape[d] = 1;
    float* inv = ctx.wants_output(1) ? ctx.allocate_output(1, DataType::Float, stat_shape).data<float>() : nullptr;
    const float *xp = x.data<float>(), *g = scale.data<float>();
    float* yp = y.data<float>();
    parallel_for(x.numel() > 32768 ? ctx.thread_pool() : nullptr, rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float inv_rms = rr::rms_normalize(xp + r * inner, yp + r * inner, inner, g, eps_);
        if (inv) inv[r] = inv_rms;
      }
    });
  }

 private:
  int64_t axis_;
  float eps_;
};

// ---- EmbedLayerNormalization / QEmbedLayerNormalization ----
// output = LayerNorm(word[input_ids] + position[position_ids] + segment[segment_ids]);
// mask_index[b] = the number of non-zero mask values in row b (0 without a mask).
// The quantized form takes 8-bit tables, gamma and beta, each with a scalar
// scale and zero point; rows are dequantized as they are looked up.

// Where each input sits; the quantized op adds scales and zero points and has
// no position_ids nor embedding_sum.
struct EmbedSlots {
  size_t gamma = 5, beta = 6, mask = 7, position_ids = 8;
  size_t scale[5] = {0, 0, 0, 0, 0}, zero_point[5] = {0, 0, 0, 0, 0};  // word, position, segment, gamma, beta
};
EmbedSlots quantized_embed_slots() {
  EmbedSlots s;
  s.position_ids = ~size_t{0};
  for (size_t i = 0; i < 5; ++i) s.scale[i] = 8 + i, s.zero_point[i] = 13 + i;
  return s;
}

// A float or 8-bit [rows, H] table.
struct EmbeddingTable {
  const Tensor* t = nullptr;
  float scale = 1.f, zero_point = 0.f;
  int64_t rows() const { return t ? t->dim(0) : 0; }
  // dst[i] (+)= row r.
  void read_row(int64_t r, float* dst, bool add) const {
    const int64_t H = t->dim(1);
    auto go = [&](const auto* row) {
      for (int64_t i = 0; i < H; ++i) {
        float v = (static_cast<float>(row[i]) - zero_point) * scale;
        dst[i] = add ? dst[i] + v : v;
      }
    };
    if (t->dtype() == DataType::Float) go(t->data<float>() + r * H);
    else if (t->dtype() == DataType::UInt8) go(t->data<uint8_t>() + r * H);
    else go(t->data<int8_t>() + r * H);
  }
};

class EmbedLayerNormKernel final : public Kernel {
 public:
  EmbedLayerNormKernel(const KernelInitContext& ic, bool quantized)
      : quantized_(quantized), slots_(quantized ? quantized_embed_slots() : EmbedSlots{}),
        eps_(ic.get_float("epsilon", kBertEpsilon)),
        op_(quantized ? "QEmbedLayerNormalization" : "EmbedLayerNormalization") {}

  void run(KernelContext& ctx) const override {
    const Tensor& ids = ctx.input(0);
    if (ids.dtype() != DataType::Int32 || ids.rank() != 2)
      kernel_fail(op_ + ": input_ids must be 2-D int32, got " + dtype_name(ids.dtype()) + " " +
                  shape_to_string(ids.shape()));
    const int64_t B = ids.dim(0), Sq = ids.dim(1);
    const int32_t* seg = ctx.has_input(1) ? index_input(ctx, 1, "segment_ids", B, Sq, false) : nullptr;
    const EmbeddingTable word = table(ctx, 2, "word_embedding", 0);
    const int64_t H = ctx.input(2).dim(1);
    const EmbeddingTable pos = table(ctx, 3, "position_embedding", 1, H);
    const EmbeddingTable segt = ctx.has_input(4) ? table(ctx, 4, "segment_embedding", 2, H) : EmbeddingTable{};
    if (seg && !segt.t) kernel_fail(op_ + ": segment_ids needs segment_embedding");
    const std::vector<float> gamma = channel_values(ctx, slots_.gamma, "gamma", 3, H);
    const std::vector<float> beta = channel_values(ctx, slots_.beta, "beta", 4, H);
    if (gamma.empty() || beta.empty()) kernel_fail(op_ + ": gamma and beta are required");
    const int32_t* mask = ctx.has_input(slots_.mask) ? index_input(ctx, slots_.mask, "mask", B, Sq, false) : nullptr;
    const int32_t* pids =
        ctx.has_input(slots_.position_ids) ? index_input(ctx, slots_.position_ids, "position_ids", B, Sq, true) : nullptr;
    const bool pids_shared = pids && ctx.input(slots_.position_ids).dim(0) == 1 && B != 1;

    Tensor& out = ctx.allocate_output(0, DataType::Float, {B, Sq, H});
    int32_t* mask_index = ctx.wants_output(1) ? ctx.allocate_output(1, DataType::Int32, {B}).data<int32_t>() : nullptr;
    float* sum = !quantized_ && ctx.wants_output(2) ? ctx.allocate_output(2, DataType::Float, {B, Sq, H}).data<float>()
                                                    : nullptr;
    if (mask_index)
      for (int64_t b = 0; b < B; ++b) {
        int32_t n = 0;
        for (int64_t s = 0; mask && s < Sq; ++s) n += mask[b * Sq + s] != 0;
        mask_index[b] = n;
      }
    const int32_t* idp = ids.data<int32_t>();
    float* yp = out.data<float>();
    // Indices are checked before any task starts, so errors are not thrown from the pool.
    for (int64_t r = 0; r < B * Sq; ++r) {
      check_index(idp[r], word, "input_ids");
      check_index(position_of(pids, pids_shared, r, Sq), pos, "position_ids");
      if (seg) check_index(seg[r], segt, "segment_ids");
    }
    parallel_for(B * Sq * H > 32768 ? ctx.thread_pool() : nullptr, B * Sq, [&](int64_t r0, int64_t r1) {
      std::vector<float> scratch(sum ? 0 : static_cast<size_t>(H));
      for (int64_t r = r0; r < r1; ++r) {
        float* t = sum ? sum + r * H : scratch.data();
        word.read_row(idp[r], t, false);
        pos.read_row(position_of(pids, pids_shared, r, Sq), t, true);
        if (seg) segt.read_row(seg[r], t, true);
        vm::layer_norm(t, nullptr, yp + r * H, H, gamma.data(), beta.data(), eps_);
      }
    });
  }

 private:
  static int64_t position_of(const int32_t* pids, bool shared, int64_t r, int64_t Sq) {
    if (!pids) return r % Sq;
    return shared ? pids[r % Sq] : pids[r];
  }

  void check_index(int64_t i, const EmbeddingTable& t, const char* what) const {
    if (i < 0 || i >= t.rows())
      kernel_fail(op_ + ": " + what + " value " + S(i) + " is outside the embedding table's " + S(t.rows()) + " rows");
  }

  const int32_t* index_input(const KernelContext& ctx, size_t i, const char* what, int64_t B, int64_t Sq,
                             bool batch_may_be_one) const {
    const Tensor& t = ctx.input(i);
    bool ok = t.dtype() == DataType::Int32 && t.rank() == 2 && t.dim(1) == Sq &&
              (t.dim(0) == B || (batch_may_be_one && t.dim(0) == 1));
    if (!ok)
      kernel_fail(op_ + ": " + what + " should be int32 [" + S(B) + ", " + S(Sq) + "] like input_ids, got " +
                  dtype_name(t.dtype()) + " " + shape_to_string(t.shape()));
    return t.data<int32_t>();
  }

  // The float / 8-bit element type a parameter must have.
  void check_type(const Tensor& t, const char* what) const {
    bool ok = quantized_ ? t.dtype() == DataType::UInt8 || t.dtype() == DataType::Int8 : t.dtype() == DataType::Float;
    if (!ok)
      kernel_fail(op_ + ": " + what + " must be " + (quantized_ ? "uint8 or int8" : "float") + ", got " +
                  dtype_name(t.dtype()));
  }

  // Scale and zero point number `k` (word, position, segment, gamma, beta) of the quantized op.
  void quantization(const KernelContext& ctx, const Tensor& t, size_t k, const char* what, float& scale,
                    float& zero_point) const {
    if (!quantized_) return;
    if (!ctx.has_input(slots_.scale[k]) || ctx.input(slots_.scale[k]).dtype() != DataType::Float ||
        ctx.input(slots_.scale[k]).numel() != 1)
      kernel_fail(op_ + ": " + what + " needs a scalar float scale (input " + S(slots_.scale[k]) + ")");
    scale = ctx.input(slots_.scale[k]).data<float>()[0];
    if (!ctx.has_input(slots_.zero_point[k])) return;
    const Tensor& zp = ctx.input(slots_.zero_point[k]);
    if (zp.dtype() != t.dtype() || zp.numel() != 1)
      kernel_fail(op_ + ": " + what + " zero point should be one " + dtype_name(t.dtype()) + " value, got " +
                  dtype_name(zp.dtype()) + " " + shape_to_string(zp.shape()));
    zero_point = static_cast<float>(zp.int_at(0));
  }

  EmbeddingTable table(const KernelContext& ctx, size_t i, const char* what, size_t k, int64_t H = -1) const {
    const Tensor& t = ctx.input(i);
    check_type(t, what);
    if (t.rank() != 2 || (H >= 0 && t.dim(1) != H))
      kernel_fail(op_ + ": " + what + " shape " + shape_to_string(t.shape()) + " should be [rows, " +
                  (H >= 0 ? S(H) : std::string("hidden")) + "]");
    EmbeddingTable e{&t};
    quantization(ctx, t, k, what, e.scale, e.zero_point);
    return e;
  }

  // gamma / beta as H floats (empty when absent).
  std::vector<float> channel_values(const KernelContext& ctx, size_t i, const char* what, size_t k, int64_t H) const {
    if (!ctx.has_input(i)) return {};
    const Tensor& t = ctx.input(i);
    check_type(t, what);
    if (t.rank() != 1 || t.dim(0) != H)
      kernel_fail(op_ + ": " + what + " shape " + shape_to_string(t.shape()) + " should be [" + S(H) + "]");
    EmbeddingTable row{&t};
    quantization(ctx, t, k, what, row.scale, row.zero_point);
    std::vector<float> v(static_cast<size_t>(H));
    const Tensor as_row = t.reshaped({1, H});
    row.t = &as_row;
    row.read_row(0, v.data(), false);
    return v;
  }

  bool quantized_;
  EmbedSlots slots_;
  float eps_;
  std::string op_;
};

}  // namespace

void register_contrib_transformer(KernelRegistry& r) {
  // float16 / bfloat16 run in float, as in onnxruntime; the mean and inv_std_var
  // outputs are float for any input type.
  const std::set<size_t> kStatisticsOutputs = {1, 2};
  r.add("SkipLayerNormalization", 1, kMaxOpset,
        half_via_float([](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
          return std::make_unique<SkipNormKernel>(ic, false);
        }, kStatisticsOutputs),
        kMicrosoft);
  r.add("SkipSimplifiedLayerNormalization", 1, kMaxOpset,
        half_via_float([](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
          return std::make_unique<SkipNormKernel>(ic, true);
        }, kStatisticsOutputs),
        kMicrosoft);
  r.add("EmbedLayerNormalization", 1, kMaxOpset,
        [](const KernelInitContext& ic) -> std::unique_ptr<Kernel> { return std::make_unique<EmbedLayerNormKernel>(ic, false); },
        kMicrosoft);
  r.add("QEmbedLayerNormalization", 1, kMaxOpset,
        [](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
          return std::make_unique<EmbedLayerNormKernel>(ic, true);
        },
        kMicrosoft);
  // onnxruntime's op lives in the default domain; the optimizer's RMSNorm fusion writes it in
  // com.onyx, so that saved models keep to the standard ops in ai.onnx.
  for (const char* domain : {"", "com.onyx"})
    r.add("SimplifiedLayerNormalization", 1, kMaxOpset,
          half_via_float([](const KernelInitContext& ic) -> std::unique_ptr<Kernel> {
            return std::make_unique<SimplifiedLayerNormKernel>(ic);
          }, {1}),  // inv_std_var stays float
          domain);
  register_contrib_attention(r);
}

}  // namespace onyx
