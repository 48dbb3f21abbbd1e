// String ops: StringNormalizer, TfIdfVectorizer, RegexFullMatch,
// StringConcat, StringSplit.
#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/utf8.h"
#include "cpu/cpu_provider.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

// ---------------------------------------------------------------- UTF-8 case mapping


// Simple case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic.
// Latin Extended-A alternates upper/lower in pairs whose parity changes by range.
int latin_ext_upper_parity(char32_t c) {  // parity of the upper-case member, -1 outside the paired ranges
  if (c >= 0x100 && c <= 0x137) return 0;
  if (c >= 0x139 && c <= 0x148) return 1;
  if (c >= 0x14A && c <= 0x177) return 0;
  if (c >= 0x179 && c <= 0x17E) return 1;
  return -1;
}

char32_t cp_lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  int par = latin_ext_upper_parity(c);
  if (par >= 0) return static_cast<int>(c % 2) == par ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

char32_t cp_upper(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  int par = latin_ext_upper_parity(c);
  if (par >= 0) return static_cast<int>(c % 2) != par ? c - 1 : c;
  if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

std::string to_lower(const std::string& s) {
  bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) {
    std::string r = s;
    for (auto& c : r)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return r;
  }
  std::u32string u = utf8_decode(s);
  for (auto& c : u) c = cp_lower(c);
  return utf8_encode(u);
}

std::string to_upper(const std::string& s) {
  bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) {
    std::string r = s;
    for (auto& c : r)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    return r;
  }
  std::u32string u = utf8_decode(s);
  for (auto& c : u) c = cp_upper(c);
  return utf8_encode(u);
}

void check_string(const Tensor& t, const char* what) {
  if (t.dtype() != DataType::String) kernel_fail(std::string(what) + " must be a string tensor, got " + dtype_name(t.dtype()));
}

// ---------------------------------------------------------------- StringNormalizer

KernelFactory string_normalizer_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::string action = ic.get_string("case_change_action", "NONE");
    if (action != "NONE" && action != "LOWER" && action != "UPPER")
      kernel_fail("case_change_action must be NONE, LOWER or UPPER, got '" + action + "'");
    bool case_sensitive = ic.get_int("is_case_sensitive", 0) != 0;
    std::unordered_set<std::string> stop;
    for (auto& w : ic.get_strings("stopwords")) stop.insert(case_sensitive ? w : to_lower(w));
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      check_string(X, "StringNormalizer input");
      bool two_d = X.rank() == 2;
      if (!(X.rank() == 1 || (two_d && X.dim(0) == 1)))
        kernel_fail("StringNormalizer input must be [C] or [1, C], got " + shape_to_string(X.shape()));
      const std::string* in = X.data<std::string>();
      std::vector<std::string> kept;
      for (int64_t i = 0; i < X.numel(); ++i) {
        const std::string& s = in[i];
        if (!stop.empty() && stop.count(case_sensitive ? s : to_lower(s))) continue;
        if (action == "LOWER")
          kept.push_back(to_lower(s));
        else if (action == "UPPER")
          kept.push_back(to_upper(s));
        else
          kept.push_back(s);
      }
      if (kept.empty()) kept.emplace_back();
      int64_t n = static_cast<int64_t>(kept.size());
      Tensor& Y = ctx.allocate_output(0, DataType::String, two_d ? Shape{1, n} : Shape{n});
      std::string* out = Y.data<std::string>();
      for (int64_t i = 0; i < n; ++i) out[i] = std::move(kept[i]);
    };
  });
}

// ---------------------------------------------------------------- TfIdfVectorizer

struct TfIdfConfig {
  int64_t min_n = 1, max_n = 1, max_skip = 0;
  enum Mode { TF, IDF, TFIDF } mode = TF;
  bool strings = false;
  // n-gram (as a key) -> output index, per n
  std::vector<std::map<std::vector<int64_t>, int64_t>> int_grams;
  std::vector<std::map<std::vector<std::string>, int64_t>> str_grams;
  std::vector<float> weights;  // by output index
  int64_t out_size = 0;
};

KernelFactory tfidf_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto cfg = std::make_shared<TfIdfConfig>();
    cfg->min_n = ic.get_int("min_gram_length", 1);
    cfg->max_n = ic.get_int("max_gram_length", 1);
    cfg->max_skip = ic.get_int("max_skip_count", 0);
    std::string mode = ic.get_string("mode", "TF");
    if (mode == "TF")
      cfg->mode = TfIdfConfig::TF;
    else if (mode == "IDF")
      cfg->mode = TfIdfConfig::IDF;
    else if (mode == "TFIDF")
      cfg->mode = TfIdfConfig::TFIDF;
    else
      kernel_fail("TfIdfVectorizer mode must be TF, IDF or TFIDF, got '" + mode + "'");
    if (cfg->min_n < 1 || cfg->max_n < cfg->min_n || cfg->max_skip < 0)
      kernel_fail("invalid min_gram_length / max_gram_length / max_skip_count");
    std::vector<int64_t> counts = ic.get_ints("ngram_counts"), indexes = ic.get_ints("ngram_indexes");
    std::vector<int64_t> pool_i = ic.get_ints("pool_int64s");
    std::vector<std::string> pool_s = ic.get_strings("pool_strings");
    std::vector<float> w = ic.get_floats("weights");
    cfg->strings = !pool_s.empty();
    if (!pool_s.empty() && !pool_i.empty()) kernel_fail("only one of pool_int64s and pool_strings may be set");
    int64_t pool_size = cfg->strings ? static_cast<int64_t>(pool_s.size()) : static_cast<int64_t>(pool_i.size());
    cfg->int_grams.resize(cfg->max_n + 1);
    cfg->str_grams.resize(cfg->max_n + 1);
    for (auto v : indexes) cfg->out_size = std::max(cfg->out_size, v + 1);
    // ngram_counts[i]: start in the pool of the (i+1)-grams
    int64_t gram_no = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      int64_t n = static_cast<int64_t>(i) + 1;
      int64_t start = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
      if (start < 0 || end > pool_size || start > end || (end - start) % n != 0)
        kernel_fail("ngram_counts is inconsistent with the pool size " + std::to_string(pool_size));
      for (int64_t p = start; p < end; p += n, ++gram_no) {
        if (gram_no >= static_cast<int64_t>(indexes.size())) kernel_fail("ngram_indexes has too few values");
        int64_t oi = indexes[gram_no];
        if (oi < 0) kernel_fail("ngram_indexes must be non-negative");
        if (n > cfg->max_n) continue;
        if (cfg->strings)
          cfg->str_grams[n][std::vector<std::string>(pool_s.begin() + p, pool_s.begin() + p + n)] = oi;
        else
          cfg->int_grams[n][std::vector<int64_t>(pool_i.begin() + p, pool_i.begin() + p + n)] = oi;
      }
    }
    cfg->weights.assign(static_cast<size_t>(cfg->out_size), 1.0f);
    // weights are indexed by output position (as ONNX Runtime and the reference do)
    if (!w.empty()) {
      if (static_cast<int64_t>(w.size()) < cfg->out_size)
        kernel_fail("weights has " + std::to_string(w.size()) + " values, expected " + std::to_string(cfg->out_size));
      for (int64_t i = 0; i < cfg->out_size; ++i) cfg->weights[i] = w[i];
    }
    std::shared_ptr<const TfIdfConfig> c = cfg;
    return [c](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      if (X.rank() != 1 && X.rank() != 2) kernel_fail("TfIdfVectorizer input must be [C] or [N, C], got " + shape_to_string(X.shape()));
      bool is_str = X.dtype() == DataType::String;
      if (is_str != c->strings && X.numel() > 0 && c->out_size > 0)
        kernel_fail("input type " + dtype_name(X.dtype()) + " does not match the n-gram pool type");
      if (!is_str && X.dtype() != DataType::Int32 && X.dtype() != DataType::Int64)
        kernel_fail("TfIdfVectorizer input must be string, int32 or int64, got " + dtype_name(X.dtype()));
      const int64_t rows = X.rank() == 2 ? X.dim(0) : 1, C = X.rank() == 2 ? X.dim(1) : X.dim(0);
      Tensor& Y = ctx.allocate_output(0, DataType::Float, X.rank() == 2 ? Shape{rows, c->out_size} : Shape{c->out_size});
      float* y = Y.data<float>();
      std::fill(y, y + Y.numel(), 0.f);
      std::vector<int64_t> ki;
      std::vector<std::string> ks;
      for (int64_t r = 0; r < rows; ++r) {
        float* out = y + r * c->out_size;
        for (int64_t n = c->min_n; n <= c->max_n; ++n) {
          bool has = is_str ? !c->str_grams[n].empty() : !c->int_grams[n].empty();
          if (!has) continue;
          int64_t skips = n == 1 ? 0 : c->max_skip;
          for (int64_t s = 0; s <= skips; ++s) {
            int64_t stride = s + 1;
            for (int64_t start = 0; start + (n - 1) * stride < C; ++start) {
              int64_t oi = -1;
              if (is_str) {
                ks.clear();
                for (int64_t k = 0; k < n; ++k) ks.push_back(X.data<std::string>()[r * C + start + k * stride]);
                auto it = c->str_grams[n].find(ks);
                if (it != c->str_grams[n].end()) oi = it->second;
              } else {
                ki.clear();
                for (int64_t k = 0; k < n; ++k) ki.push_back(X.int_at(r * C + start + k * stride));
                auto it = c->int_grams[n].find(ki);
                if (it != c->int_grams[n].end()) oi = it->second;
              }
              if (oi >= 0) out[oi] += 1.f;
            }
          }
        }
        for (int64_t i = 0; i < c->out_size; ++i) {
          if (c->mode == TfIdfConfig::IDF)
            out[i] = out[i] > 0 ? c->weights[i] : 0.f;
          else if (c->mode == TfIdfConfig::TFIDF)
            out[i] *= c->weights[i];
        }
      }
    };
  });
}

// ---------------------------------------------------------------- RegexFullMatch

KernelFactory regex_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::string pattern = ic.get_string("pattern", "");
    std::shared_ptr<const std::regex> re;
    try {
      re = std::make_shared<const std::regex>(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      kernel_fail("invalid regular expression '" + pattern + "': " + e.what());
    }
    return [re](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      check_string(X, "RegexFullMatch input");
      Tensor& Y = ctx.allocate_output(0, DataType::Bool, X.shape());
      for (int64_t i = 0; i < X.numel(); ++i) Y.data<bool>()[i] = std::regex_match(X.data<std::string>()[i], *re);
    };
  });
}

// ---------------------------------------------------------------- StringConcat

KernelFactory string_concat_factory() {
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      const Tensor& A = ctx.input(0);
      const Tensor& B = ctx.input(1);
      check_string(A, "StringConcat X");
      check_string(B, "StringConcat Y");
      Shape out = broadcast_shapes({A.shape(), B.shape()});
      Tensor& Z = ctx.allocate_output(0, DataType::String, out);
      const std::string *a = A.data<std::string>(), *b = B.data<std::string>();
      std::string* z = Z.data<std::string>();
      for_each_broadcast2(A.shape(), B.shape(), out, [&](int64_t i, int64_t ia, int64_t ib) { z[i] = a[ia] + b[ib]; });
    };
  });
}

// ---------------------------------------------------------------- StringSplit

KernelFactory string_split_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::string delim = ic.get_string("delimiter", "");
    bool has_max = ic.has("maxsplit");
    int64_t maxsplit = ic.get_int("maxsplit", -1);
    if (has_max && maxsplit < 0) has_max = false;
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      check_string(X, "StringSplit input");
      const std::string* in = X.data<std::string>();
      std::vector<std::vector<std::string>> parts(static_cast<size_t>(X.numel()));
      int64_t widest = 0;
      for (int64_t i = 0; i < X.numel(); ++i) {
        const std::string& s = in[i];
        auto& p = parts[i];
        if (delim.empty()) {
          // split on runs of whitespace, dropping leading / trailing whitespace
          auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
          size_t k = 0;
          while (k < s.size()) {
            while (k < s.size() && ws(s[k])) ++k;
            if (k >= s.size()) break;
            if (has_max && static_cast<int64_t>(p.size()) == maxsplit) {
              p.push_back(s.substr(k));  // like Python's str.split: the remainder keeps its trailing space
              break;
            }
            size_t e = k;
            while (e < s.size() && !ws(s[e])) ++e;
            p.push_back(s.substr(k, e - k));
            k = e;
          }
        } else {
          size_t k = 0;
          while (true) {
            size_t f = (has_max && static_cast<int64_t>(p.size()) == maxsplit) ? std::string::npos : s.find(delim, k);
            if (f == std::string::npos) {
              p.push_back(s.substr(k));
              break;
            }
            p.push_back(s.substr(k, f - k));
            k = f + delim.size();
          }
        }
        widest = std::max<int64_t>(widest, static_cast<int64_t>(p.size()));
      }
      Shape ys = X.shape();
      ys.push_back(widest);
      Tensor& Y = ctx.allocate_output(0, DataType::String, ys);
      std::string* y = Y.data<std::string>();
      for (int64_t i = 0; i < X.numel(); ++i)
        for (int64_t j = 0; j < static_cast<int64_t>(parts[i].size()); ++j) y[i * widest + j] = parts[i][j];
      if (ctx.num_outputs() > 1 && ctx.wants_output(1)) {
        Tensor& Z = ctx.allocate_output(1, DataType::Int64, X.shape());
        for (int64_t i = 0; i < X.numel(); ++i) Z.data<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
      }
    };
  });
}

}  // namespace

void register_string_ops(KernelRegistry& r) {
  r.add("StringNormalizer", 10, kMaxOpset, string_normalizer_factory());
  r.add("TfIdfVectorizer", 9, kMaxOpset, tfidf_factory());
  r.add("RegexFullMatch", 20, kMaxOpset, regex_factory());
  r.add("StringConcat", 20, kMaxOpset, string_concat_factory());
  r.add("StringSplit", 20, kMaxOpset, string_split_factory());
}

}  // namespace onyx
