#include "model_store/text/added_tokens.h"

#include <algorithm>

#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {

// Start of the character that ends just before `offset`.
size_t PreviousChar(std::string_view text, size_t offset) {
  do {
    --offset;
  } while (offset > 0 && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80);
  return offset;
}

char32_t CharAt(std::string_view text, size_t offset, int* length) {
  char32_t cp;
  *length = DecodeCodePoint(text, offset, &cp);
  return cp;
}

bool IsWordChar(char32_t cp) { return cp == '_' || IsAlphanumeric(cp); }

}  // namespace

std::vector<AddedTokenMatch> FindAddedTokens(std::string_view text,
                                             const std::vector<AddedToken>& tokens) {
  std::vector<AddedTokenMatch> matches;
  // Next occurrence of each token at or after `pos`, refreshed only once passed, so the scan
  // stays linear however many tokens the text holds.
  std::vector<size_t> next;
  for (const AddedToken& token : tokens) next.push_back(text.find(token.content));
  size_t pos = 0;
  size_t taken = 0;  // end of the last match, stripped whitespace included
  int length;
  while (pos < text.size()) {
    size_t best_at = std::string_view::npos;
    size_t best = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (next[i] != std::string_view::npos && next[i] < pos)
        next[i] = text.find(tokens[i].content, pos);
      if (next[i] < best_at) {  // strict: among equal starts the longest (first) wins
        best_at = next[i];
        best = i;
      }
    }
    if (best_at == std::string_view::npos) break;
    const AddedToken& token = tokens[best];
    size_t begin = best_at;
    size_t end = best_at + token.content.size();
    pos = end;
    if (token.single_word) {
      const bool word_before =
          begin > 0 && IsWordChar(CharAt(text, PreviousChar(text, begin), &length));
      const bool word_after = end < text.size() && IsWordChar(CharAt(text, end, &length));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      while (begin > 0) {
        const size_t previous = PreviousChar(text, begin);
        if (!IsUnicodeWhitespace(CharAt(text, previous, &length))) break;
        begin = previous;
      }
    }
    begin = std::max(begin, taken);
    if (token.rstrip) {
      while (end < text.size() && IsUnicodeWhitespace(CharAt(text, end, &length))) end += length;
    }
    if (begin >= end) continue;  // wholly inside the whitespace the previous match took
    matches.push_back({begin, end, best});
    taken = end;
  }
  return matches;
}

}  // namespace embedding::model_store
