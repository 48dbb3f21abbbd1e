// BeamSearch's scorer: which candidates continue as beams, which end as
// hypotheses (at EOS), and when a batch item is done, as ORT's
// BeamSearchScorer decides them.
#include <algorithm>
#include <cmath>

#include "cpu/kernels/generation.h"

namespace onyx::gen {

BeamScorer::BeamScorer(const SearchParams& p)
    : p_(p), items_(static_cast<size_t>(p.batch)), not_done_(p.batch),
      next_scores_(static_cast<size_t>(p.batch_beams()), 0.f), next_tokens_(next_scores_.size(), 0),
      next_indices_(next_scores_.size(), 0) {}

// A hypothesis scores sum_logprobs / length^length_penalty (powf, as ORT);
// the best `beams` are kept, a later one entering only when strictly better
// than the worst and placed after those it does not beat.
void BeamScorer::add(Item& item, const int32_t* tokens, int32_t length, float sum_logprobs) const {
  const float score = sum_logprobs / std::pow(static_cast<float>(length), p_.length_penalty);
  auto& best = item.best;
  if (best.size() == static_cast<size_t>(p_.num_beams)) {
    if (score <= best.back().score) return;
    best.pop_back();
  }
  size_t at = best.size();
  while (at > 0 && score > best[at - 1].score) --at;
  best.insert(best.begin() + static_cast<std::ptrdiff_t>(at), Hypothesis{{tokens, tokens + length}, score});
}

bool BeamScorer::can_improve(const Item& item, float best_sum_logprobs, int32_t length) const {
  const float current = best_sum_logprobs / std::pow(static_cast<float>(length), p_.length_penalty);
  return item.best.back().score < current;
}

void BeamScorer::process(const Sequences& seq, const float* scores, const int32_t* tokens, const int32_t* beams) {
  const int32_t m = p_.num_beams, top = 2 * m;
  for (int32_t b = 0; b < p_.batch; ++b) {
    Item& item = items_[static_cast<size_t>(b)];
    const size_t out = static_cast<size_t>(b) * m;
    if (item.done) {  // a finished item's beams are padding
      std::fill_n(next_scores_.begin() + out, m, 0.f);
      std::fill_n(next_tokens_.begin() + out, m, p_.pad_token_id);
      std::fill_n(next_indices_.begin() + out, m, 0);
      continue;
    }
    int32_t beam = 0;
    for (int32_t j = 0; j < top && beam < m; ++j) {
      const size_t c = static_cast<size_t>(b) * top + j;
      const int32_t row = b * m + beams[c];
      if (p_.eos_token_id >= 0 && tokens[c] == p_.eos_token_id) {
        if (j < m) add(item, seq.row(row), seq.length(), scores[c]);  // EOS below the top `beams`: dropped
        continue;
      }
      next_scores_[out + beam] = scores[c];
      next_tokens_[out + beam] = tokens[c];
      next_indices_[out + beam] = row;
      ++beam;
    }
    if (item.best.size() < static_cast<size_t>(m)) continue;
    if (!p_.early_stopping) {
      // ORT takes the best of candidates [b * beams, b * beams + 2 * beams) of the
      // flat [batch, 2 * beams] list (not item b's own for b > 0); kept so that
      // the search stops when ORT's does.
      const float* from = scores + static_cast<size_t>(b) * m;
      if (can_improve(item, *std::max_element(from, from + top), seq.length())) continue;
    }
    item.done = true;
    --not_done_;
  }
}

void BeamScorer::finalize(const Sequences& seq, const float* final_scores, int32_t* sequences, float* sequence_scores) {
  const int32_t m = p_.num_beams, r = p_.num_return_sequences, max_len = p_.max_length;
  for (int32_t b = 0; b < p_.batch; ++b) {
    Item& item = items_[static_cast<size_t>(b)];
    if (item.done) continue;
    for (int32_t j = 0; j < m; ++j) add(item, seq.row(b * m + j), seq.length(), final_scores[b * m + j]);
  }
  std::fill_n(sequences, static_cast<size_t>(p_.batch) * r * max_len, p_.pad_token_id);
  for (int32_t b = 0; b < p_.batch; ++b) {
    const auto& best = items_[static_cast<size_t>(b)].best;
    for (int32_t k = 0; k < r && k < static_cast<int32_t>(best.size()); ++k) {
      std::copy(best[k].tokens.begin(), best[k].tokens.end(), sequences + (static_cast<size_t>(b) * r + k) * max_len);
      if (sequence_scores) sequence_scores[b * r + k] = best[k].score;
    }
  }
}

}  // namespace onyx::gen
