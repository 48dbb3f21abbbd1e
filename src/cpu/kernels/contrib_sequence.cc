// com.microsoft ops over token sequences and time series, as ONNX Runtime's
// CPU provider runs them: NGramRepeatBlock (bans tokens that would repeat an
// n-gram, in generation loops), BifurcationDetector (speculative decoding's
// draft acceptance), DynamicTimeWarping (Whisper's word timestamps) and
// UnfoldTensor (torch.Tensor.unfold: sliding windows along one axis).
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

const char* const kMsDomain = "com.microsoft";


// ---- NGramRepeatBlock ----

// scores (copied) get -inf at every token that would complete an n-gram
// already present in the row's input_ids: each earlier window whose first
// n - 1 tokens equal the row's last n - 1 tokens bans the token after them.
void run_ngram_repeat_block(KernelContext& ctx, int64_t n) {
  const Tensor& ids = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  check_dtype("NGramRepeatBlock", "input_ids", ids, DataType::Int64);
  check_dtype("NGramRepeatBlock", "scores", scores, DataType::Float);
  const std::string shapes = shape_to_string(ids.shape()) + " and " + shape_to_string(scores.shape());
  ONYX_KERNEL_CHECK(ids.rank() == 2 && scores.rank() == 2,
                    "NGramRepeatBlock: input_ids and scores must be 2-D, got " + shapes);
  ONYX_KERNEL_CHECK(ids.dim(0) == scores.dim(0),
                    "NGramRepeatBlock: input_ids and scores must have the same batch size, got " + shapes);
  const int64_t batch = ids.dim(0), len = ids.dim(1), vocab = scores.dim(1);
  Tensor& out = ctx.allocate_output(0, DataType::Float, scores.shape());
  if (scores.numel() > 0) std::memcpy(out.raw(), scores.raw(), scores.nbytes());
  if (len + 1 < n) return;
  const int64_t* x = ids.data<int64_t>();
  float* y = out.data<float>();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t* row = x + b * len;
    const int64_t* tail = row + len + 1 - n;  // the n - 1 tokens a new n-gram would start with
    for (int64_t i = 0; i + n <= len; ++i) {
      if (!std::equal(row + i, row + i + n - 1, tail)) continue;
      const int64_t token = row[i + n - 1];
      ONYX_KERNEL_CHECK(token >= 0 && token < vocab, "NGramRepeatBlock: token id " + std::to_string(token) +
                                                         " in input_ids is outside the vocabulary [0, " +
                                                         std::to_string(vocab) + ")");
      y[b * vocab + token] = -std::numeric_limits<float>::infinity();
    }
  }
}

// ---- BifurcationDetector ----

struct NgramRange {
  int64_t min_n, max_n;
};

// Where the last n tokens of `tokens` occur in `src`, tried for n from min_n
// up, in ORT's order: an n-gram that occurs exactly once gives the index
// after it, one occurring twice resets to -1 and tries the next n, and the
// search stops at the first n-gram that is absent or whose match ends the
// source (that index, src_len, is returned as is, as ORT does).
int64_t suffix_match_index(const int64_t* src, int64_t src_len, const int64_t* tokens, int64_t len, NgramRange r) {
  int64_t idx = -1;
  const int64_t* src_end = src + src_len;
  for (int64_t n = r.min_n; n <= r.max_n && n <= len; ++n) {
    const int64_t* gram = tokens + len - n;
    const int64_t* hit = std::search(src, src_end, gram, gram + n);
    if (hit == src_end) break;
    idx = hit - src + n;
    if (idx >= src_len) break;
    if (std::search(src + idx - n + 1, src_end, gram, gram + n) != src_end) idx = -1;
  }
  return idx;
}

void run_bifurcation_detector(KernelContext& ctx, NgramRange r) {
  const Tensor& src = ctx.input(0);
  const Tensor& cur = ctx.input(1);
  const Tensor& prev_idx = ctx.input(2);
  const bool has_pred = ctx.has_input(3);
  check_dtype("BifurcationDetector", "src_tokens", src, DataType::Int64);
  check_dtype("BifurcationDetector", "cur_tokens", cur, DataType::Int64);
  check_dtype("BifurcationDetector", "prev_suffix_match_idx", prev_idx, DataType::Int64);
  ONYX_KERNEL_CHECK(src.rank() == 1 && cur.rank() == 1,
                    "BifurcationDetector: src_tokens and cur_tokens must be 1-D, got " + shape_to_string(src.shape()) +
                        " and " + shape_to_string(cur.shape()));
  ONYX_KERNEL_CHECK(
      prev_idx.numel() == 1,
      "BifurcationDetector: prev_suffix_match_idx must hold one value, got shape " + shape_to_string(prev_idx.shape()));
  const int64_t src_len = src.dim(0), cur_len = cur.dim(0);
  const int64_t* s = src.data<int64_t>();
  std::vector<int64_t> tokens(cur.data<int64_t>(), cur.data<int64_t>() + cur_len);
  if (has_pred) {
    // Append the predicted tokens up to and including the first that departs
    // from the source after the previous match.
    const Tensor& pred = ctx.input(3);
    check_dtype("BifurcationDetector", "pred_tokens", pred, DataType::Int64);
    const int64_t start = prev_idx.data<int64_t>()[0];
    ONYX_KERNEL_CHECK(start >= 0 && start <= src_len, "BifurcationDetector: prev_suffix_match_idx " +
                                                          std::to_string(start) + " is outside [0, " +
                                                          std::to_string(src_len) + "]");
    ONYX_KERNEL_CHECK(pred.rank() == 1 && pred.dim(0) == src_len + 1 - start,
                      "BifurcationDetector: pred_tokens must be [src_len + 1 - prev_suffix_match_idx] = [" +
                          std::to_string(src_len + 1 - start) + "], got " + shape_to_string(pred.shape()));
    const int64_t* p = pred.data<int64_t>();
    int64_t k = 0;
    while (k < src_len - start && p[k] == s[start + k]) ++k;
    tokens.insert(tokens.end(), p, p + k + 1);
  }
  Tensor& out = ctx.allocate_output(0, DataType::Int64, {static_cast<int64_t>(tokens.size())});
  std::copy(tokens.begin(), tokens.end(), out.data<int64_t>());
  const int64_t idx = suffix_match_index(s, src_len, tokens.data(), static_cast<int64_t>(tokens.size()), r);
  ctx.allocate_output(1, DataType::Int64, prev_idx.shape()).data<int64_t>()[0] = idx;
}

// ---- DynamicTimeWarping ----

// The cheapest monotone path through a [rows, cols] cost matrix from (0, 0)
// to (rows - 1, cols - 1), as [2, len] int32 (row indices, then columns).
// Ties go as in ORT: the diagonal only when strictly cheapest, then the
// vertical step when strictly cheapest, else the horizontal one.
void run_dynamic_time_warping(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  check_dtype("DynamicTimeWarping", "input", X, DataType::Float);
  ONYX_KERNEL_CHECK(X.rank() == 2 || (X.rank() == 3 && X.dim(0) == 1),
                    "DynamicTimeWarping: input must be [M, N] or [1, M, N], got " + shape_to_string(X.shape()));
  const int64_t rows = X.dim(-2), cols = X.dim(-1);
  const float* c = X.data<float>();
  const int64_t w = cols + 1;
  std::vector<float> cost(static_cast<size_t>((rows + 1) * w), std::numeric_limits<float>::infinity());
  std::vector<int8_t> step(cost.size(), 2);  // 0 diagonal, 1 from above, 2 from the left
  cost[0] = 0;
  for (int64_t j = 1; j <= cols; ++j)
    for (int64_t i = 1; i <= rows; ++i) {
      const float diag = cost[(i - 1) * w + j - 1], up = cost[(i - 1) * w + j], left = cost[i * w + j - 1];
      float best = left;
      int8_t s = 2;
      if (diag < up && diag < left) {
        best = diag;
        s = 0;
      } else if (up < diag && up < left) {
        best = up;
        s = 1;
      }
      cost[i * w + j] = best + c[(i - 1) * cols + j - 1];
      step[i * w + j] = s;
    }
  std::vector<int32_t> path_i, path_j;
  for (int64_t i = rows, j = cols; i > 0 && j > 0;) {
    path_i.push_back(static_cast<int32_t>(i - 1));
    path_j.push_back(static_cast<int32_t>(j - 1));
    const int8_t s = step[i * w + j];
    if (s != 2) --i;
    if (s != 1) --j;
  }
  const int64_t len = static_cast<int64_t>(path_i.size());
  int32_t* y = ctx.allocate_output(0, DataType::Int32, {2, len}).data<int32_t>();
  std::reverse_copy(path_i.begin(), path_i.end(), y);
  std::reverse_copy(path_j.begin(), path_j.end(), y + len);
}

// ---- UnfoldTensor ----

// Windows of `size` along `dim`, `step` apart: the output has dim's length
// replaced by the window count and the window appended as a last axis.
// ORT's kernel takes float, double, int32 and int64; any type copies here.
struct UnfoldAttrs {
  int64_t dim, size, step;
};

void run_unfold_tensor(KernelContext& ctx, const UnfoldAttrs& a) {
  const Tensor& X = ctx.input(0);
  const int64_t rank = X.rank();
  ONYX_KERNEL_CHECK(a.dim >= -rank && a.dim < rank, "UnfoldTensor: dim " + std::to_string(a.dim) +
                                                        " is out of range for input of shape " +
                                                        shape_to_string(X.shape()));
  const int axis = static_cast<int>(a.dim < 0 ? a.dim + rank : a.dim);
  const int64_t len = X.dim(axis);
  ONYX_KERNEL_CHECK(len >= a.size, "UnfoldTensor: size " + std::to_string(a.size) + " exceeds dimension " +
                                       std::to_string(axis) + " of input shape " + shape_to_string(X.shape()));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= X.dim(i);
  for (int i = axis + 1; i < rank; ++i) inner *= X.dim(i);
  const int64_t windows = (len - a.size) / a.step + 1;
  Shape shape = X.shape();
  shape[axis] = windows;
  shape.push_back(a.size);
  Tensor& Y = ctx.allocate_output(0, X.dtype(), shape);
  dispatch_all(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t wi = 0; wi < windows; ++wi)
        for (int64_t in = 0; in < inner; ++in) {
          const T* src = x + (o * len + wi * a.step) * inner + in;
          for (int64_t k = 0; k < a.size; ++k) *y++ = src[k * inner];
        }
  });
}

}  // namespace

void register_contrib_sequence(KernelRegistry& r) {
  r.add("NGramRepeatBlock", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          const int64_t n = ic.get_int("ngram_size");
          if (n <= 0) kernel_fail("NGramRepeatBlock: ngram_size must be positive, got " + std::to_string(n));
          return [n](KernelContext& ctx) { run_ngram_repeat_block(ctx, n); };
        }),
        kMsDomain);
  r.add("BifurcationDetector", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          const NgramRange range{ic.get_int("min_ngram_size", 1), ic.get_int("max_ngram_size", 3)};
          if (range.min_n <= 0 || range.max_n < range.min_n)
            kernel_fail("BifurcationDetector: need 0 < min_ngram_size <= max_ngram_size, got " +
                        std::to_string(range.min_n) + " and " + std::to_string(range.max_n));
          return [range](KernelContext& ctx) { run_bifurcation_detector(ctx, range); };
        }),
        kMsDomain);
  r.add("DynamicTimeWarping", 1, kMaxOpset,
        lambda_factory([](const KernelInitContext&) { return run_dynamic_time_warping; }), kMsDomain);
  r.add("UnfoldTensor", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          const UnfoldAttrs a{ic.get_int("dim", -1), ic.get_int("size"), ic.get_int("step", 1)};
          if (a.size <= 0 || a.step <= 0)
            kernel_fail("UnfoldTensor: size and step must be positive, got size " + std::to_string(a.size) +
                        " and step " + std::to_string(a.step));
          return [a](KernelContext& ctx) { run_unfold_tensor(ctx, a); };
        }),
        kMsDomain);
}

}  // namespace onyx
