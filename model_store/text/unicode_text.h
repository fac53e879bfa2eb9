// Unicode helpers for tokenization, all backed by utf8proc's tables (no hand-written ranges
// except the CJK ideograph blocks that BERT itself defines).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace embedding::model_store {

// Checks that `text` is well-formed UTF-8. INVALID_ARGUMENT naming `field` and the byte
// offset of the first bad sequence.
absl::Status ValidateUtf8(std::string_view text, absl::string_view field);

// Decodes the code point at `offset` of valid UTF-8; returns its length in bytes.
int DecodeCodePoint(std::string_view text, size_t offset, char32_t* cp);

void AppendUtf8(char32_t cp, std::string* out);

// Unicode White_Space (Zs, Zl, Zp, and the C0/C1 spacing controls).
bool IsUnicodeWhitespace(char32_t cp);
// BERT's whitespace: tab, newline, carriage return and White_Space.
bool IsBertWhitespace(char32_t cp);
// BERT's control: any C* category except tab, newline and carriage return.
bool IsBertControl(char32_t cp);
// BERT's punctuation: ASCII punctuation or any P* category.
bool IsBertPunctuation(char32_t cp);
// The CJK ideograph blocks BERT surrounds with spaces.
bool IsChineseChar(char32_t cp);
// A letter (L*) or number (N*): what a single_word added token may not touch.
bool IsAlphanumeric(char32_t cp);
// Nonspacing mark (Mn), which accent stripping removes.
bool IsNonspacingMark(char32_t cp);

// Appends the full lowercase mapping of `cp` (U+0130 lowercases to two code points).
void AppendLowercase(char32_t cp, std::vector<char32_t>* out);
// Appends the canonical decomposition (NFD) of `cp`.
void AppendCanonicalDecomposition(char32_t cp, std::vector<char32_t>* out);
// Appends the full decomposition of `cp`: compatibility (NFKD) or canonical (NFD).
void AppendDecomposition(char32_t cp, bool compatibility, std::vector<char32_t>* out);
// Canonical combining class (0 for starters).
int CombiningClass(char32_t cp);
// Canonical composition of a decomposed, canonically ordered sequence (NFD -> NFC).
std::vector<char32_t> Compose(std::vector<char32_t> decomposed);
// Whether a grapheme cluster boundary lies between `before` and `after` (UAX #29, extended).
// `state` carries context along one text; start it at 0.
bool IsGraphemeBreak(char32_t before, char32_t after, int32_t* state);

// Number of code points in valid UTF-8 before each byte offset, for code-point spans.
class CodePointIndex {
 public:
  explicit CodePointIndex(std::string_view text);
  // Code points before byte `offset` (offset on a boundary, <= text size).
  uint32_t CharsBefore(uint32_t byte_offset) const;

 private:
  // Code-point count at every 64th byte, then a short scan: O(n/64) memory.
  std::vector<uint32_t> checkpoints_;
  std::string_view text_;
};

}  // namespace embedding::model_store
