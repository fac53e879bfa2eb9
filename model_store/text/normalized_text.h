// Internal to the tokenizer: text as it passes through normalizers and pre-tokenizers, each code
// point carrying the byte span of the original text it came from, so every token can report
// where it was found however the text was rewritten.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace embedding::model_store {

struct NormalizedChar {
  char32_t cp;
  uint32_t begin;  // byte span [begin, end) in the original text
  uint32_t end;
};

using NormalizedText = std::vector<NormalizedChar>;

// Decodes valid UTF-8 `text`, whose first byte is at `base` in the original text.
NormalizedText DecodeNormalized(std::string_view text, uint32_t base);

// UTF-8 of chars [begin, end) of `text`.
std::string EncodeUtf8(const NormalizedText& text, size_t begin, size_t end);

}  // namespace embedding::model_store
