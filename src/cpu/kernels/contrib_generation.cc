// com.microsoft GreedySearch and BeamSearch, the generation ops of ORT's
// convert_generation tool, for decoder-only models (model_type 0) and, in
// BeamSearch, encoder-decoder ones (model_type 1, T5 style; model_type 2 and
// WhisperBeamSearch, Whisper's audio encoder and decoder): each step runs
// the decoder subgraph (through the executor, like Loop's body) on the tokens
// chosen so far, scores the next token as ORT's CPU provider does and feeds the
// chosen tokens and the present states back. The pieces are in generation.h.
#include <algorithm>
#include <cstring>
#include <optional>

#include "cpu/cpu_provider.h"
#include "cpu/kernels/generation.h"

namespace onyx {
namespace {

using gen::SearchParams;

const char* const kMsDomain = "com.microsoft";
constexpr int32_t kMaxLength = 4096;  // ORT's limit on max_length
constexpr int32_t kMaxBeams = 128;

// Input positions, which differ between the ops.
struct InputSlots {
  int max_length, min_length, num_beams, num_return, length_penalty, repetition_penalty, vocab_mask,
      prefix_vocab_mask, attention_mask, decoder_input_ids, temperature;
};
constexpr InputSlots kBeamSlots{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -1};
constexpr InputSlots kWhisperSlots{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14};
constexpr InputSlots kGreedySlots{1, 2, -1, -1, -1, 3, 4, 5, 6, -1, -1};
// WhisperBeamSearch's inputs and outputs for cross attention (Q*K per frame) and no-speech probabilities.
constexpr size_t kExtraDecodingIdsSlot = 13, kCrossQkOutput = 3, kNoSpeechOutput = 4;

bool present(const KernelContext& ctx, int i) { return i >= 0 && ctx.has_input(static_cast<size_t>(i)); }

// A scalar input (shape [] or [1], as ORT accepts), or `def` when omitted.
double scalar_input(const KernelContext& ctx, int i, const char* name, double def, bool is_float) {
  if (!present(ctx, i)) return def;
  const Tensor& t = ctx.input(static_cast<size_t>(i));
  ONYX_KERNEL_CHECK(t.numel() == 1 && t.rank() <= 1,
                    std::string("input ") + name + " must be a scalar, got shape " + shape_to_string(t.shape()));
  if (is_float) {
    // T is float: ORT's CPU kernels are registered for float only.
    ONYX_KERNEL_CHECK(t.dtype() == DataType::Float,
                      std::string("input ") + name + " must be float, got " + dtype_name(t.dtype()));
    return t.float_at(0);
  }
  ONYX_KERNEL_CHECK(t.dtype() == DataType::Int32,
                    std::string("input ") + name + " must be int32, got " + dtype_name(t.dtype()));
  return static_cast<double>(t.int_at(0));
}

// An optional int32 mask input of an expected shape.
const int32_t* mask_input(const KernelContext& ctx, int i, const char* name, const Shape& want) {
  if (!present(ctx, i)) return nullptr;
  const Tensor& t = ctx.input(static_cast<size_t>(i));
  ONYX_KERNEL_CHECK(t.dtype() == DataType::Int32,
                    std::string("input ") + name + " must be int32, got " + dtype_name(t.dtype()));
  ONYX_KERNEL_CHECK(t.shape() == want, std::string("input ") + name + " must have shape " + shape_to_string(want) +
                                           ", got " + shape_to_string(t.shape()));
  return t.data<int32_t>();
}

enum class Op { Greedy, Beam, Whisper };

SearchParams attribute_params(const KernelInitContext& ic, Op op) {
  const bool beam = op != Op::Greedy;
  SearchParams p;
  p.model_type = ic.get_int("model_type", op == Op::Whisper ? 2 : 0);
  p.eos_token_id = static_cast<int32_t>(ic.get_int("eos_token_id"));  // both required by ORT's schemas
  p.pad_token_id = static_cast<int32_t>(ic.get_int("pad_token_id"));
  p.decoder_start_token_id = static_cast<int32_t>(ic.get_int("decoder_start_token_id", -1));
  p.no_repeat_ngram_size = static_cast<int32_t>(ic.get_int("no_repeat_ngram_size", 0));
  p.early_stopping = ic.get_int("early_stopping", 0) == 1;
  p.vocab_attr = ic.get_int("vocab_size", -1);
  ONYX_KERNEL_CHECK(p.no_repeat_ngram_size >= 0,
                    "no_repeat_ngram_size must not be negative, got " + std::to_string(p.no_repeat_ngram_size));
  if (op == Op::Whisper)
    ONYX_KERNEL_CHECK(p.model_type == 2, "WhisperBeamSearch needs model_type 2, got " + std::to_string(p.model_type));
  ONYX_KERNEL_CHECK(p.model_type == 0 || ((p.model_type == 1 || p.model_type == 2) && beam),
                    "model_type " + std::to_string(p.model_type) + " is not supported (0: decoder-only" +
                        (beam ? ", 1: T5 style, 2: Whisper)" : "; ORT's CPU GreedySearch runs no other)"));
  if (p.model_type == 2) {
    // Cross-attention Q*K and no-speech probabilities come from decoders ORT rewrites for CUDA
    // (DecoderMaskedMultiHeadAttention sharing past and present buffers).
    ONYX_KERNEL_CHECK(ic.get_int("decoder_output_cross_qk", 0) == 0,
                      "decoder_output_cross_qk (a decoder returning cross-attention Q*K) is not supported");
    ONYX_KERNEL_CHECK(!ic.has_output(kCrossQkOutput), "the cross_qk output is not supported");
    ONYX_KERNEL_CHECK(!ic.has_output(kNoSpeechOutput), "the no_speech_probs output is not supported");
    ONYX_KERNEL_CHECK(!ic.has_input(kExtraDecodingIdsSlot), "the extra_decoding_ids input is not supported");
  }
  auto& t = p.timestamps;
  t.begin = static_cast<int32_t>(ic.get_int("beginning_timestamp_token_id", -1));
  t.no_timestamps = static_cast<int32_t>(ic.get_int("no_timestamps_token_id", -1));
  t.start_of_lm = static_cast<int32_t>(ic.get_int("start_of_lm_token_id", -1));
  t.translate = static_cast<int32_t>(ic.get_int("translate_token_id", -1));
  t.transcribe = static_cast<int32_t>(ic.get_int("transcribe_token_id", -1));
  t.start = p.decoder_start_token_id;
  if (p.model_type == 1)
    ONYX_KERNEL_CHECK(p.decoder_start_token_id >= 0,
                      "model_type 1 needs decoder_start_token_id (the encoder takes the start tokens)");
  return p;
}

// The parameters of one run: `p` holds the attributes' and the decoder's.
SearchParams run_params(const KernelContext& ctx, SearchParams p, const InputSlots& in) {
  const Tensor& ids = ctx.input(0);
  if (p.model_type == 2) {
    // Whisper's input_ids are the encoder's audio features.
    ONYX_KERNEL_CHECK(ids.dtype() == DataType::Float,
                      "input_ids (the audio features) must be float, got " + dtype_name(ids.dtype()));
    ONYX_KERNEL_CHECK(ids.rank() == 3 && ids.dim(0) > 0,
                      "input_ids (the audio features) must be [batch, features, frames], got " +
                          shape_to_string(ids.shape()));
  } else {
    ONYX_KERNEL_CHECK(ids.dtype() == DataType::Int32, "input_ids must be int32, got " + dtype_name(ids.dtype()));
    ONYX_KERNEL_CHECK(ids.rank() == 2 && ids.dim(0) > 0 && ids.dim(1) > 0,
                      "input_ids must be [batch, sequence] with both positive, got " + shape_to_string(ids.shape()));
  }
  p.batch = static_cast<int32_t>(ids.dim(0));
  // A T5-style output starts with the one start token; the ids are the encoder's.
  p.sequence_length = p.model_type == 1 ? 1 : static_cast<int32_t>(ids.dim(1));
  if (p.model_type == 2) {
    // Whisper's output starts with the forced decoder ids, or the start token alone.
    p.sequence_length = 1;
    if (present(ctx, in.decoder_input_ids)) {
      const Tensor& d = ctx.input(static_cast<size_t>(in.decoder_input_ids));
      ONYX_KERNEL_CHECK(d.dtype() == DataType::Int32,
                        "decoder_input_ids must be int32, got " + dtype_name(d.dtype()));
      ONYX_KERNEL_CHECK(d.rank() == 2 && d.dim(0) == p.batch && d.dim(1) > 0,
                        "decoder_input_ids must be [batch = " + std::to_string(p.batch) + ", n] with n positive, got " +
                            shape_to_string(d.shape()));
      p.sequence_length = static_cast<int32_t>(d.dim(1));
    } else {
      ONYX_KERNEL_CHECK(p.decoder_start_token_id >= 0,
                        "without decoder_input_ids Whisper needs decoder_start_token_id");
    }
  }
  p.max_length = static_cast<int32_t>(scalar_input(ctx, in.max_length, "max_length", kMaxLength, false));
  ONYX_KERNEL_CHECK(p.max_length > p.sequence_length, "max_length (" + std::to_string(p.max_length) +
                                                          ") must be greater than the input sequence length (" +
                                                          std::to_string(p.sequence_length) + ")");
  ONYX_KERNEL_CHECK(p.max_length <= kMaxLength, "max_length (" + std::to_string(p.max_length) +
                                                    ") must be no more than " + std::to_string(kMaxLength));
  p.min_length = static_cast<int32_t>(scalar_input(ctx, in.min_length, "min_length", 0, false));
  p.num_beams = static_cast<int32_t>(scalar_input(ctx, in.num_beams, "num_beams", 1, false));
  ONYX_KERNEL_CHECK(p.num_beams >= 1 && p.num_beams <= kMaxBeams, "num_beams must be in [1, " +
                                                                     std::to_string(kMaxBeams) + "], got " +
                                                                     std::to_string(p.num_beams));
  p.num_return_sequences = static_cast<int32_t>(scalar_input(ctx, in.num_return, "num_return_sequences", 1, false));
  ONYX_KERNEL_CHECK(p.num_return_sequences >= 1 && p.num_return_sequences <= p.num_beams,
                    "num_return_sequences must be in [1, num_beams = " + std::to_string(p.num_beams) + "], got " +
                        std::to_string(p.num_return_sequences));
  p.length_penalty = static_cast<float>(scalar_input(ctx, in.length_penalty, "length_penalty", 1.0, true));
  p.repetition_penalty =
      static_cast<float>(scalar_input(ctx, in.repetition_penalty, "repetition_penalty", 1.0, true));
  ONYX_KERNEL_CHECK(p.repetition_penalty > 0.f,
                    "repetition_penalty must be greater than 0, got " + std::to_string(p.repetition_penalty));
  p.temperature = static_cast<float>(scalar_input(ctx, in.temperature, "temperature", 1.0, true));
  p.vocab_mask = mask_input(ctx, in.vocab_mask, "vocab_mask", {p.vocab});
  p.prefix_vocab_mask = mask_input(ctx, in.prefix_vocab_mask, "prefix_vocab_mask", {p.batch, p.vocab});
  if (p.model_type != 2)  // Whisper's encoder takes no mask (ORT checks only its rank and ignores it)
    mask_input(ctx, in.attention_mask, "attention_mask", ids.shape());
  return p;
}

// What both searches share: the subgraph(s) and the attribute parameters.
struct Setup {
  SearchParams params;
  std::optional<gen::GptDecoder> decoder, init_decoder;  // model_type 0; init_decoder runs the first step
  std::optional<gen::T5Decoder> t5;                      // model_type 1 and 2 (Whisper)

  Setup(const KernelInitContext& ic, SearchParams p) : params(p) {
    if (params.model_type == 1 || params.model_type == 2) {
      t5.emplace(ic, params.model_type == 2);
      params.vocab = static_cast<int32_t>(t5->vocab());
    } else {
      decoder.emplace(ic, "decoder");
      if (ic.has("init_decoder")) init_decoder.emplace(ic, "init_decoder");
      params.vocab = static_cast<int32_t>(decoder->vocab());
      if (init_decoder)
        ONYX_KERNEL_CHECK(init_decoder->vocab() == decoder->vocab() && init_decoder->layers() == decoder->layers(),
                          "the init_decoder (vocabulary " + std::to_string(init_decoder->vocab()) + ", " +
                              std::to_string(init_decoder->layers()) + " past states) does not match the decoder (" +
                              std::to_string(decoder->vocab()) + ", " + std::to_string(decoder->layers()) + ")");
    }
    // ORT reads the logits with the attribute's row width: another width gives it garbage.
    if (params.vocab_attr > 0 && params.vocab_attr != params.vocab)
      kernel_fail("vocab_size " + std::to_string(params.vocab_attr) + " differs from the decoder's logits width " +
                  std::to_string(params.vocab) + ": not supported");
  }

  const gen::GptDecoder& step_decoder(int32_t step) const {
    return step == 1 && init_decoder ? *init_decoder : *decoder;
  }
};

std::vector<Value> run_graph(KernelContext& ctx, const CompiledGraph& graph, const std::vector<Value>& feeds) {
  std::vector<Value> outs = ctx.run_subgraph(graph, feeds);
  ONYX_KERNEL_CHECK(!outs.empty() && outs[0].is_tensor(), "a generation subgraph returned no logits");
  return outs;
}

// The GPT decoder's first feeds for `p` (inputs expanded per beam).
std::vector<Value> first_feeds(const Setup& s, KernelContext& ctx, const SearchParams& p, int attention_slot,
                               std::vector<int32_t>& positions, std::vector<int32_t>& expanded) {
  const Tensor* mask = present(ctx, attention_slot) ? &ctx.input(static_cast<size_t>(attention_slot)) : nullptr;
  return s.step_decoder(1).first_feeds(ctx.input(0), mask, p.num_beams, p.pad_token_id, positions, expanded);
}

// ---- GreedySearch ----

void run_greedy(const Setup& s, KernelContext& ctx) {
  const SearchParams p = run_params(ctx, s.params, kGreedySlots);
  std::vector<int32_t> positions, expanded;
  std::vector<Value> feeds = first_feeds(s, ctx, p, kGreedySlots.attention_mask, positions, expanded);
  gen::Sequences seq(p.batch, p.max_length, p.sequence_length, expanded.data());
  std::vector<int32_t> tokens(static_cast<size_t>(p.batch));
  std::vector<char> finished(static_cast<size_t>(p.batch), 0);
  for (int32_t len = p.sequence_length, step = 1; len < p.max_length; ++step) {
    std::vector<Value> outs = run_graph(ctx, s.step_decoder(step).graph(), feeds);
    std::vector<float> scores = gen::last_logits(outs[0].tensor(), p, "the decoder's");
    gen::process_scores(p, seq, scores.data(), p.batch, step);
    for (int32_t b = 0; b < p.batch; ++b) {
      tokens[b] = gen::argmax(scores.data() + static_cast<size_t>(b) * p.vocab, p.vocab);
      // A finished row gets pad tokens; EOS itself is written as pad, as ORT does.
      if (tokens[b] == p.eos_token_id || finished[b]) {
        finished[b] = 1;
        tokens[b] = p.pad_token_id;
      }
    }
    seq.append(tokens.data());
    if (std::all_of(finished.begin(), finished.end(), [](char f) { return f != 0; })) break;
    if (++len == p.max_length) break;
    if (step > 1)
      for (auto& x : positions) ++x;
    s.decoder->next_feeds(feeds, outs, tokens.data(), positions.data(), nullptr, p.batch);
  }
  // After an early stop ORT leaves the tail unwritten; it is pad here.
  Tensor& out = ctx.allocate_output(0, DataType::Int32, {p.batch, p.max_length});
  std::fill_n(out.data<int32_t>(), out.numel(), p.pad_token_id);
  for (int32_t b = 0; b < p.batch; ++b)
    std::copy(seq.row(b), seq.row(b) + seq.length(), out.data<int32_t>() + static_cast<size_t>(b) * p.max_length);
}

// ---- BeamSearch ----

// The 2 * beams best candidates of each batch item over its beams' scores:
// scores, tokens and the beam (within the item) each continues.
struct Candidates {
  std::vector<float> scores;
  std::vector<int32_t> tokens, beams;
};

Candidates best_candidates(const SearchParams& p, const std::vector<float>& scores) {
  const int64_t width = static_cast<int64_t>(p.num_beams) * p.vocab, k = 2 * p.num_beams;
  ONYX_KERNEL_CHECK(k <= width, "BeamSearch needs 2 * num_beams candidates, the vocabulary of " +
                                    std::to_string(p.vocab) + " gives " + std::to_string(width));
  Candidates c;
  c.scores.resize(static_cast<size_t>(p.batch * k));
  c.tokens.resize(c.scores.size());
  c.beams.resize(c.scores.size());
  std::vector<int64_t> idx(static_cast<size_t>(k));
  for (int32_t b = 0; b < p.batch; ++b) {
    gen::top_k(scores.data() + b * width, width, k, c.scores.data() + b * k, idx.data());
    for (int64_t j = 0; j < k; ++j) {
      c.tokens[b * k + j] = static_cast<int32_t>(idx[j] % p.vocab);
      c.beams[b * k + j] = static_cast<int32_t>(idx[j] / p.vocab);
    }
  }
  return c;
}

// The state of one BeamSearch run.
struct BeamRun {
  const SearchParams& p;
  gen::Sequences seq;
  std::vector<float> beam_scores;  // each beam's running score
  gen::BeamScorer scorer;
  float* step_scores = nullptr;    // the optional `scores` output, [max_length - S, batch, beams, vocab]

  BeamRun(const SearchParams& params, const int32_t* first_ids)
      : p(params), seq(params.batch_beams(), params.max_length, params.sequence_length, first_ids),
        beam_scores(static_cast<size_t>(params.batch_beams()), 0.f), scorer(params) {
    // Beams of an item start equal: all but the first start at -1e9 so that they part.
    for (int32_t i = 0; i < p.batch_beams(); ++i)
      if (i % p.num_beams) beam_scores[i] = -1e9f;
  }

  // Scores step `step`'s logits (log-softmax, processors, plus the beams'
  // scores), picks the next beams and extends the sequences.
  void advance(const Tensor& logits, int32_t step) {
    const int32_t rows = p.batch_beams();
    std::vector<float> scores = gen::last_logits(logits, p, "the decoder's");
    gen::log_softmax_rows(scores.data(), scores.data(), rows, p.vocab);
    gen::process_scores(p, seq, scores.data(), rows, step);
    for (int32_t i = 0; i < rows; ++i)
      for (int32_t v = 0; v < p.vocab; ++v) scores[static_cast<size_t>(i) * p.vocab + v] += beam_scores[i];
    if (step_scores) std::copy(scores.begin(), scores.end(), step_scores + (step - 1) * scores.size());
    Candidates c = best_candidates(p, scores);
    scorer.process(seq, c.scores.data(), c.tokens.data(), c.beams.data());
    beam_scores = scorer.next_scores();
    seq.append_reordered(scorer.next_indices().data(), scorer.next_tokens().data());
  }
  const int32_t* tokens() const { return scorer.next_tokens().data(); }
  const int32_t* beam_rows() const { return p.num_beams > 1 ? scorer.next_indices().data() : nullptr; }
};

// Allocates the outputs, runs the search's steps, writes the best sequences.
template <class Steps>
void beam_search(KernelContext& ctx, const SearchParams& p, const std::vector<int32_t>& first_ids, Steps steps) {
  BeamRun run(p, first_ids.data());
  Tensor& sequences = ctx.allocate_output(0, DataType::Int32, {p.batch, p.num_return_sequences, p.max_length});
  if (ctx.wants_output(2)) {
    Tensor& t = ctx.allocate_output(2, DataType::Float,
                                    {p.max_length - p.sequence_length, p.batch, p.num_beams, p.vocab});
    std::fill_n(t.data<float>(), t.numel(), 0.f);  // rows of steps not taken (ORT leaves them unwritten)
    run.step_scores = t.data<float>();
  }
  steps(run);
  float* sequence_scores = nullptr;
  if (ctx.wants_output(1))
    sequence_scores = ctx.allocate_output(1, DataType::Float, {p.batch, p.num_return_sequences}).data<float>();
  run.scorer.finalize(run.seq, run.beam_scores.data(), sequences.data<int32_t>(), sequence_scores);
}

void run_beam_gpt(const Setup& s, KernelContext& ctx, const SearchParams& p) {
  std::vector<int32_t> positions, expanded;
  std::vector<Value> feeds = first_feeds(s, ctx, p, kBeamSlots.attention_mask, positions, expanded);
  beam_search(ctx, p, expanded, [&](BeamRun& run) {
    for (int32_t len = p.sequence_length, step = 1; len < p.max_length; ++step) {
      std::vector<Value> outs = run_graph(ctx, s.step_decoder(step).graph(), feeds);
      run.advance(outs[0].tensor(), step);
      if (run.scorer.all_done() || ++len == p.max_length) break;
      if (step > 1)
        for (auto& x : positions) ++x;
      s.decoder->next_feeds(feeds, outs, run.tokens(), positions.data(), run.beam_rows(), p.batch_beams());
    }
  });
}

// T5 style: the encoder gives the first step's logits (one row per batch item)
// and the decoder's cross-attention states; the decoder runs the later steps.
// Whisper's encoder takes the audio features and the forced decoder ids, which
// begin every beam's sequence.
void run_beam_t5(const Setup& s, KernelContext& ctx, const SearchParams& p) {
  ONYX_KERNEL_CHECK(p.max_length > p.sequence_length + 1,
                    "max_length must be at least " + std::to_string(p.sequence_length + 2) + " for model_type " +
                        std::to_string(p.model_type) + ", got " + std::to_string(p.max_length) +
                        " (ORT runs no decoder step then)");
  std::vector<Value> enc_feeds;
  std::vector<int32_t> start(static_cast<size_t>(p.batch_beams()), p.decoder_start_token_id);
  if (s.t5->whisper()) {
    Tensor ids(DataType::Int32, {p.batch, p.sequence_length});
    if (present(ctx, kBeamSlots.decoder_input_ids)) {
      const Tensor& d = ctx.input(kBeamSlots.decoder_input_ids);
      std::copy(d.data<int32_t>(), d.data<int32_t>() + d.numel(), ids.data<int32_t>());
    } else {
      std::fill_n(ids.data<int32_t>(), ids.numel(), p.decoder_start_token_id);
    }
    // Each beam starts with its batch item's ids.
    start.resize(static_cast<size_t>(p.batch_beams()) * p.sequence_length);
    for (int32_t i = 0; i < p.batch_beams(); ++i)
      std::copy_n(ids.data<int32_t>() + static_cast<size_t>(i / p.num_beams) * p.sequence_length, p.sequence_length,
                  start.begin() + static_cast<size_t>(i) * p.sequence_length);
    enc_feeds = s.t5->whisper_encoder_feeds(ctx.input(0), ids);
  } else {
    const Tensor* mask = present(ctx, kBeamSlots.attention_mask) ? &ctx.input(kBeamSlots.attention_mask) : nullptr;
    enc_feeds = s.t5->encoder_feeds(ctx.input(0), mask, p.pad_token_id, p.decoder_start_token_id);
  }
  std::vector<Value> enc_outs = run_graph(ctx, s.t5->encoder(), enc_feeds);
  beam_search(ctx, p, start, [&](BeamRun& run) {
    // As ORT: the first step (from the encoder's logits) does not stop the search.
    run.advance(enc_outs[0].tensor(), 1);
    std::vector<Value> feeds = s.t5->first_feeds(enc_feeds, enc_outs, run.seq, run.tokens(), p.num_beams);
    enc_outs.clear();
    for (int32_t len = p.sequence_length + 1, step = 2; len < p.max_length; ++step) {
      std::vector<Value> outs = run_graph(ctx, s.t5->decoder(), feeds);
      run.advance(outs[0].tensor(), step);
      if (run.scorer.all_done() || ++len == p.max_length) break;
      s.t5->next_feeds(feeds, outs, run.seq, run.tokens(), run.beam_rows(), p.batch_beams());
    }
  });
}

constexpr int kLogitsProcessorSlot = 11;  // 1: Whisper's timestamp rules (model_type 2); other values unused

template <const InputSlots& Slots>
void run_beam(const Setup& s, KernelContext& ctx) {
  SearchParams p = run_params(ctx, s.params, Slots);
  const double processor = scalar_input(ctx, kLogitsProcessorSlot, "logits_processor", 0, false);
  ONYX_KERNEL_CHECK(processor >= 0, "logits_processor must not be negative");
  // 1 adds Whisper's timestamp rules; ORT ignores other values.
  if (p.model_type == 2 && processor == 1) {
    ONYX_KERNEL_CHECK(p.timestamps.begin > 0 && p.timestamps.begin < p.vocab,
                      "logits_processor 1 needs beginning_timestamp_token_id in (0, " + std::to_string(p.vocab) +
                          "), got " + std::to_string(p.timestamps.begin));
    p.timestamps.on = true;
  }
  if (s.t5)
    run_beam_t5(s, ctx, p);
  else
    run_beam_gpt(s, ctx, p);
}

template <void (*Run)(const Setup&, KernelContext&), Op Kind>
KernelFactory search_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto setup = std::make_shared<const Setup>(ic, attribute_params(ic, Kind));
    return [setup](KernelContext& ctx) { Run(*setup, ctx); };
  });
}

}  // namespace

void register_contrib_generation(KernelRegistry& r) {
  r.add("GreedySearch", 1, kMaxOpset, search_factory<run_greedy, Op::Greedy>(), kMsDomain);
  r.add("BeamSearch", 1, kMaxOpset, search_factory<run_beam<kBeamSlots>, Op::Beam>(), kMsDomain);
  r.add("WhisperBeamSearch", 1, kMaxOpset, search_factory<run_beam<kWhisperSlots>, Op::Whisper>(), kMsDomain);
}

}  // namespace onyx
