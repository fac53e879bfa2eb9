#include "model_store/demo/demo_vocabulary.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "model_store/text/unicode_text.h"

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

absl::StatusOr<std::set<std::string>> ReadLowercaseWords(const std::string& word_list_path) {
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
  return words;
}

absl::Status CheckMinimum(int target_size) {
  if (target_size >= kMinVocabulary) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("vocab_size: ", target_size, " is below the minimum of ", kMinVocabulary));
}

}  // namespace

absl::StatusOr<std::vector<std::pair<std::string, double>>> BuildDemoUnigramVocabulary(
    const std::string& word_list_path, int target_size) {
  RETURN_IF_ERROR(CheckMinimum(target_size));
  ASSIGN_OR_RETURN(std::set<std::string> words, ReadLowercaseWords(word_list_path));
  const std::string kSpace = "\u2581";
  // Substrings of "▁word" up to 8 bytes (ASCII words, so characters), counted over the list.
  std::unordered_map<std::string, int64_t> counts;
  int64_t total = 0;
  for (const auto& w : words) {
    const std::string marked = kSpace + w;
    const size_t first = kSpace.size();  // substrings start at "▁" or at a letter
    for (size_t begin = 0; begin < marked.size(); begin = begin == 0 ? first : begin + 1) {
      for (size_t end = begin + (begin == 0 ? first + 1 : 1);
           end <= marked.size() && end - begin <= (begin == 0 ? first + 7 : 8); ++end) {
        ++counts[marked.substr(begin, end - begin)];
        ++total;
      }
    }
  }
  auto score_of = [&](const std::string& piece) {
    auto it = counts.find(piece);
    constexpr double kUnseen = -16.0;  // below any counted substring over ~10^6 counts
    return it == counts.end()
               ? kUnseen
               : std::log(static_cast<double>(it->second) / static_cast<double>(total));
  };

  std::vector<std::pair<std::string, double>> vocab = {
      {"<s>", 0.0}, {"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}};
  std::set<std::string> seen = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};
  auto add = [&](const std::string& piece, double score) {
    if (static_cast<int>(vocab.size()) < target_size - 1 && seen.insert(piece).second)
      vocab.emplace_back(piece, score);
  };
  for (int b = 0; b < 256; ++b) add(absl::StrFormat("<0x%02X>", b), 0.0);
  add(kSpace, score_of(kSpace));
  std::vector<std::string> characters = SingleCharacters();
  for (char c = 'A'; c <= 'Z'; ++c) characters.emplace_back(1, c);  // Unigram demos keep case
  for (const auto& c : characters) {
    add(c, score_of(c));
    add(kSpace + c, score_of(kSpace + c));
  }
  std::vector<std::pair<int64_t, std::string>> ranked;
  for (const auto& [piece, count] : counts) {
    if (count >= 2) ranked.emplace_back(-count, piece);
  }
  std::sort(ranked.begin(), ranked.end());
  for (const auto& [count, piece] : ranked) add(piece, score_of(piece));
  if (static_cast<int>(vocab.size()) < target_size - 1) {
    return absl::InvalidArgumentError(absl::StrCat("vocab_size: the word list yields only ",
                                                   vocab.size() + 1, " pieces, fewer than ",
                                                   target_size));
  }
  vocab.emplace_back("<mask>", 0.0);
  return vocab;
}

absl::StatusOr<std::vector<std::string>> BuildDemoVocabulary(const std::string& word_list_path,
                                                             int target_size) {
  RETURN_IF_ERROR(CheckMinimum(target_size));
  ASSIGN_OR_RETURN(std::set<std::string> words, ReadLowercaseWords(word_list_path));

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
