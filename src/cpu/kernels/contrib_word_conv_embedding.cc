// com.microsoft WordConvEmbedding as ONNX Runtime's CPU provider runs it: a
// character-level word embedding (characters looked up in an embedding
// table, a 1-D convolution over each word's characters, tanh, and a max over
// the positions), one vector per word of a [words, chars] index matrix.
#include <algorithm>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"
#include "cpu/gemm_vmath.h"

namespace onyx {
namespace {

const char* const kMsDomain = "com.microsoft";

struct WordConvAttrs {
  int64_t embedding_size, conv_window_size, char_embedding_size;  // -1: not checked
};

// A word's length as ORT counts it: the number of positive character ids in
// its row, or 0 when the first one is not positive (a padding row).
int64_t word_length(const int32_t* row, int64_t width) {
  if (width == 0 || row[0] <= 0) return 0;
  return std::count_if(row, row + width, [](int32_t c) { return c > 0; });
}

struct WordConvShapes {
  int64_t words, width, filters, window, char_dim, vocab;
};

WordConvShapes check_word_conv_inputs(const Tensor& seq, const Tensor& W, const Tensor& B, const Tensor& C,
                                      const WordConvAttrs& a) {
  auto fail_if = [](bool bad, const std::string& what) {
    if (bad) kernel_fail("WordConvEmbedding: " + what);
  };
  fail_if(seq.dtype() != DataType::Int32, "Sequence must be int32, got " + dtype_name(seq.dtype()));
  for (const Tensor* t : {&W, &B, &C})
    fail_if(t->dtype() != DataType::Float, "W, B and C must be float, got " + dtype_name(t->dtype()));
  fail_if(seq.rank() != 2, "Sequence must be 2-D [words, chars], got " + shape_to_string(seq.shape()));
  fail_if(W.rank() != 4 || W.dim(1) != 1,
          "W must be [filters, 1, window, char_embedding_size], got " + shape_to_string(W.shape()));
  fail_if(C.rank() != 2, "C must be 2-D [chars, char_embedding_size], got " + shape_to_string(C.shape()));
  const WordConvShapes s{seq.dim(0), seq.dim(1), W.dim(0), W.dim(2), C.dim(1), C.dim(0)};
  fail_if(B.numel() != s.filters, "B must hold one value per filter (" + std::to_string(s.filters) + "), got shape " +
                                      shape_to_string(B.shape()));
  fail_if(W.dim(3) != s.char_dim, "W's last dimension must equal C's embedding size, got " +
                                      shape_to_string(W.shape()) + " and " + shape_to_string(C.shape()));
  fail_if(a.embedding_size != -1 && a.embedding_size != s.filters,
          "embedding_size " + std::to_string(a.embedding_size) + " differs from W's " + std::to_string(s.filters));
  fail_if(a.conv_window_size != -1 && a.conv_window_size != s.window,
          "conv_window_size " + std::to_string(a.conv_window_size) + " differs from W's " + std::to_string(s.window));
  fail_if(a.char_embedding_size != -1 && a.char_embedding_size != s.char_dim,
          "char_embedding_size " + std::to_string(a.char_embedding_size) + " differs from C's " +
              std::to_string(s.char_dim));
  fail_if(s.window <= 0, "the convolution window must be positive, got " + std::to_string(s.window));
  // ORT reads past the row (into the next word, or past the end) when the
  // window is wider than it.
  fail_if(s.window > s.width, "the convolution window " + std::to_string(s.window) + " is wider than a word (" +
                                  std::to_string(s.width) + " characters)");
  return s;
}

// One word's embedding: its first max(length, window) character vectors,
// every window of them through the filters (one GEMM), tanh, and the max over
// windows per filter, from ORT's starting value of -1e12.
void embed_word(const int32_t* row, int64_t length, const WordConvShapes& s, const float* w, const float* b,
                const float* table, float* out, std::vector<float>& chars, std::vector<float>& conv) {
  const int64_t span = std::max(length, s.window), windows = span - s.window + 1, taps = s.window * s.char_dim;
  chars.resize(static_cast<size_t>(windows * taps));
  for (int64_t t = 0; t < windows; ++t)  // window t: characters t .. t + window - 1, side by side
    for (int64_t k = 0; k < s.window; ++k) {
      const int32_t id = row[t + k];
      if (id < 0 || id >= s.vocab)
        kernel_fail("WordConvEmbedding: character id " + std::to_string(id) + " is outside C's rows [0, " +
                    std::to_string(s.vocab) + ")");
      std::copy(table + id * s.char_dim, table + (id + 1) * s.char_dim, chars.data() + t * taps + k * s.char_dim);
    }
  conv.resize(static_cast<size_t>(windows * s.filters));
  gemm_f32(false, true, windows, s.filters, taps, 1.f, chars.data(), taps, w, taps, 0.f, conv.data(), s.filters);
  for (int64_t t = 0; t < windows; ++t)
    for (int64_t f = 0; f < s.filters; ++f) conv[t * s.filters + f] += b[f];
  vm::tanh(conv.data(), conv.data(), windows * s.filters);
  std::fill(out, out + s.filters, -1e12f);
  for (int64_t t = 0; t < windows; ++t)
    for (int64_t f = 0; f < s.filters; ++f) out[f] = std::max(conv[t * s.filters + f], out[f]);
}

void run_word_conv_embedding(KernelContext& ctx, const WordConvAttrs& a) {
  const Tensor& seq = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor& B = ctx.input(2);
  const Tensor& C = ctx.input(3);
  const WordConvShapes s = check_word_conv_inputs(seq, W, B, C, a);
  Tensor& Y = ctx.allocate_output(0, DataType::Float, {s.words, s.filters});
  float* y = Y.data<float>();
  // ORT leaves the rows of empty words unwritten (whatever its buffer held);
  // they are zeros here.
  std::fill(y, y + Y.numel(), 0.f);
  std::vector<float> chars, conv;
  for (int64_t i = 0; i < s.words; ++i) {
    const int32_t* row = seq.data<int32_t>() + i * s.width;
    const int64_t length = word_length(row, s.width);
    if (length > 0)
      embed_word(row, length, s, W.data<float>(), B.data<float>(), C.data<float>(), y + i * s.filters, chars, conv);
  }
}

}  // namespace

void register_contrib_word_conv_embedding(KernelRegistry& r) {
  r.add("WordConvEmbedding", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          const WordConvAttrs a{ic.get_int("embedding_size", -1), ic.get_int("conv_window_size", -1),
                                ic.get_int("char_embedding_size", -1)};
          return [a](KernelContext& ctx) { run_word_conv_embedding(ctx, a); };
        }),
        kMsDomain);
}

}  // namespace onyx
