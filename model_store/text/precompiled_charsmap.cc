#include "model_store/text/precompiled_charsmap.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {

// darts-clone's unit layout.
bool HasLeaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t Value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t Label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

}  // namespace

absl::StatusOr<PrecompiledCharsmap> PrecompiledCharsmap::Parse(const std::string& label,
                                                               std::string blob) {
  if (blob.size() < 4)
    return absl::DataLossError(absl::StrCat(label, ": precompiled_charsmap is truncated"));
  uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8) | static_cast<uint8_t>(blob[i]);
  if (trie_bytes % 4 != 0 || trie_bytes == 0 || blob.size() - 4 < trie_bytes) {
    return absl::DataLossError(absl::StrCat(label, ": precompiled_charsmap declares a ", trie_bytes,
                                            "-byte trie in ", blob.size() - 4, " bytes"));
  }
  PrecompiledCharsmap map;
  map.units_.resize(trie_bytes / 4);
  for (size_t i = 0; i < map.units_.size(); ++i) {
    const auto* p = reinterpret_cast<const uint8_t*>(blob.data() + 4 + 4 * i);
    map.units_[i] = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
  }
  map.replacements_ = blob.substr(4 + trie_bytes);
  // Replacements are decoded as UTF-8 when applied: a corrupt map fails here, not mid-request.
  if (absl::Status valid = ValidateUtf8(map.replacements_, "precompiled_charsmap"); !valid.ok())
    return absl::DataLossError(absl::StrCat(label, ": ", valid.message()));
  return map;
}

std::optional<std::string_view> PrecompiledCharsmap::Transform(std::string_view chunk) const {
  // Common-prefix search, stopping at the first (shortest) key found.
  size_t node = Offset(units_[0]);
  for (char ch : chunk) {
    const auto c = static_cast<uint8_t>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= units_.size()) return std::nullopt;
    const uint32_t unit = units_[node];
    if (Label(unit) != c) return std::nullopt;
    node ^= Offset(unit);
    if (node >= units_.size()) return std::nullopt;
    if (HasLeaf(unit)) {
      const uint32_t begin = Value(units_[node]);
      if (begin >= replacements_.size()) return std::nullopt;
      const size_t end = replacements_.find('\0', begin);
      return std::string_view(replacements_)
          .substr(begin, (end == std::string::npos ? replacements_.size() : end) - begin);
    }
  }
  return std::nullopt;
}

void PrecompiledCharsmap::Normalize(NormalizedText* text) const {
  NormalizedText out;
  out.reserve(text->size());
  // As Hugging Face aligns a replacement: its i-th character takes the span of the i-th
  // replaced one; characters beyond those replaced take the span before them.
  auto replace = [&](std::string_view replacement, size_t from, size_t to) {
    size_t source = from;
    for (const NormalizedChar& c : DecodeNormalized(replacement, 0)) {
      const NormalizedChar& original = (*text)[std::min(source, to - 1)];
      out.push_back({c.cp, original.begin, original.end});
      ++source;
    }
  };
  int32_t state = 0;
  size_t start = 0;
  const NormalizedText& in = *text;
  for (size_t i = 1; i <= in.size(); ++i) {
    if (i < in.size() && !IsGraphemeBreak(in[i - 1].cp, in[i].cp, &state)) continue;
    const std::string grapheme = EncodeUtf8(in, start, i);
    std::optional<std::string_view> whole;
    if (grapheme.size() < 6) whole = Transform(grapheme);
    if (whole) {
      replace(*whole, start, i);
    } else {
      for (size_t j = start; j < i; ++j) {
        std::string one;
        AppendUtf8(in[j].cp, &one);
        if (auto part = Transform(one)) {
          replace(*part, j, j + 1);
        } else {
          out.push_back(in[j]);
        }
      }
    }
    start = i;
  }
  *text = std::move(out);
}

}  // namespace embedding::model_store
