#include "model_store/text/pre_tokenizer.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {
using Json = nlohmann::json;

// Whitespace separates words; with `isolate_punctuation`, each punctuation character is a word.
class WhitespaceSplit : public PreTokenizer {
 public:
  explicit WhitespaceSplit(bool isolate_punctuation) : isolate_punctuation_(isolate_punctuation) {}

  std::vector<NormalizedText> Split(NormalizedText text, bool) const override {
    std::vector<NormalizedText> words;
    NormalizedText word;
    auto flush = [&] {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    };
    for (const NormalizedChar& c : text) {
      if (IsUnicodeWhitespace(c.cp)) {
        flush();
      } else if (isolate_punctuation_ && IsBertPunctuation(c.cp)) {
        flush();
        word.push_back(c);
        flush();
      } else {
        word.push_back(c);
      }
    }
    flush();
    return words;
  }

 private:
  bool isolate_punctuation_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

// Spaces become the replacement ("▁"), one is prepended as the scheme says (spanning the first
// character), and with `split` each replacement starts a new word.
class Metaspace : public PreTokenizer {
 public:
  Metaspace(char32_t replacement, PrependScheme scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {}

  std::vector<NormalizedText> Split(NormalizedText text, bool at_text_start) const override {
    for (NormalizedChar& c : text) {
      if (c.cp == ' ') c.cp = replacement_;
    }
    const bool prepend =
        scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && at_text_start);
    if (prepend && !text.empty() && text.front().cp != replacement_)
      text.insert(text.begin(), {replacement_, text.front().begin, text.front().end});
    std::vector<NormalizedText> words;
    if (!split_) {
      if (!text.empty()) words.push_back(std::move(text));
      return words;
    }
    NormalizedText word;
    for (const NormalizedChar& c : text) {
      if (c.cp == replacement_ && !word.empty()) words.push_back(std::move(word)), word.clear();
      word.push_back(c);
    }
    if (!word.empty()) words.push_back(std::move(word));
    return words;
  }

 private:
  char32_t replacement_;
  PrependScheme scheme_;
  bool split_;
};

class NoSplit : public PreTokenizer {
 public:
  std::vector<NormalizedText> Split(NormalizedText text, bool) const override {
    std::vector<NormalizedText> words;
    if (!text.empty()) words.push_back(std::move(text));
    return words;
  }
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  std::vector<NormalizedText> Split(NormalizedText text, bool at_text_start) const override {
    std::vector<NormalizedText> words;
    words.push_back(std::move(text));
    for (const auto& step : steps_) {
      std::vector<NormalizedText> next;
      for (size_t i = 0; i < words.size(); ++i) {
        const bool at_start = at_text_start && i == 0;
        for (auto& w : step->Split(std::move(words[i]), at_start)) next.push_back(std::move(w));
      }
      words = std::move(next);
    }
    return words;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseMetaspace(const std::string& label,
                                                             const Json& json) {
  const NormalizedText replacement = DecodeNormalized(json.value("replacement", "\u2581"), 0);
  if (replacement.size() != 1) {
    return absl::DataLossError(
        absl::StrCat(label, ": pre_tokenizer Metaspace replacement must be one character"));
  }
  // Older files say add_prefix_space; newer ones prepend_scheme.
  PrependScheme scheme =
      json.value("add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
  if (auto it = json.find("prepend_scheme"); it != json.end() && it->is_string()) {
    const std::string name = it->get<std::string>();
    if (name == "always") {
      scheme = PrependScheme::kAlways;
    } else if (name == "first") {
      scheme = PrependScheme::kFirst;
    } else if (name == "never") {
      scheme = PrependScheme::kNever;
    } else {
      return absl::DataLossError(absl::StrCat(label, ": pre_tokenizer Metaspace prepend_scheme '",
                                              name, "' is not always, first or never"));
    }
  }
  return std::make_unique<Metaspace>(replacement[0].cp, scheme, json.value("split", true));
}

}  // namespace

std::unique_ptr<PreTokenizer> MakeBertPreTokenizer() {
  return std::make_unique<WhitespaceSplit>(true);
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const std::string& label,
                                                                const Json& json) {
  if (json.is_null()) return std::make_unique<NoSplit>();
  const std::string type = json.value("type", "");
  if (type == "BertPreTokenizer") return MakeBertPreTokenizer();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplit>(false);
  if (type == "Metaspace") return ParseMetaspace(label, json);
  if (type == "Split") return ParseSplitPreTokenizer(label, json);
  if (type == "ByteLevel") return ParseByteLevelPreTokenizer(label, json);
  if (type == "Sequence") {
    const Json& list = json.value("pretokenizers", Json());
    if (!list.is_array())
      return absl::DataLossError(absl::StrCat(label, ": pre_tokenizer Sequence needs a list"));
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const Json& item : list) {
      ASSIGN_OR_RETURN(auto step, ParsePreTokenizer(label, item));
      steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      label, ": pre_tokenizer type '", type,
      "' is not supported (supported: BertPreTokenizer, WhitespaceSplit, Metaspace, Split, "
      "ByteLevel, Sequence, null)"));
}

}  // namespace embedding::model_store
