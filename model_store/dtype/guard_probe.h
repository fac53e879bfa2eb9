// What a faster dtype is guarded on: real text, tokenized by the model's own tokenizer.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/text/tokenizer.h"

namespace embedding::model_store {

// Eight sequences, special tokens included, from a built-in multilingual passage: 7 to 300
// tokens and two full windows of `window` tokens. DATA_LOSS if the tokenizer yields no tokens.
absl::StatusOr<std::vector<std::vector<int32_t>>> GuardProbe(const Tokenizer& tokenizer,
                                                             int64_t window);

}  // namespace embedding::model_store
