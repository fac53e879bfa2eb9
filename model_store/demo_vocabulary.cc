#include "model_store/demo_vocabulary.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "model_store/unicode_text.h"

namespace embedding::model_store {
namespace {

constexpr int kMinVocabulary = 8000;
constexpr int kSuffixPieces = 1500;

bool IsLowercaseAscii(const std::string& word) {
  return !word.empty() &&
         std::all_of(word.begin(), word.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

std::vector<std::string> SingleCharacters() {
  std::vector<char32_t> chars;
  for (char32_t c = 33; c < 127; ++c) {
    if (!(c >= 'A' && c <= 'Z')) chars.push_back(c);  // the demo tokenizer lowercases
  }
  for (char32_t c = 0xDF; c <= 0xFF; ++c) {
    if (c != 0xF7) chars.push_back(c);  // Latin-1 lowercase letters
  }
  for (char32_t c = 0x3B1; c <= 0x3C9; ++c) chars.push_back(c);          // Greek
  for (char32_t c = 0x430; c <= 0x44F; ++c) chars.push_back(c);          // Cyrillic
  for (char32_t c = 0x4E00; c < 0x4E00 + 1200; ++c) chars.push_back(c);  // common CJK block
  std::vector<std::string> out;
  for (char32_t c : chars) {
    std::string s;
    AppendUtf8(c, &s);
    out.push_back(s);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> BuildDemoVocabulary(const std::string& word_list_path,
                                                             int target_size) {
  if (target_size < kMinVocabulary) {
    return absl::InvalidArgumentError(
        absl::StrCat("vocab_size: ", target_size, " is below the minimum of ", kMinVocabulary));
  }
  std::ifstream in(word_list_path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(word_list_path, ": cannot read the word list (install wamerican)"));
  }
  std::set<std::string> words;
  std::string line;
  while (std::getline(in, line)) {
    if (IsLowercaseAscii(line)) words.insert(line);
  }

  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  std::set<std::string> seen(vocab.begin(), vocab.end());
  auto add = [&](const std::string& token) {
    if (static_cast<int>(vocab.size()) < target_size && seen.insert(token).second)
      vocab.push_back(token);
  };
  for (const auto& c : SingleCharacters()) add(c);
  for (const auto& c : SingleCharacters()) {
    char32_t cp;
    DecodeCodePoint(c, 0, &cp);
    if (!IsBertPunctuation(cp)) add("##" + c);  // so any word of these letters tokenizes
  }

  // The commonest endings of length 2..4 become continuation pieces.
  std::map<std::string, int> ending_counts;
  for (const auto& w : words) {
    for (size_t n = 2; n <= 4 && n < w.size(); ++n) ++ending_counts[w.substr(w.size() - n)];
  }
  std::vector<std::pair<int, std::string>> endings;
  for (const auto& [ending, count] : ending_counts) endings.emplace_back(-count, ending);
  std::sort(endings.begin(), endings.end());
  for (size_t i = 0; i < endings.size() && i < kSuffixPieces; ++i) add("##" + endings[i].second);

  // Shortest words first: they are the commonest, and ties break alphabetically.
  std::vector<std::string> by_length(words.begin(), words.end());
  std::stable_sort(by_length.begin(), by_length.end(),
                   [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  for (const auto& w : by_length) add(w);
  if (static_cast<int>(vocab.size()) < target_size) {
    return absl::InvalidArgumentError(absl::StrCat("vocab_size: the word list yields only ",
                                                   vocab.size(), " tokens, fewer than ",
                                                   target_size));
  }
  return vocab;
}

}  // namespace embedding::model_store
