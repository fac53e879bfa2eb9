// A deterministic WordPiece vocabulary built from a Debian word list, for the demo model.
#pragma once

#include <string>
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

}  // namespace embedding::model_store
