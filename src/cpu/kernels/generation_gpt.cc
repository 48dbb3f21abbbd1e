// The decoder-only (GPT-2 style) subgraph of GreedySearch / BeamSearch: its
// checks (ORT's) and the feeds of each run.
#include <algorithm>
#include <cstring>

#include "cpu/kernels/generation.h"

namespace onyx::gen {

std::string dims_of(const TypeInfo& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + (t.shape[i].value >= 0 ? std::to_string(t.shape[i].value) : "?");
  return s + "]";
}

int64_t static_dim(const TypeInfo& t, size_t i) { return i < t.shape.size() ? t.shape[i].value : -1; }

void check_name(const std::vector<ValueInfo>& list, size_t i, const char* want, const std::string& attr,
                const char* what) {
  ONYX_KERNEL_CHECK(list[i].name == want, "the '" + attr + "' subgraph's " + what + " " + std::to_string(i) +
                                              " must be named " + want + ", got '" + list[i].name + "'");
}

void check_type(const ValueInfo& v, DataType want, const std::string& attr) {
  ONYX_KERNEL_CHECK(v.type.elem_type == want, "the '" + attr + "' subgraph's " + v.name + " must be " +
                                                  dtype_name(want) + ", got " + dtype_name(v.type.elem_type));
}

namespace {

Tensor int_column(const int32_t* values, int32_t rows) {
  Tensor t(DataType::Int32, {rows, 1});
  std::copy(values, values + rows, t.data<int32_t>());
  return t;
}

}  // namespace

Tensor pick_rows(const Tensor& t, const int32_t* beam_rows, int axis) {
  Tensor out(t.dtype(), t.shape());
  const int64_t outer = axis == 0 ? 1 : t.dim(0), rows = t.dim(axis);
  const size_t block = static_cast<size_t>(t.numel() / (outer * rows)) * dtype_size(t.dtype());
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < rows; ++j)
      std::memcpy(dst + (o * rows + j) * block, src + (o * rows + beam_rows[j]) * block, block);
  return out;
}

Tensor expand_rows(const Tensor& t, int32_t beams) {
  Shape shape = t.shape();
  const int64_t batch = shape[0];
  shape[0] *= beams;
  Tensor out(t.dtype(), shape);
  const size_t block = batch ? t.nbytes() / static_cast<size_t>(batch) : 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int32_t k = 0; k < beams; ++k)
      std::memcpy(static_cast<char*>(out.raw()) + (b * beams + k) * block,
                  static_cast<const char*>(t.raw()) + b * block, block);
  return out;
}

GptDecoder::GptDecoder(const KernelInitContext& ctx, const std::string& attr) {
  ONYX_KERNEL_CHECK(ctx.has(attr), "the '" + attr + "' subgraph attribute is required");
  const Graph& g = *ctx.get(attr, AttrType::Graph).g;
  const auto& in = g.inputs;
  const auto& out = g.outputs;
  ONYX_KERNEL_CHECK(out.size() >= 2, "the '" + attr + "' subgraph must output logits and present_0.., got " +
                                         std::to_string(out.size()) + " outputs");
  if (in.size() == out.size() + 3 || in.size() == out.size() + 5)
    kernel_fail("the '" + attr + "' subgraph shares its past and present buffers (a past_sequence_length input): "
                "not supported");
  ONYX_KERNEL_CHECK(in.size() == out.size() + 2, "the '" + attr + "' subgraph must have 2 more inputs than outputs "
                                                 "(input_ids, position_ids, attention_mask, past_*; logits, "
                                                 "present_*), got " + std::to_string(in.size()) + " and " +
                                                 std::to_string(out.size()));
  check_name(in, 0, "input_ids", attr, "input");
  check_name(in, 1, "position_ids", attr, "input");
  check_name(in, 2, "attention_mask", attr, "input");
  check_name(in, 3, "past_0", attr, "input");
  check_name(out, 0, "logits", attr, "output");
  check_name(out, 1, "present_0", attr, "output");
  for (size_t i = 0; i < 3; ++i) check_type(in[i], DataType::Int32, attr);
  const TypeInfo& past = in[3].type;
  ONYX_KERNEL_CHECK(past.shape.size() == 5 && static_dim(past, 0) == 2 && static_dim(past, 2) > 0 &&
                        static_dim(past, 4) > 0,
                    "the '" + attr + "' subgraph's past_0 must be [2, batch, heads, past, head_size] with heads and "
                    "head_size known, got " + dims_of(past));
  const TypeInfo& logits = out[0].type;
  ONYX_KERNEL_CHECK(logits.shape.size() == 3 && static_dim(logits, 2) > 0,
                    "the '" + attr + "' subgraph's logits must be [batch, sequence, vocab] with vocab known, got " +
                        dims_of(logits));
  if (logits.elem_type == DataType::Float16)
    kernel_fail("the '" + attr + "' subgraph's logits are float16: ORT's CPU provider runs float only");
  check_type(out[0], DataType::Float, attr);
  check_type(in[3], DataType::Float, attr);
  check_type(out[1], DataType::Float, attr);
  heads_ = static_dim(past, 2);
  head_size_ = static_dim(past, 4);
  vocab_ = static_dim(logits, 2);
  num_past_ = in.size() - 3;
  graph_ = ctx.subgraph(attr);
}

std::vector<Value> GptDecoder::first_feeds(const Tensor& input_ids, const Tensor* attention_mask, int32_t beams,
                                           int32_t pad_token_id, std::vector<int32_t>& sequence_lengths,
                                           std::vector<int32_t>& expanded_ids) const {
  const int64_t batch = input_ids.dim(0), len = input_ids.dim(1), rows = batch * beams;
  const int32_t* ids = input_ids.data<int32_t>();
  Tensor ids_t(DataType::Int32, {rows, len}), pos_t(DataType::Int32, {rows, len}), mask_t(DataType::Int32, {rows, len});
  sequence_lengths.assign(static_cast<size_t>(rows), 0);
  for (int64_t b = 0; b < batch; ++b) {
    // Positions count the non-pad tokens (pads get 0); the mask, when not given, is 0 on pads.
    std::vector<int32_t> pos(static_cast<size_t>(len)), mask(static_cast<size_t>(len));
    int32_t count = 0;
    for (int64_t j = 0; j < len; ++j) {
      const bool pad = ids[b * len + j] == pad_token_id;
      pos[j] = pad ? 0 : count++;
      mask[j] = attention_mask ? attention_mask->data<int32_t>()[b * len + j] : !pad;
    }
    for (int32_t k = 0; k < beams; ++k) {
      const int64_t r = b * beams + k;
      sequence_lengths[r] = count;
      std::copy(ids + b * len, ids + (b + 1) * len, ids_t.data<int32_t>() + r * len);
      std::copy(pos.begin(), pos.end(), pos_t.data<int32_t>() + r * len);
      std::copy(mask.begin(), mask.end(), mask_t.data<int32_t>() + r * len);
    }
  }
  expanded_ids.assign(ids_t.data<int32_t>(), ids_t.data<int32_t>() + rows * len);
  std::vector<Value> feeds{Value(ids_t), Value(pos_t), Value(mask_t)};
  Tensor empty_past(DataType::Float, {2, rows, heads_, 0, head_size_});
  for (size_t i = 0; i < num_past_; ++i) feeds.push_back(Value(empty_past));
  return feeds;
}

void GptDecoder::next_feeds(std::vector<Value>& feeds, std::vector<Value>& outputs, const int32_t* tokens,
                            const int32_t* positions, const int32_t* beam_rows, int32_t rows) const {
  feeds[0] = Value(int_column(tokens, rows));
  feeds[1] = Value(int_column(positions, rows));
  const Tensor& old_mask = feeds[2].tensor();
  const int64_t old_len = old_mask.dim(1);
  Tensor mask(DataType::Int32, {rows, old_len + 1});
  for (int32_t i = 0; i < rows; ++i) {
    std::copy(old_mask.data<int32_t>() + i * old_len, old_mask.data<int32_t>() + (i + 1) * old_len,
              mask.data<int32_t>() + i * (old_len + 1));
    mask.data<int32_t>()[i * (old_len + 1) + old_len] = 1;
  }
  feeds[2] = Value(mask);
  for (size_t i = 0; i < num_past_; ++i) {
    Value& present = outputs[1 + i];
    ONYX_KERNEL_CHECK(present.is_tensor() && present.tensor().rank() == 5 && present.tensor().dim(0) == 2 &&
                          present.tensor().dim(1) == rows,
                      "the decoder's present_" + std::to_string(i) + " must be [2, " + std::to_string(rows) +
                          ", heads, length, head_size], got " +
                          (present.is_tensor() ? shape_to_string(present.tensor().shape()) : std::string("no tensor")));
    feeds[3 + i] = beam_rows ? Value(pick_rows(present.tensor(), beam_rows, 1)) : std::move(present);
  }
}

std::vector<float> last_logits(const Tensor& logits, const SearchParams& p, const std::string& who) {
  const int64_t rows = p.batch_beams();
  ONYX_KERNEL_CHECK(logits.dtype() == DataType::Float, who + " logits must be float, got " +
                                                           dtype_name(logits.dtype()));
  ONYX_KERNEL_CHECK(logits.rank() == 3 && (logits.dim(0) == rows || logits.dim(0) == p.batch) &&
                        logits.dim(1) >= 1 && logits.dim(2) == p.vocab,
                    who + " logits must be [" + std::to_string(rows) + ", sequence, " + std::to_string(p.vocab) +
                        "], got " + shape_to_string(logits.shape()));
  const int64_t len = logits.dim(1), vocab = p.vocab, per = logits.dim(0) == rows ? 1 : p.num_beams;
  std::vector<float> out(static_cast<size_t>(rows * vocab));
  for (int64_t i = 0; i < rows; ++i) {
    const float* src = logits.data<float>() + ((i / per) * len + len - 1) * vocab;
    std::copy(src, src + vocab, out.begin() + i * vocab);
  }
  return out;
}

}  // namespace onyx::gen
