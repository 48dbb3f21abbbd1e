// Tokenizer (com.microsoft): splits each string into tokens, by a token
// pattern or by separator patterns, padded to the longest row. It is what
// skl2onnx emits for CountVectorizer / TfidfVectorizer, ahead of
// TfIdfVectorizer. Behaviour checked against ONNX Runtime's contrib op.
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"

namespace onyx {
namespace {

const char* kMicrosoft = "com.microsoft";

// Number of UTF-8 code points (continuation bytes are not counted).
int64_t utf8_length(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The string cut into single UTF-8 characters (separators [""]).
std::vector<std::string> utf8_characters(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    while (i + len < s.size() && (static_cast<unsigned char>(s[i + len]) & 0xC0) == 0x80) ++len;
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

struct TokenizerSpec {
  bool mark = false;
  int64_t min_chars = 1;
  std::string pad;
  std::unique_ptr<std::regex> token;      // tokens are the matches of this, or
  std::unique_ptr<std::regex> separator;  // the pieces between matches of this
  bool characters = false;                // separators [""]: one token per character

  std::vector<std::string> split(const std::string& s) const {
    std::vector<std::string> pieces;
    if (characters) {
      pieces = utf8_characters(s);
    } else if (token) {
      for (std::sregex_iterator it(s.begin(), s.end(), *token), end; it != end; ++it)
        if (it->length() > 0) pieces.push_back(it->str());
    } else {
      for (std::sregex_token_iterator it(s.begin(), s.end(), *separator, -1), end; it != end; ++it)
        pieces.push_back(it->str());
    }
    std::vector<std::string> tokens;
    for (auto& p : pieces)
      if (!p.empty() && utf8_length(p) >= min_chars) tokens.push_back(std::move(p));
    return tokens;
  }
};

std::unique_ptr<std::regex> compile(const std::string& pattern, const char* what) {
  try {
    return std::make_unique<std::regex>(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    kernel_fail(std::string("Tokenizer: ") + what + " '" + pattern + "' is not a valid regular expression: " + e.what());
  }
}

std::shared_ptr<const TokenizerSpec> read_spec(const KernelInitContext& ic) {
  auto spec = std::make_shared<TokenizerSpec>();
  spec->mark = ic.get_int("mark", 0) != 0;
  spec->min_chars = ic.get_int("mincharnum", 1);
  spec->pad = ic.get_string("pad_value", "");
  if (spec->min_chars < 1) kernel_fail("Tokenizer: mincharnum must be at least 1, got " + std::to_string(spec->min_chars));
  std::string token = ic.get_string("tokenexp", "");
  auto separators = ic.get_strings("separators");
  if (token.empty() == separators.empty())
    kernel_fail("Tokenizer: exactly one of tokenexp and separators must be given");
  if (!token.empty()) {
    spec->token = compile(token, "tokenexp");
  } else if (separators.size() == 1 && separators[0].empty()) {
    spec->characters = true;
  } else {
    // Any separator splits: one alternation of them all.
    std::string any;
    for (auto& s : separators) {
      if (s.empty()) kernel_fail("Tokenizer: an empty separator only means characters when it is the only one");
      any += (any.empty() ? "(?:" : "|(?:") + s + ")";
    }
    spec->separator = compile(any, "separators");
  }
  return spec;
}

KernelFactory tokenizer_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::shared_ptr<const TokenizerSpec> spec = read_spec(ic);
    return [spec](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      if (X.dtype() != DataType::String) kernel_fail("Tokenizer: X must be string, got " + dtype_name(X.dtype()));
      const int64_t n = X.numel();
      std::vector<std::vector<std::string>> rows(static_cast<size_t>(n));
      size_t longest = 0;
      for (int64_t i = 0; i < n; ++i) {
        rows[i] = spec->split(X.data<std::string>()[i]);
        longest = std::max(longest, rows[i].size());
      }
      // Rows are marked with STX / ETX only when some row has a token.
      const bool marked = spec->mark && longest > 0;
      const int64_t width = static_cast<int64_t>(longest) + (marked ? 2 : 0);
      Shape shape = X.shape();
      shape.push_back(width);
      Tensor& Y = ctx.allocate_output(0, DataType::String, shape);
      std::string* y = Y.data<std::string>();
      for (int64_t i = 0; i < n; ++i) {
        std::string* row = y + i * width;
        int64_t k = 0;
        if (marked) row[k++] = "\x02";
        for (auto& t : rows[i]) row[k++] = std::move(t);
        if (marked) row[k++] = "\x03";
        for (; k < width; ++k) row[k] = spec->pad;
      }
    };
  });
}

}  // namespace

void register_tokenizer(KernelRegistry& r) { r.add("Tokenizer", 1, kMaxOpset, tokenizer_factory(), kMicrosoft); }

}  // namespace onyx
