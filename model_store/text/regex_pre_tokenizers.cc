// The regex pre-tokenizers of byte-level BPE models: Split (a pattern and what becomes of its
// matches) and ByteLevel (GPT-2's split, then every UTF-8 byte as one printable character).
#include <array>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/text/pre_tokenizer.h"
#include "model_store/text/unicode_regex.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {
using Json = nlohmann::json;

// GPT-2's pattern, which ByteLevel applies when use_regex is on (the tokenizers library's).
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct Piece {
  size_t begin;  // character indices into the word
  size_t end;
  bool is_match;
};

// The word as UTF-8 with the character index of every byte offset, for regex spans.
struct Utf8Word {
  explicit Utf8Word(const NormalizedText& word) {
    for (size_t i = 0; i < word.size(); ++i) {
      const size_t before = utf8.size();
      AppendUtf8(word[i].cp, &utf8);
      char_at.resize(utf8.size(), 0);
      char_at[before] = i;
    }
    char_at.push_back(word.size());
  }
  std::string utf8;
  std::vector<size_t> char_at;  // valid at character boundaries only
};

// Matches and the text between them, in order, covering the word (Hugging Face's
// find_matches), with `invert` swapping which is which.
std::vector<Piece> FindPieces(const UnicodeRegex& regex, const NormalizedText& word, bool invert) {
  const Utf8Word text(word);
  std::vector<Piece> pieces;
  size_t previous = 0;
  for (const auto& [begin, end] : regex.FindAll(text.utf8)) {
    const size_t first = text.char_at[begin], last = text.char_at[end];
    if (first != previous) pieces.push_back({previous, first, invert});
    pieces.push_back({first, last, !invert});
    previous = last;
  }
  if (previous != word.size() || pieces.empty()) pieces.push_back({previous, word.size(), invert});
  return pieces;
}

// What the behaviour makes of the pieces (tokenizers' NormalizedString::split).
std::vector<Piece> Apply(Behavior behavior, std::vector<Piece> pieces) {
  std::vector<Piece> out;
  bool previous_match = false;
  switch (behavior) {
    case Behavior::kIsolated:
      return pieces;
    case Behavior::kRemoved:
      for (const Piece& p : pieces) {
        if (!p.is_match) out.push_back(p);
      }
      return out;
    case Behavior::kMergedWithPrevious:
    case Behavior::kContiguous:
      for (const Piece& p : pieces) {
        const bool merge = behavior == Behavior::kContiguous ? p.is_match == previous_match
                                                             : p.is_match && !previous_match;
        if (merge && !out.empty()) {
          out.back().end = p.end;
        } else {
          out.push_back(p);
        }
        previous_match = p.is_match;
      }
      return out;
    case Behavior::kMergedWithNext:
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().begin = it->begin;
        } else {
          out.push_back(*it);
        }
        previous_match = it->is_match;
      }
      return {out.rbegin(), out.rend()};
  }
  return pieces;
}

std::vector<NormalizedText> Cut(const NormalizedText& word, const std::vector<Piece>& pieces) {
  std::vector<NormalizedText> words;
  for (const Piece& p : pieces) {
    if (p.end > p.begin) words.emplace_back(word.begin() + p.begin, word.begin() + p.end);
  }
  return words;
}

class SplitPattern : public PreTokenizer {
 public:
  SplitPattern(std::unique_ptr<UnicodeRegex> regex, Behavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}

  std::vector<NormalizedText> Split(NormalizedText text, bool) const override {
    return Cut(text, Apply(behavior_, FindPieces(*regex_, text, invert_)));
  }

 private:
  std::unique_ptr<UnicodeRegex> regex_;
  Behavior behavior_;
  bool invert_;
};

}  // namespace

std::array<char32_t, 256> ByteCharacters() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    table[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return table;
}

namespace {

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, std::unique_ptr<UnicodeRegex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}

  std::vector<NormalizedText> Split(NormalizedText text, bool) const override {
    // Every piece it is given gets the space, not only the first of the input (the library's).
    if (add_prefix_space_ && !text.empty() && text.front().cp != ' ')
      text.insert(text.begin(), {U' ', text.front().begin, text.front().end});
    std::vector<NormalizedText> words;
    if (regex_) {
      words = Cut(text, FindPieces(*regex_, text, false));
    } else if (!text.empty()) {
      words.push_back(std::move(text));
    }
    static const std::array<char32_t, 256> kBytes = ByteCharacters();
    std::string utf8;
    for (NormalizedText& word : words) {
      NormalizedText bytes;
      for (const NormalizedChar& c : word) {
        utf8.clear();
        AppendUtf8(c.cp, &utf8);
        for (unsigned char b : utf8) bytes.push_back({kBytes[b], c.begin, c.end});
      }
      word = std::move(bytes);
    }
    return words;
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<UnicodeRegex> regex_;  // null when use_regex is off
};

}  // namespace

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseSplitPreTokenizer(const std::string& label,
                                                                     const Json& json) {
  const Json& pattern = json.value("pattern", Json::object());
  std::unique_ptr<UnicodeRegex> regex;
  if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
    auto compiled = UnicodeRegex::Compile(pattern["Regex"].get<std::string>());
    if (!compiled.ok()) {
      return absl::DataLossError(
          absl::StrCat(label, ": pre_tokenizer Split pattern: ", compiled.status().message()));
    }
    regex = std::move(*compiled);
  } else if (pattern.contains("String") && pattern["String"].is_string()) {
    // A literal: every ASCII symbol escaped, so none is read as syntax.
    std::string quoted;
    for (char c : pattern["String"].get<std::string>()) {
      if (static_cast<unsigned char>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c)))
        quoted += '\\';
      quoted += c;
    }
    ASSIGN_OR_RETURN(regex, UnicodeRegex::Compile(quoted));
  } else {
    return absl::DataLossError(absl::StrCat(
        label, ": pre_tokenizer Split pattern must be {\"Regex\": ...} or {\"String\": ...}"));
  }
  static const std::pair<const char*, Behavior> kBehaviors[] = {
      {"Removed", Behavior::kRemoved},
      {"Isolated", Behavior::kIsolated},
      {"MergedWithPrevious", Behavior::kMergedWithPrevious},
      {"MergedWithNext", Behavior::kMergedWithNext},
      {"Contiguous", Behavior::kContiguous}};
  const std::string name = json.value("behavior", "");
  for (const auto& [known, behavior] : kBehaviors) {
    if (name == known)
      return std::make_unique<SplitPattern>(std::move(regex), behavior,
                                            json.value("invert", false));
  }
  return absl::DataLossError(absl::StrCat(
      label, ": pre_tokenizer Split behavior '", name,
      "' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous"));
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseByteLevelPreTokenizer(const std::string&,
                                                                         const Json& json) {
  std::unique_ptr<UnicodeRegex> regex;
  if (json.value("use_regex", true)) {
    ASSIGN_OR_RETURN(regex, UnicodeRegex::Compile(kGpt2Pattern));
  }
  return std::make_unique<ByteLevel>(json.value("add_prefix_space", true), std::move(regex));
}

}  // namespace embedding::model_store
