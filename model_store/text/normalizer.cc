#include "model_store/text/normalizer.h"

#include <algorithm>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/text/precompiled_charsmap.h"
#include "model_store/text/unicode_text.h"
#include "re2/re2.h"

namespace embedding::model_store {
namespace {
using Json = nlohmann::json;

bool BoolOr(const Json& obj, const char* key, bool fallback) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_boolean()) ? it->get<bool>() : fallback;
}

class BertNormalizer : public Normalizer {
 public:
  explicit BertNormalizer(const BertNormalizerOptions& options) : options_(options) {}

  void Normalize(NormalizedText* text) const override {
    NormalizedText out;
    out.reserve(text->size());
    std::vector<char32_t> stage, next;
    for (const NormalizedChar& c : *text) {
      stage.assign(1, c.cp);
      if (options_.clean_text) {
        if (c.cp == 0 || c.cp == 0xFFFD || IsBertControl(c.cp)) continue;
        if (IsBertWhitespace(c.cp)) stage[0] = ' ';
      }
      if (options_.handle_chinese_chars && IsChineseChar(c.cp)) stage = {' ', c.cp, ' '};
      if (options_.strip_accents) {
        next.clear();
        for (char32_t s : stage) AppendCanonicalDecomposition(s, &next);
        stage.clear();
        for (char32_t s : next) {
          if (!IsNonspacingMark(s)) stage.push_back(s);
        }
      }
      if (options_.lowercase) {
        next.clear();
        for (char32_t s : stage) AppendLowercase(s, &next);
        stage.swap(next);
      }
      for (char32_t s : stage) out.push_back({s, c.begin, c.end});
    }
    *text = std::move(out);
  }

 private:
  BertNormalizerOptions options_;
};

// NFC, NFD, NFKC, NFKD, aligned as Hugging Face aligns them: each code point's decomposition
// is its first part (which takes the span of the next original code point, in order) and added
// parts (which repeat the span before them); canonical reordering moves parts with their role,
// so spans are handed out only after it. A composed code point keeps the span of the first
// part it absorbed.
class UnicodeForm : public Normalizer {
 public:
  UnicodeForm(bool compatibility, bool compose)
      : compatibility_(compatibility), compose_(compose) {}

  void Normalize(NormalizedText* text) const override {
    struct Part {
      char32_t cp;
      bool first;
    };
    std::vector<Part> parts;
    parts.reserve(text->size());
    std::vector<char32_t> pieces;
    for (const NormalizedChar& c : *text) {
      pieces.clear();
      AppendDecomposition(c.cp, compatibility_, &pieces);
      for (size_t i = 0; i < pieces.size(); ++i) parts.push_back({pieces[i], i == 0});
    }
    // Canonical ordering: a stable sort of each run of non-starters by combining class.
    for (size_t i = 0; i < parts.size();) {
      size_t j = i;
      while (j < parts.size() && CombiningClass(parts[j].cp) != 0) ++j;
      std::stable_sort(parts.begin() + i, parts.begin() + j, [](const Part& a, const Part& b) {
        return CombiningClass(a.cp) < CombiningClass(b.cp);
      });
      i = j == i ? i + 1 : j;
    }
    NormalizedText decomposed;
    decomposed.reserve(parts.size());
    size_t source = 0;
    for (const Part& part : parts) {
      const NormalizedChar& from = (part.first || decomposed.empty())
                                       ? (*text)[std::min(source++, text->size() - 1)]
                                       : decomposed.back();
      decomposed.push_back({part.cp, from.begin, from.end});
    }
    if (!compose_) {
      *text = std::move(decomposed);
      return;
    }
    std::vector<char32_t> cps;
    for (const auto& c : decomposed) cps.push_back(c.cp);
    const std::vector<char32_t> composed = Compose(std::move(cps));
    NormalizedText out;
    out.reserve(composed.size());
    size_t pos = 0;
    for (char32_t cp : composed) {
      if (pos >= decomposed.size()) break;
      pieces.clear();
      AppendDecomposition(cp, false, &pieces);
      out.push_back({cp, decomposed[pos].begin, decomposed[pos].end});
      pos += std::max<size_t>(1, std::min(pieces.size(), decomposed.size() - pos));
    }
    *text = std::move(out);
  }

 private:
  bool compatibility_;
  bool compose_;
};

class Lowercase : public Normalizer {
 public:
  void Normalize(NormalizedText* text) const override {
    NormalizedText out;
    out.reserve(text->size());
    std::vector<char32_t> lower;
    for (const NormalizedChar& c : *text) {
      lower.clear();
      AppendLowercase(c.cp, &lower);
      for (char32_t l : lower) out.push_back({l, c.begin, c.end});
    }
    *text = std::move(out);
  }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(NormalizedText* text) const override {
    size_t begin = 0, end = text->size();
    while (left_ && begin < end && IsUnicodeWhitespace((*text)[begin].cp)) ++begin;
    while (right_ && end > begin && IsUnicodeWhitespace((*text)[end - 1].cp)) --end;
    *text = NormalizedText(text->begin() + begin, text->begin() + end);
  }

 private:
  bool left_, right_;
};

// Replace: a literal string or a regular expression. Patterns run on RE2 (linear time, no
// recursion: std::regex overflowed its stack on 100,000 spaces against " {2,}", the pattern
// converted XLM-R checkpoints carry). As in Hugging Face, every replacement character takes
// the span of the match's last character.
class Replace : public Normalizer {
 public:
  Replace(std::string literal, std::unique_ptr<re2::RE2> regex, std::string content)
      : literal_(std::move(literal)),
        regex_(std::move(regex)),
        content_(DecodeNormalized(content, 0)) {}

  void Normalize(NormalizedText* text) const override {
    // Byte offset of each character in the UTF-8 form, plus the end.
    std::string utf8;
    std::vector<size_t> char_at_byte;
    for (size_t i = 0; i < text->size(); ++i) {
      AppendUtf8((*text)[i].cp, &utf8);
      char_at_byte.resize(utf8.size(), i);
    }
    std::vector<std::pair<size_t, size_t>> matches;  // byte ranges
    if (regex_) {
      const re2::StringPiece input(utf8);
      re2::StringPiece match;
      for (size_t at = 0; at <= utf8.size() &&
                          regex_->Match(input, at, utf8.size(), re2::RE2::UNANCHORED, &match, 1);) {
        const size_t begin = static_cast<size_t>(match.data() - utf8.data());
        if (match.empty()) {
          at = begin + 1;
          continue;
        }
        matches.emplace_back(begin, begin + match.size());
        at = begin + match.size();
      }
    } else if (!literal_.empty()) {
      for (size_t at = utf8.find(literal_); at != std::string::npos;
           at = utf8.find(literal_, at + literal_.size()))
        matches.emplace_back(at, at + literal_.size());
    }
    if (matches.empty()) return;
    NormalizedText out;
    size_t next_char = 0;
    for (const auto& [begin, end] : matches) {
      const size_t first = char_at_byte[begin], last = char_at_byte[end - 1];
      if (first < next_char) continue;  // a regex match starting inside a character
      out.insert(out.end(), text->begin() + next_char, text->begin() + first);
      for (const auto& c : content_) out.push_back({c.cp, (*text)[last].begin, (*text)[last].end});
      next_char = last + 1;
    }
    out.insert(out.end(), text->begin() + next_char, text->end());
    *text = std::move(out);
  }

 private:
  std::string literal_;
  std::unique_ptr<re2::RE2> regex_;
  NormalizedText content_;  // decoded once; its spans are replaced per match
};

class Precompiled : public Normalizer {
 public:
  explicit Precompiled(PrecompiledCharsmap map) : map_(std::move(map)) {}
  void Normalize(NormalizedText* text) const override { map_.Normalize(text); }

 private:
  PrecompiledCharsmap map_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void Normalize(NormalizedText* text) const override {
    for (const auto& step : steps_) step->Normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

absl::StatusOr<std::unique_ptr<Normalizer>> ParseReplace(const std::string& label,
                                                         const Json& json) {
  const Json& pattern = json.value("pattern", Json::object());
  const std::string content = json.value("content", "");
  if (pattern.contains("String") && pattern["String"].is_string())
    return std::make_unique<Replace>(pattern["String"].get<std::string>(), nullptr, content);
  if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
    const std::string source = pattern["Regex"].get<std::string>();
    auto regex = std::make_unique<re2::RE2>(source, re2::RE2::Quiet);
    if (!regex->ok()) {
      return absl::InvalidArgumentError(absl::StrCat(label, ": normalizer Replace pattern '",
                                                     source,
                                                     "' is not a supported regular "
                                                     "expression: ",
                                                     regex->error()));
    }
    return std::make_unique<Replace>("", std::move(regex), content);
  }
  return absl::DataLossError(
      absl::StrCat(label, ": normalizer Replace needs pattern.String or pattern.Regex"));
}

}  // namespace

std::unique_ptr<Normalizer> MakeBertNormalizer(const BertNormalizerOptions& options) {
  return std::make_unique<BertNormalizer>(options);
}

absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const std::string& label,
                                                            const Json& json) {
  if (json.is_null()) return nullptr;
  if (!json.is_object())
    return absl::DataLossError(absl::StrCat(label, ": normalizer must be an object or null"));
  const std::string type = json.value("type", "");
  if (type == "BertNormalizer") {
    BertNormalizerOptions options;
    options.clean_text = BoolOr(json, "clean_text", true);
    options.handle_chinese_chars = BoolOr(json, "handle_chinese_chars", true);
    options.lowercase = BoolOr(json, "lowercase", true);
    // Unset strip_accents follows lowercase, as in BERT.
    options.strip_accents = BoolOr(json, "strip_accents", options.lowercase);
    return MakeBertNormalizer(options);
  }
  if (type == "NFC") return std::make_unique<UnicodeForm>(false, true);
  if (type == "NFD") return std::make_unique<UnicodeForm>(false, false);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(true, true);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(true, false);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Strip") {
    return std::make_unique<Strip>(BoolOr(json, "strip_left", true),
                                   BoolOr(json, "strip_right", true));
  }
  if (type == "Replace") return ParseReplace(label, json);
  if (type == "Precompiled") {
    const Json& map = json.value("precompiled_charsmap", Json());
    if (map.is_null())
      return std::make_unique<Sequence>(std::vector<std::unique_ptr<Normalizer>>{});
    std::string blob;
    if (!map.is_string() || !absl::Base64Unescape(map.get<std::string>(), &blob)) {
      return absl::DataLossError(
          absl::StrCat(label, ": normalizer precompiled_charsmap is not base64"));
    }
    ASSIGN_OR_RETURN(PrecompiledCharsmap parsed,
                     PrecompiledCharsmap::Parse(label, std::move(blob)));
    return std::make_unique<Precompiled>(std::move(parsed));
  }
  if (type == "Sequence") {
    const Json& list = json.value("normalizers", Json());
    if (!list.is_array())
      return absl::DataLossError(absl::StrCat(label, ": normalizer Sequence needs a list"));
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const Json& item : list) {
      ASSIGN_OR_RETURN(auto step, ParseNormalizer(label, item));
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      label, ": normalizer type '", type,
      "' is not supported (supported: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
      "Replace, Precompiled, Sequence, null)"));
}

}  // namespace embedding::model_store
