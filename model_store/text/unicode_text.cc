#include "model_store/text/unicode_text.h"

#include <utf8proc.h>

#include "absl/strings/str_cat.h"

namespace embedding::model_store {
namespace {
constexpr uint32_t kCheckpointStride = 64;

utf8proc_category_t Category(char32_t cp) {
  return static_cast<utf8proc_category_t>(utf8proc_category(static_cast<utf8proc_int32_t>(cp)));
}
}  // namespace

absl::Status ValidateUtf8(std::string_view text, absl::string_view field) {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    utf8proc_int32_t cp;
    const utf8proc_ssize_t n = utf8proc_iterate(bytes + offset, text.size() - offset, &cp);
    if (n <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": invalid UTF-8 at byte ", offset, " (text must be UTF-8)"));
    }
    offset += n;
  }
  return absl::OkStatus();
}

int DecodeCodePoint(std::string_view text, size_t offset, char32_t* cp) {
  utf8proc_int32_t value;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data()) + offset,
                                  text.size() - offset, &value);
  *cp = static_cast<char32_t>(value);
  return static_cast<int>(n);
}

void AppendUtf8(char32_t cp, std::string* out) {
  utf8proc_uint8_t buf[4];
  const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out->append(reinterpret_cast<const char*>(buf), n);
}

bool IsUnicodeWhitespace(char32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x85) return true;
  const auto cat = Category(cp);
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool IsBertWhitespace(char32_t cp) {
  return cp == '\t' || cp == '\n' || cp == '\r' || IsUnicodeWhitespace(cp);
}

bool IsBertControl(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (Category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
      return true;
    default:
      return false;
  }
}

bool IsAlphanumeric(char32_t cp) {
  switch (Category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

bool IsBertPunctuation(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
           (cp >= 123 && cp <= 126);
  }
  switch (Category(cp)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool IsChineseChar(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool IsNonspacingMark(char32_t cp) { return Category(cp) == UTF8PROC_CATEGORY_MN; }

void AppendLowercase(char32_t cp, std::vector<char32_t>* out) {
  // The one unconditional multi-code-point lowercase mapping in Unicode's SpecialCasing.
  if (cp == 0x130) {
    out->push_back('i');
    out->push_back(0x307);
    return;
  }
  out->push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
}

void AppendCanonicalDecomposition(char32_t cp, std::vector<char32_t>* out) {
  AppendDecomposition(cp, false, out);
}

void AppendDecomposition(char32_t cp, bool compatibility, std::vector<char32_t>* out) {
  utf8proc_int32_t buf[32];
  int last_boundclass = 0;
  const int options = UTF8PROC_DECOMPOSE | (compatibility ? UTF8PROC_COMPAT : 0);
  const auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32,
                                         static_cast<utf8proc_option_t>(options), &last_boundclass);
  if (n <= 0 || n > 32) {
    out->push_back(cp);
    return;
  }
  for (int i = 0; i < n; ++i) out->push_back(static_cast<char32_t>(buf[i]));
}

int CombiningClass(char32_t cp) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
}

std::vector<char32_t> Compose(std::vector<char32_t> decomposed) {
  std::vector<utf8proc_int32_t> buf(decomposed.begin(), decomposed.end());
  const auto n = utf8proc_normalize_utf32(buf.data(), static_cast<utf8proc_ssize_t>(buf.size()),
                                          UTF8PROC_COMPOSE);
  if (n < 0) return decomposed;
  return std::vector<char32_t>(buf.begin(), buf.begin() + n);
}

bool IsGraphemeBreak(char32_t before, char32_t after, int32_t* state) {
  return utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(before),
                                          static_cast<utf8proc_int32_t>(after), state);
}

CodePointIndex::CodePointIndex(std::string_view text) : text_(text) {
  uint32_t count = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i % kCheckpointStride == 0) checkpoints_.push_back(count);
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++count;
  }
}

uint32_t CodePointIndex::CharsBefore(uint32_t byte_offset) const {
  if (text_.empty()) return 0;
  const uint32_t slot = std::min<uint32_t>(byte_offset / kCheckpointStride,
                                           static_cast<uint32_t>(checkpoints_.size() - 1));
  uint32_t count = checkpoints_[slot];
  for (uint32_t i = slot * kCheckpointStride; i < byte_offset && i < text_.size(); ++i) {
    if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++count;
  }
  return count;
}

}  // namespace embedding::model_store
