// The demo models' `tokenizer.json` files, in the layout Hugging Face tokenizers writes:
// BERT's WordPiece, and XLM-R's Unigram with the Metaspace pre-tokenizer.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace embedding::model_store {

// BertNormalizer (lowercasing), BertPreTokenizer, WordPiece, [CLS] $A [SEP]. `vocab` starts
// [PAD] [UNK] [CLS] [SEP] [MASK].
nlohmann::json WordPieceTokenizerJson(const std::vector<std::string>& vocab);

// NFKC, Metaspace ("▁", prepend always), Unigram with byte fallback, <s> $A </s>. `pieces`
// starts <s> <pad> </s> <unk> and ends with <mask>.
nlohmann::json UnigramTokenizerJson(const std::vector<std::pair<std::string, double>>& pieces);

}  // namespace embedding::model_store
