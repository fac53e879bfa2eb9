#include "model_store/text/normalized_text.h"

#include "model_store/text/unicode_text.h"

namespace embedding::model_store {

NormalizedText DecodeNormalized(std::string_view text, uint32_t base) {
  NormalizedText out;
  out.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) {
    char32_t cp;
    const int len = DecodeCodePoint(text, offset, &cp);
    out.push_back(
        {cp, base + static_cast<uint32_t>(offset), base + static_cast<uint32_t>(offset + len)});
    offset += len;
  }
  return out;
}

std::string EncodeUtf8(const NormalizedText& text, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) AppendUtf8(text[i].cp, &out);
  return out;
}

}  // namespace embedding::model_store
