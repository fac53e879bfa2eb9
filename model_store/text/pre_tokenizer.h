// Tokenizer pre-tokenizers, configured from a `tokenizer.json` "pre_tokenizer" object: split
// normalized text into the words the subword model sees. BertPreTokenizer, Metaspace
// (SentencePiece's "▁" convention), WhitespaceSplit, Split (a regex), ByteLevel (GPT-2's bytes
// as characters), and Sequence of these.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/text/normalized_text.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits `text` into non-empty words. `at_text_start`: the text begins the input (Metaspace's
  // "first" scheme prepends only there). Thread-safe.
  virtual std::vector<NormalizedText> Split(NormalizedText text, bool at_text_start) const = 0;
};

// A JSON null splits nothing (the whole text is one word). INVALID_ARGUMENT naming `label` and
// listing the supported types for an unknown one.
absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const std::string& label,
                                                                const nlohmann::json& json);

std::unique_ptr<PreTokenizer> MakeBertPreTokenizer();

// The regex pre-tokenizers (regex_pre_tokenizers.cc). DATA_LOSS naming `label` for a bad
// pattern or behaviour.
absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseSplitPreTokenizer(const std::string& label,
                                                                     const nlohmann::json& json);
absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseByteLevelPreTokenizer(
    const std::string& label, const nlohmann::json& json);

// GPT-2's byte-to-character table that ByteLevel uses: printable Latin-1 bytes stand for
// themselves, the others take the characters from U+0100 on, in byte order.
std::array<char32_t, 256> ByteCharacters();

}  // namespace embedding::model_store
