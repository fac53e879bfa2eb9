// A deterministic WordPiece vocabulary built from a Debian word list, for the demo model.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::model_store {

// Special tokens first ([PAD] [UNK] [CLS] [SEP] [MASK]), then single characters (ASCII,
// Latin, Greek, Cyrillic, common CJK) with their "##" continuations, then the commonest word
// endings of the list as "##" pieces, then the list's shortest lowercase words, up to
// `target_size` entries. The same list and size always give the same vocabulary.
// NOT_FOUND when `word_list_path` cannot be read (install Debian's `wamerican`);
// INVALID_ARGUMENT when `target_size` is below 8000.
absl::StatusOr<std::vector<std::string>> BuildDemoVocabulary(const std::string& word_list_path,
                                                             int target_size);

// A Unigram (SentencePiece-style) vocabulary from the same list: <s> <pad> </s> <unk>, the 256
// byte-fallback pieces <0x00>..<0xFF>, "▁" and the single characters above (each alone and
// after "▁"), then the commonest substrings of "▁word" for the list's lowercase words, and
// <mask> last, as XLM-R orders them. Scores are log relative frequencies of the substrings
// (single characters the list lacks get a low fixed score). Deterministic; NOT_FOUND and
// INVALID_ARGUMENT as above.
absl::StatusOr<std::vector<std::pair<std::string, double>>> BuildDemoUnigramVocabulary(
    const std::string& word_list_path, int target_size);

}  // namespace embedding::model_store
