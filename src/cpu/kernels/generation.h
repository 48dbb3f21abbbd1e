// ONNX Runtime's generation ops (com.microsoft GreedySearch, BeamSearch) on the
// CPU: the pieces the kernels in contrib_generation.cc put together. They
// follow ORT's CPU implementation step by step, so that the tokens chosen (and
// the scores reported) are ORT's: scores are processed in ORT's order, top-k
// breaks ties toward the lower index, and the beam scorer keeps hypotheses as
// ORT's does (including which scores it compares to decide that a batch item is
// done).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace onyx::gen {

// The search as attributes and inputs set it.
struct SearchParams {
  // attributes
  int64_t model_type = 0;  // 0: decoder only (GPT-2), 1: encoder-decoder (T5), 2: Whisper
  int32_t eos_token_id = -1, pad_token_id = -1, decoder_start_token_id = -1;
  int32_t no_repeat_ngram_size = 0;
  bool early_stopping = false;
  int64_t vocab_attr = -1;  // the vocab_size attribute, -1 or 0 when absent
  // inputs
  int32_t batch = 0, sequence_length = 0, max_length = 0, min_length = 0;
  int32_t num_beams = 1, num_return_sequences = 1;
  float length_penalty = 1.f, repetition_penalty = 1.f;
  float temperature = 1.f;                     // WhisperBeamSearch's; divides the scores when positive
  // Whisper's timestamp rules (logits_processor 1): the token ids of its attributes.
  struct Timestamps {
    bool on = false;
    int32_t begin = -1, no_timestamps = -1, start_of_lm = -1, start = -1, translate = -1, transcribe = -1;
  } timestamps;
  const int32_t* vocab_mask = nullptr;         // [vocab]
  const int32_t* prefix_vocab_mask = nullptr;  // [batch, vocab]
  int32_t vocab = 0;                           // the decoder's logits width
  int32_t batch_beams() const { return batch * num_beams; }
};

// The token ids of every beam so far, [batch * beams, max_length], of which the
// first `length()` columns are filled.
class Sequences {
 public:
  Sequences(int32_t rows, int32_t max_length, int32_t length, const int32_t* first);
  int32_t length() const { return length_; }
  const int32_t* row(int32_t i) const { return cur_.data() + static_cast<size_t>(i) * max_length_; }
  // Appends token[i] to row i.
  void append(const int32_t* tokens);
  // Row i becomes row source[i] of before, with token[i] appended.
  void append_reordered(const int32_t* source, const int32_t* tokens);

 private:
  int32_t rows_, max_length_, length_;
  std::vector<int32_t> cur_, next_;
};

// next-token scores [rows, vocab] in place, through ORT's logits processors in
// its order: repetition penalty, no-repeat n-grams, vocab mask, prefix vocab
// mask (first step only), min length, temperature. `rows` = batch * beams; step
// counts from 1.
void process_scores(const SearchParams& p, const Sequences& seq, float* scores, int32_t rows, int32_t step);

// out = log(softmax(in)) over each of `rows` rows of n (out may be in).
void log_softmax_rows(const float* in, float* out, int64_t rows, int64_t n);

// The index of the first largest of n values.
int32_t argmax(const float* x, int64_t n);

// The k largest of n values in descending order, equal values by lower index first.
void top_k(const float* x, int64_t n, int64_t k, float* values, int64_t* indices);

// Finished hypotheses per batch item and the choice of the next beams, as ORT's
// BeamSearchScorer.
class BeamScorer {
 public:
  explicit BeamScorer(const SearchParams& p);
  // From the 2 * beams best (score, token, beam) candidates of each batch item
  // (scores descending), picks the next beams and closes hypotheses at EOS.
  void process(const Sequences& seq, const float* scores, const int32_t* tokens, const int32_t* beams);
  bool all_done() const { return not_done_ == 0; }
  const std::vector<float>& next_scores() const { return next_scores_; }
  const std::vector<int32_t>& next_tokens() const { return next_tokens_; }
  const std::vector<int32_t>& next_indices() const { return next_indices_; }  // rows of batch * beams
  // Adds the open beams as hypotheses and writes the num_return_sequences best
  // of each batch item: sequences [batch, R, max_length] (pad-filled) and,
  // when not null, their scores [batch, R].
  void finalize(const Sequences& seq, const float* final_scores, int32_t* sequences, float* sequence_scores);

 private:
  struct Hypothesis {
    std::vector<int32_t> tokens;
    float score = 0;
  };
  struct Item {
    std::vector<Hypothesis> best;  // descending by score, at most beams
    bool done = false;
  };
  void add(Item& item, const int32_t* tokens, int32_t length, float sum_logprobs) const;
  bool can_improve(const Item& item, float best_sum_logprobs, int32_t length) const;

  const SearchParams& p_;
  std::vector<Item> items_;
  int32_t not_done_;
  std::vector<float> next_scores_;
  std::vector<int32_t> next_tokens_, next_indices_;
};

// A decoder-only (GPT-2 style) subgraph: inputs input_ids, position_ids,
// attention_mask, past_0..; outputs logits, present_0.. (past and present
// [2, batch * beams, heads, length, head_size]).
class GptDecoder {
 public:
  // Checks the subgraph held by attribute `attr` of the node, ORT's rules.
  GptDecoder(const KernelInitContext& ctx, const std::string& attr);
  int64_t vocab() const { return vocab_; }
  size_t layers() const { return num_past_; }
  const CompiledGraph& graph() const { return *graph_; }
  // The first run's feeds: input_ids, position_ids and attention_mask of
  // [batch, S] repeated per beam, empty past states. Sets sequence_lengths
  // (non-pad tokens per row, batch * beams) and the expanded ids.
  std::vector<Value> first_feeds(const Tensor& input_ids, const Tensor* attention_mask, int32_t beams,
                                 int32_t pad_token_id, std::vector<int32_t>& sequence_lengths,
                                 std::vector<int32_t>& expanded_ids) const;
  // The next run's feeds from the last outputs: the chosen tokens as input_ids
  // [rows, 1], the positions, the mask one column longer, each present picked
  // by `beam_rows` (null: row i keeps row i) as the next past.
  void next_feeds(std::vector<Value>& feeds, std::vector<Value>& outputs, const int32_t* tokens,
                  const int32_t* positions, const int32_t* beam_rows, int32_t rows) const;

 private:
  std::shared_ptr<const CompiledGraph> graph_;
  int64_t heads_ = 0, head_size_ = 0, vocab_ = 0;
  size_t num_past_ = 0;
};

// An encoder-decoder (T5 style) pair of subgraphs. The encoder (inputs
// encoder_input_ids, encoder_attention_mask, decoder_input_ids; outputs logits,
// encoder_hidden_states, present_{key,value}_self_* then present_{key,value}_cross_*)
// runs once on the batch and gives the first step's logits; the decoder
// (inputs input_ids, encoder_attention_mask, [encoder_hidden_states], past_*
// in the encoder's output order; outputs logits, present_{key,value}_self_*)
// runs each later step on batch * beams rows.
// Whisper's pair (model_type 2) is the same without the attention masks: its
// encoder takes the audio features (encoder_input_ids, float [batch, features,
// frames]) and the decoder's forced ids (decoder_input_ids [batch, n]), whose
// last position's logits give the first step.
class T5Decoder {
 public:
  T5Decoder(const KernelInitContext& ctx, bool whisper);
  bool whisper() const { return mask_inputs_ == 0; }
  int64_t vocab() const { return vocab_; }
  const CompiledGraph& encoder() const { return *encoder_; }
  const CompiledGraph& decoder() const { return *decoder_; }
  // The encoder's feeds: the ids, the mask (given, or 0 on leading pads) and
  // the start token per batch item.
  std::vector<Value> encoder_feeds(const Tensor& input_ids, const Tensor* attention_mask, int32_t pad_token_id,
                                   int32_t start_token_id) const;
  // Whisper's encoder feeds: the features and the decoder's first ids [batch, n].
  std::vector<Value> whisper_encoder_feeds(const Tensor& features, const Tensor& decoder_ids) const;
  // The decoder's first feeds: the tokens chosen from the encoder's logits (or
  // the whole sequences), the mask, hidden states and past states expanded per beam.
  std::vector<Value> first_feeds(const std::vector<Value>& enc_feeds, const std::vector<Value>& enc_outputs,
                                 const Sequences& seq, const int32_t* tokens, int32_t beams) const;
  // The next feeds: tokens (or sequences), self-attention presents picked by
  // `beam_rows` (null: kept in place) as the next pasts.
  void next_feeds(std::vector<Value>& feeds, std::vector<Value>& outputs, const Sequences& seq,
                  const int32_t* tokens, const int32_t* beam_rows, int32_t rows) const;

 private:
  Value input_ids(const Sequences& seq, const int32_t* tokens, int32_t rows) const;
  std::shared_ptr<const CompiledGraph> encoder_, decoder_;
  int64_t vocab_ = 0;
  size_t mask_inputs_ = 1;   // the decoder's encoder_attention_mask input (none in Whisper's)
  bool hidden_input_ = true;  // the decoder takes encoder_hidden_states
  size_t first_past_ = 3, layers_ = 0;
  bool whole_sequence_ = true;  // the decoder's input_ids are [rows, length], not [rows, 1]
};

// Checks of a subgraph's declared inputs and outputs, naming its attribute.
std::string dims_of(const TypeInfo& t);                // "[2, ?, 4]"
int64_t static_dim(const TypeInfo& t, size_t i);       // -1 when unknown
void check_name(const std::vector<ValueInfo>& list, size_t i, const char* want, const std::string& attr,
                const char* what);
void check_type(const ValueInfo& v, DataType want, const std::string& attr);

// Rows of a tensor [rows, ...] picked by `beam_rows` (rows along `axis` 0 or 1).
Tensor pick_rows(const Tensor& t, const int32_t* beam_rows, int axis);

// A tensor [batch, ...] with each item repeated `beams` times: [batch * beams, ...].
Tensor expand_rows(const Tensor& t, int32_t beams);

// The logits of the last position of each row of a decoder's logits output
// [rows or batch, S, vocab], as [batch * beams, vocab] floats (ORT lets a
// decoder return one row per batch item, shared by its beams).
std::vector<float> last_logits(const Tensor& logits, const SearchParams& p, const std::string& who);

}  // namespace onyx::gen
