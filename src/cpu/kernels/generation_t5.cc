// The encoder-decoder subgraphs of BeamSearch, T5 style (model_type 1) and
// Whisper's (model_type 2, WhisperBeamSearch): their checks (ORT's) and the
// feeds of each run.
#include <algorithm>

#include "cpu/kernels/generation.h"

namespace onyx::gen {

namespace {

// Both encoders' outputs: logits, encoder_hidden_states and 4 present states per layer.
void check_encoder_output_names(const std::vector<ValueInfo>& out) {
  ONYX_KERNEL_CHECK(out.size() >= 6 && (out.size() - 2) % 4 == 0,
                    "the 'encoder' subgraph must output logits, encoder_hidden_states and 4 present states per "
                    "layer, got " + std::to_string(out.size()) + " outputs");
  check_name(out, 0, "logits", "encoder", "output");
  check_name(out, 1, "encoder_hidden_states", "encoder", "output");
  check_name(out, 2, "present_key_self_0", "encoder", "output");
  check_name(out, 3, "present_value_self_0", "encoder", "output");
}

void check_encoder(const Graph& g) {
  const auto& in = g.inputs;
  const auto& out = g.outputs;
  ONYX_KERNEL_CHECK(in.size() == 3, "the 'encoder' subgraph must have 3 inputs (encoder_input_ids, "
                                    "encoder_attention_mask, decoder_input_ids), got " + std::to_string(in.size()));
  check_name(in, 0, "encoder_input_ids", "encoder", "input");
  check_name(in, 1, "encoder_attention_mask", "encoder", "input");
  check_name(in, 2, "decoder_input_ids", "encoder", "input");
  check_encoder_output_names(out);
  for (size_t i = 0; i < 3; ++i) check_type(in[i], DataType::Int32, "encoder");
  if (out[0].type.elem_type == DataType::Float16)
    kernel_fail("the 'encoder' subgraph's logits are float16: ORT's CPU provider runs float only");
  for (const auto& o : out) check_type(o, DataType::Float, "encoder");
}

// Whisper's encoder: the features and the forced decoder ids in; logits, hidden
// states and 4 present states per layer out.
void check_whisper_encoder(const Graph& g) {
  const auto& in = g.inputs;
  const auto& out = g.outputs;
  ONYX_KERNEL_CHECK(in.size() == 2, "the 'encoder' subgraph must have 2 inputs (encoder_input_ids, "
                                    "decoder_input_ids), got " + std::to_string(in.size()));
  check_name(in, 0, "encoder_input_ids", "encoder", "input");
  check_name(in, 1, "decoder_input_ids", "encoder", "input");
  check_encoder_output_names(out);
  if (in[0].type.elem_type == DataType::Float16 || out[0].type.elem_type == DataType::Float16)
    kernel_fail("the 'encoder' subgraph is float16: Onyx runs Whisper's float subgraphs only");
  check_type(in[0], DataType::Float, "encoder");
  check_type(in[1], DataType::Int32, "encoder");
  for (const auto& o : out) check_type(o, DataType::Float, "encoder");
}

}  // namespace

T5Decoder::T5Decoder(const KernelInitContext& ctx, bool whisper) : mask_inputs_(whisper ? 0 : 1) {
  ONYX_KERNEL_CHECK(ctx.has("encoder"), std::string(whisper ? "Whisper" : "model_type 1") +
                                            " needs the 'encoder' subgraph attribute");
  ONYX_KERNEL_CHECK(ctx.has("decoder"), "the 'decoder' subgraph attribute is required");
  const Graph& enc = *ctx.get("encoder", AttrType::Graph).g;
  const Graph& dec = *ctx.get("decoder", AttrType::Graph).g;
  if (whisper)
    check_whisper_encoder(enc);
  else
    check_encoder(enc);
  const auto& in = dec.inputs;
  const auto& out = dec.outputs;
  ONYX_KERNEL_CHECK(in.size() >= 2 + mask_inputs_,
                    "the 'decoder' subgraph has " + std::to_string(in.size()) + " inputs");
  hidden_input_ = in[1 + mask_inputs_].name == "encoder_hidden_states";
  first_past_ = 1 + mask_inputs_ + (hidden_input_ ? 1 : 0);
  ONYX_KERNEL_CHECK(out.size() >= 3 && (out.size() - 1) % 2 == 0,
                    "the 'decoder' subgraph must output logits and 2 present states per layer, got " +
                        std::to_string(out.size()) + " outputs");
  layers_ = (out.size() - 1) / 2;
  if (in.size() == first_past_ + 4 * layers_ + 1 || in.size() == first_past_ + 4 * layers_ + 3)
    kernel_fail("the 'decoder' subgraph shares its past and present buffers (a past_sequence_length input): "
                "not supported");
  ONYX_KERNEL_CHECK(in.size() == first_past_ + 4 * layers_,
                    "the 'decoder' subgraph must have " + std::to_string(first_past_ + 4 * layers_) + " inputs (" +
                        (whisper ? "input_ids" : "input_ids, encoder_attention_mask") +
                        ", [encoder_hidden_states], 4 past states per layer), got " + std::to_string(in.size()));
  ONYX_KERNEL_CHECK(enc.outputs.size() - 2 == 4 * layers_,
                    "the encoder gives " + std::to_string(enc.outputs.size() - 2) +
                        " present states, the decoder takes " + std::to_string(4 * layers_));
  check_name(in, 0, "input_ids", "decoder", "input");
  if (!whisper) check_name(in, 1, "encoder_attention_mask", "decoder", "input");
  check_name(out, 0, "logits", "decoder", "output");
  check_type(in[0], DataType::Int32, "decoder");
  if (!whisper) check_type(in[1], DataType::Int32, "decoder");
  if (out[0].type.elem_type == DataType::Float16)
    kernel_fail(std::string("the 'decoder' subgraph's logits are float16: ") +
                (whisper ? "Onyx runs Whisper's float subgraphs only" : "ORT's CPU provider runs float only"));
  for (size_t i = 1 + mask_inputs_; i < in.size(); ++i) check_type(in[i], DataType::Float, "decoder");
  for (const auto& o : out) check_type(o, DataType::Float, "decoder");
  const TypeInfo& logits = out[0].type;
  ONYX_KERNEL_CHECK(logits.shape.size() == 3 && static_dim(logits, 2) > 0,
                    "the 'decoder' subgraph's logits must be [batch, sequence, vocab] with vocab known, got " +
                        dims_of(logits));
  const TypeInfo& present = out[1].type;
  ONYX_KERNEL_CHECK(present.shape.size() == 4 && static_dim(present, 1) > 0 && static_dim(present, 3) > 0,
                    "the 'decoder' subgraph's " + out[1].name + " must be [batch, heads, length, head_size] with "
                    "heads and head_size known, got " + dims_of(present));
  vocab_ = static_dim(logits, 2);
  whole_sequence_ = !(in[0].type.shape.size() == 2 && static_dim(in[0].type, 1) == 1);
  encoder_ = ctx.subgraph("encoder");
  decoder_ = ctx.subgraph("decoder");
}

std::vector<Value> T5Decoder::encoder_feeds(const Tensor& input_ids, const Tensor* attention_mask,
                                            int32_t pad_token_id, int32_t start_token_id) const {
  const int64_t batch = input_ids.dim(0), len = input_ids.dim(1);
  Tensor mask(DataType::Int32, input_ids.shape());
  if (attention_mask) {
    std::copy(attention_mask->data<int32_t>(), attention_mask->data<int32_t>() + batch * len, mask.data<int32_t>());
  } else {
    // Only leading pads are masked: a T5 tokenizer may end a prompt with EOS = pad.
    for (int64_t b = 0; b < batch; ++b) {
      bool leading = true;
      for (int64_t j = 0; j < len; ++j) {
        leading = leading && input_ids.data<int32_t>()[b * len + j] == pad_token_id;
        mask.data<int32_t>()[b * len + j] = leading ? 0 : 1;
      }
    }
  }
  Tensor start(DataType::Int32, {batch, 1});
  std::fill_n(start.data<int32_t>(), batch, start_token_id);
  return {Value(input_ids), Value(mask), Value(start)};
}

std::vector<Value> T5Decoder::whisper_encoder_feeds(const Tensor& features, const Tensor& decoder_ids) const {
  return {Value(features), Value(decoder_ids)};
}

Value T5Decoder::input_ids(const Sequences& seq, const int32_t* tokens, int32_t rows) const {
  const int32_t len = whole_sequence_ ? seq.length() : 1;
  Tensor ids(DataType::Int32, {rows, len});
  for (int32_t i = 0; i < rows; ++i) {
    if (whole_sequence_)
      std::copy(seq.row(i), seq.row(i) + len, ids.data<int32_t>() + static_cast<size_t>(i) * len);
    else
      ids.data<int32_t>()[i] = tokens[i];
  }
  return Value(ids);
}

std::vector<Value> T5Decoder::first_feeds(const std::vector<Value>& enc_feeds, const std::vector<Value>& enc_outputs,
                                          const Sequences& seq, const int32_t* tokens, int32_t beams) const {
  const int32_t rows = static_cast<int32_t>(enc_feeds[0].tensor().dim(0)) * beams;
  std::vector<Value> feeds{input_ids(seq, tokens, rows)};
  if (mask_inputs_) feeds.push_back(Value(expand_rows(enc_feeds[1].tensor(), beams)));
  // With encoder_hidden_states among its inputs the decoder takes encoder outputs 1.., else 2..
  for (size_t j = hidden_input_ ? 1 : 2; j < enc_outputs.size(); ++j) {
    ONYX_KERNEL_CHECK(enc_outputs[j].is_tensor(), "the encoder's output " + std::to_string(j) + " is not a tensor");
    feeds.push_back(Value(expand_rows(enc_outputs[j].tensor(), beams)));
  }
  return feeds;
}

void T5Decoder::next_feeds(std::vector<Value>& feeds, std::vector<Value>& outputs, const Sequences& seq,
                           const int32_t* tokens, const int32_t* beam_rows, int32_t rows) const {
  feeds[0] = input_ids(seq, tokens, rows);
  // Only the self-attention states change; the cross-attention pasts stay the encoder's.
  for (size_t i = 0; i < 2 * layers_; ++i) {
    Value& present = outputs[1 + i];
    ONYX_KERNEL_CHECK(present.is_tensor() && present.tensor().rank() == 4 && present.tensor().dim(0) == rows,
                      "the decoder's present state " + std::to_string(i) + " must be [" + std::to_string(rows) +
                          ", heads, length, head_size], got " +
                          (present.is_tensor() ? shape_to_string(present.tensor().shape()) : std::string("no tensor")));
    feeds[first_past_ + i] = beam_rows ? Value(pick_rows(present.tensor(), beam_rows, 0)) : std::move(present);
  }
}

}  // namespace onyx::gen
