// Next-token scores of the generation ops: ORT's logits processors, log-softmax,
// arg-max and top-k, and the Sequences the processors read.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "cpu/kernels/generation.h"

namespace onyx::gen {

Sequences::Sequences(int32_t rows, int32_t max_length, int32_t length, const int32_t* first)
    : rows_(rows), max_length_(max_length), length_(length),
      cur_(static_cast<size_t>(rows) * max_length, 0), next_(cur_.size(), 0) {
  for (int32_t i = 0; i < rows; ++i)
    std::copy(first + static_cast<size_t>(i) * length, first + static_cast<size_t>(i + 1) * length,
              cur_.begin() + static_cast<size_t>(i) * max_length);
}

void Sequences::append(const int32_t* tokens) {
  for (int32_t i = 0; i < rows_; ++i) cur_[static_cast<size_t>(i) * max_length_ + length_] = tokens[i];
  ++length_;
}

void Sequences::append_reordered(const int32_t* source, const int32_t* tokens) {
  for (int32_t i = 0; i < rows_; ++i) {
    const int32_t* from = row(source[i]);
    int32_t* to = next_.data() + static_cast<size_t>(i) * max_length_;
    std::copy(from, from + length_, to);
    to[length_] = tokens[i];
  }
  cur_.swap(next_);
  ++length_;
}

namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();

// Every token seen in a row (prompt included) has its score divided by the
// penalty when positive, multiplied when negative.
void repetition_penalty(float penalty, const Sequences& seq, float* scores, int32_t rows, int32_t vocab) {
  std::vector<char> seen(static_cast<size_t>(vocab));
  for (int32_t i = 0; i < rows; ++i) {
    std::fill(seen.begin(), seen.end(), 0);
    float* s = scores + static_cast<size_t>(i) * vocab;
    const int32_t* tokens = seq.row(i);
    for (int32_t j = 0; j < seq.length(); ++j) {
      const int32_t t = tokens[j];
      if (t < 0 || t >= vocab || seen[t]) continue;
      seen[t] = 1;
      s[t] = s[t] < 0 ? s[t] * penalty : s[t] / penalty;
    }
  }
}

// Bans every token that would complete an n-gram already in the row.
void no_repeat_ngram(int32_t n, const Sequences& seq, float* scores, int32_t rows, int32_t vocab) {
  const int32_t len = seq.length();
  if (n == 0 || n > len) return;
  const int32_t prefix = n - 1;
  for (int32_t i = 0; i < rows; ++i) {
    float* s = scores + static_cast<size_t>(i) * vocab;
    const int32_t* tokens = seq.row(i);
    const int32_t* tail = tokens + len - prefix;
    for (int32_t j = 0; j + n <= len; ++j) {
      if (!std::equal(tail, tail + prefix, tokens + j)) continue;
      const int32_t t = tokens[j + prefix];
      if (t >= 0 && t < vocab) s[t] = kLowest;
    }
  }
}

void mask_tokens(const int32_t* mask, float* scores, int32_t vocab) {
  for (int32_t k = 0; k < vocab; ++k)
    if (mask[k] == 0) scores[k] = kLowest;
}

// Whisper's timestamp rules on one row, as ORT's TimestampLogitsProcessor: the
// control tokens are banned, timestamps come in pairs and never decrease, the
// first is at most 50 steps in, and when the timestamps together are likelier
// than the best text token only a timestamp may follow.
void timestamp_rules(const SearchParams& p, const int32_t* tokens, int32_t len, float* s) {
  const auto& t = p.timestamps;
  const int32_t vocab = p.vocab, begin = t.begin;
  constexpr int32_t kMaxInitialTimestamp = 50;
  // One past the first timestamp, or the whole length when there is none.
  int32_t sample_begin = 0;
  for (int32_t j = 0; j < len; ++j) {
    ++sample_begin;
    if (tokens[j] >= begin) break;
  }
  auto ban = [&](int32_t k) {
    if (k >= 0 && k < vocab) s[k] = kLowest;
  };
  ban(t.no_timestamps);
  ban(t.start_of_lm);
  if (len > sample_begin) {
    ban(t.start);
    ban(t.translate);
    ban(t.transcribe);
  }
  const bool last_was_timestamp = len > 0 && tokens[len - 1] >= begin;
  const bool penultimate_was_timestamp = len <= sample_begin || tokens[len - 2] >= begin;
  if (last_was_timestamp) {
    if (penultimate_was_timestamp)  // a pair (or the first) ends: text follows
      for (int32_t k = begin; k < vocab; ++k) s[k] = kLowest;
    else  // an open timestamp: its pair follows
      for (int32_t k = 0; k < p.eos_token_id && k < vocab; ++k) s[k] = kLowest;
  }
  int32_t last_timestamp = -1;
  for (int32_t j = 0; j < len; ++j)
    if (tokens[j] >= begin) last_timestamp = tokens[j];
  if (last_timestamp >= 0) {
    // An open timestamp's pair may repeat it; after a pair the next one must be later.
    const int32_t lowest_allowed =
        last_was_timestamp && !penultimate_was_timestamp ? last_timestamp : last_timestamp + 1;
    for (int32_t k = begin; k < lowest_allowed && k < vocab; ++k) s[k] = kLowest;
  }
  if (len == sample_begin)
    for (int32_t k = begin + kMaxInitialTimestamp + 1; k < vocab; ++k) s[k] = kLowest;
  // log(sum(exp)) over the timestamps still allowed, against the best text token.
  float timestamp_logprob = kLowest;
  const float top = *std::max_element(s + begin, s + vocab);
  float sum = 0.f;
  for (int32_t k = begin; k < vocab; ++k)
    if (s[k] > kLowest) sum += std::exp(s[k] - top);
  if (sum > 0.f) timestamp_logprob = std::log(sum) + top;
  if (timestamp_logprob > *std::max_element(s, s + begin))
    for (int32_t k = 0; k < begin; ++k) s[k] = kLowest;
}

}  // namespace

void process_scores(const SearchParams& p, const Sequences& seq, float* scores, int32_t rows, int32_t step) {
  const int32_t vocab = p.vocab;
  if (p.repetition_penalty != 1.f) repetition_penalty(p.repetition_penalty, seq, scores, rows, vocab);
  if (p.no_repeat_ngram_size > 0) no_repeat_ngram(p.no_repeat_ngram_size, seq, scores, rows, vocab);
  if (p.vocab_mask)
    for (int32_t i = 0; i < rows; ++i) mask_tokens(p.vocab_mask, scores + static_cast<size_t>(i) * vocab, vocab);
  if (p.prefix_vocab_mask && step <= 1) {
    const int32_t beams = rows / p.batch;
    for (int32_t i = 0; i < rows; ++i)
      mask_tokens(p.prefix_vocab_mask + static_cast<size_t>(i / beams) * vocab, scores + static_cast<size_t>(i) * vocab,
                  vocab);
  }
  // ORT's min-length processor bans EOS while the sequence (prompt included) is shorter.
  if (p.min_length > 0 && seq.length() < p.min_length && p.eos_token_id >= 0 && p.eos_token_id < vocab)
    for (int32_t i = 0; i < rows; ++i) scores[static_cast<size_t>(i) * vocab + p.eos_token_id] = kLowest;
  // ORT scales by a positive temperature only (its processor is left out otherwise).
  if (p.temperature > 0.f && p.temperature != 1.f)
    for (size_t i = 0; i < static_cast<size_t>(rows) * vocab; ++i) scores[i] /= p.temperature;
  if (p.timestamps.on)
    for (int32_t i = 0; i < rows; ++i)
      timestamp_rules(p, seq.row(i), seq.length(), scores + static_cast<size_t>(i) * vocab);
}

void log_softmax_rows(const float* in, float* out, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = in + r * n;
    float* y = out + r * n;
    const float max = *std::max_element(x, x + n);
    float sum = 0.f;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
    const float log_sum = std::log(sum);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - max - log_sum;
  }
}

int32_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return static_cast<int32_t>(best);
}

void top_k(const float* x, int64_t n, int64_t k, float* values, int64_t* indices) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  auto before = [x](int64_t a, int64_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };
  std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
  for (int64_t i = 0; i < k; ++i) {
    indices[i] = order[i];
    values[i] = x[order[i]];
  }
}

}  // namespace onyx::gen
