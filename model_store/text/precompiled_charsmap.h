// SentencePiece's precompiled character map (the `Precompiled` normalizer of XLM-R and other
// Unigram checkpoints): a darts-clone double-array trie from UTF-8 sequences to offsets in a
// blob of NUL-terminated replacements. Applied per grapheme cluster, as Hugging Face tokenizers
// applies it, so ids match the checkpoints' own tokenizer.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/text/normalized_text.h"

namespace embedding::model_store {

class PrecompiledCharsmap {
 public:
  // `blob`: the decoded map (a little-endian uint32 trie size in bytes, the trie's 32-bit
  // units, then the replacements). DATA_LOSS naming `label` when it is truncated.
  static absl::StatusOr<PrecompiledCharsmap> Parse(const std::string& label, std::string blob);

  // The replacement of the shortest key that prefixes `chunk`, if any.
  std::optional<std::string_view> Transform(std::string_view chunk) const;

  // Each grapheme cluster under 6 bytes is replaced whole when a key prefixes it; otherwise
  // each of its code points is replaced on its own. A replacement's i-th character takes the
  // span of the i-th replaced one (extra characters the span before them), as Hugging Face
  // aligns it.
  void Normalize(NormalizedText* text) const;

 private:
  std::vector<uint32_t> units_;
  std::string replacements_;
};

}  // namespace embedding::model_store
