// The tokens of a text's first (or last) window without tokenising the rest: what TRUNCATE
// reads, at a cost that grows with the window, not with the text.
#pragma once

#include <cstddef>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model_store/text/tokenizer.h"

namespace embedding::model_store {

struct WindowTokens {
  // At most `max_tokens` tokens, spans in the whole text's bytes: the text's first ones, or
  // its last ones for keep_end.
  TokenizedText tokens;
  // The text has tokens beyond the window (the rest was not tokenised).
  bool cut = false;
};

// Tokenises a piece of `text` from its start (from its end for `keep_end`) long enough for
// `max_tokens` tokens, then a piece twice as long, and keeps the window once both agree on it
// (ids and spans): the window's tokens no longer depend on where the piece ends. A tokenizer's
// stages are local (normalizers per character, pre-tokenizers per word, a subword model per
// word), so they are the tokens Tokenize(text) gives; where the two disagree the pieces grow,
// up to the whole text. Linear in the piece that settles, typically 2 to 4 x the window's bytes.
// INVALID_ARGUMENT naming `field` for invalid UTF-8 anywhere in `text`. Thread-safe.
absl::StatusOr<WindowTokens> TokenizeWindow(const Tokenizer& tokenizer, std::string_view text,
                                            size_t max_tokens, bool keep_end,
                                            absl::string_view field = "text");

}  // namespace embedding::model_store
