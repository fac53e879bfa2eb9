// Internal to the tokenizer: where added tokens occur in a text, as Hugging Face's
// AddedVocabulary finds them (leftmost, then longest; non-overlapping; single_word, lstrip and
// rstrip applied after the match).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "model_store/text/tokenizer.h"

namespace embedding::model_store {

struct AddedTokenMatch {
  size_t begin;  // byte span in the text, whitespace taken by lstrip/rstrip included
  size_t end;
  size_t token;  // index into the tokens searched
};

// `tokens` longest first, none empty. Linear in the text for each token.
std::vector<AddedTokenMatch> FindAddedTokens(std::string_view text,
                                             const std::vector<AddedToken>& tokens);

}  // namespace embedding::model_store
