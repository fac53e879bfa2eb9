// Regular expressions as Hugging Face's tokenizers run them: Oniguruma in its default (Ruby)
// syntax, so the pre-tokenizer patterns of GPT-2, Qwen and Llama 3 (\p{L}, (?i:...), the
// lookahead in \s+(?!\S)) match exactly as there. RE2 has no lookahead.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::model_store {

class UnicodeRegex {
 public:
  // INVALID_ARGUMENT with Oniguruma's message for a pattern it cannot compile.
  static absl::StatusOr<std::unique_ptr<UnicodeRegex>> Compile(const std::string& pattern);
  ~UnicodeRegex();
  UnicodeRegex(const UnicodeRegex&) = delete;
  UnicodeRegex& operator=(const UnicodeRegex&) = delete;

  // Byte spans [begin, end) of the successive non-overlapping matches in valid UTF-8 `text`,
  // leftmost first; an empty match advances one character (as Rust's find_iter, which the
  // tokenizers library uses). Thread-safe: a search keeps its state in its own region.
  std::vector<std::pair<size_t, size_t>> FindAll(std::string_view text) const;

 private:
  explicit UnicodeRegex(void* regex) : regex_(regex) {}
  void* regex_;  // OnigRegex, kept out of this header (oniguruma.h defines short macro names)
};

}  // namespace embedding::model_store
