#include "model_store/tokenizer.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/unicode_text.h"

namespace embedding::model_store {

// A normalized code point and the byte span of the original code point it came from.
struct Tokenizer::NormalizedChar {
  char32_t cp;
  uint32_t begin;
  uint32_t end;
};

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(
    TokenizerConfig config, std::unordered_map<std::string, int32_t> vocab) {
  auto tokenizer = std::unique_ptr<Tokenizer>(new Tokenizer());
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0) return absl::DataLossError(absl::StrCat("vocab: token '", token, "' has id ", id));
    max_id = std::max(max_id, id);
  }
  for (const auto& [token, id] : config.added_tokens) max_id = std::max(max_id, id);
  tokenizer->id_to_token_.resize(max_id + 1);
  for (const auto& [token, id] : vocab) tokenizer->id_to_token_[id] = token;
  for (const auto& [token, id] : config.added_tokens) tokenizer->id_to_token_[id] = token;
  auto unk = vocab.find(config.unk_token);
  if (unk == vocab.end()) {
    return absl::DataLossError(
        absl::StrCat("vocab: unknown token '", config.unk_token, "' is not in the vocabulary"));
  }
  tokenizer->unk_id_ = unk->second;
  if (config.max_input_chars_per_word <= 0) {
    return absl::DataLossError("model.max_input_chars_per_word must be > 0");
  }
  // Longest added tokens first, so "[SEP]" never hides inside a shorter match at one position.
  std::stable_sort(config.added_tokens.begin(), config.added_tokens.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  config.added_tokens.erase(std::remove_if(config.added_tokens.begin(), config.added_tokens.end(),
                                           [](const auto& t) { return t.first.empty(); }),
                            config.added_tokens.end());
  tokenizer->config_ = std::move(config);
  tokenizer->vocab_ = std::move(vocab);
  return tokenizer;
}

absl::StatusOr<TokenizedText> Tokenizer::Tokenize(std::string_view text,
                                                  absl::string_view field) const {
  RETURN_IF_ERROR(ValidateUtf8(text, field));
  if (text.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": text exceeds 4 GiB"));
  }
  TokenizedText out;
  // Added tokens split the raw text first; the pieces between them are tokenized normally.
  const auto& added = config_.added_tokens;
  // Next occurrence of each added token at or after `pos`; refreshed only when passed, so
  // the scan stays linear however many tokens the text holds.
  std::vector<size_t> next;
  for (const auto& token : added) next.push_back(text.find(token.first));
  size_t pos = 0;
  while (pos < text.size()) {
    size_t best_at = std::string_view::npos;
    size_t best = 0;
    for (size_t i = 0; i < added.size(); ++i) {
      if (next[i] != std::string_view::npos && next[i] < pos)
        next[i] = text.find(added[i].first, pos);
      if (next[i] < best_at) {
        best_at = next[i];
        best = i;
      }
    }
    const size_t segment_end = std::min(best_at, text.size());
    TokenizeSegment(text.substr(pos, segment_end - pos), static_cast<uint32_t>(pos), &out);
    if (best_at == std::string_view::npos) break;
    const size_t len = added[best].first.size();
    out.ids.push_back(added[best].second);
    out.spans.push_back({static_cast<uint32_t>(best_at), static_cast<uint32_t>(best_at + len)});
    pos = best_at + len;
  }
  return out;
}

void Tokenizer::TokenizeSegment(std::string_view text, uint32_t base, TokenizedText* out) const {
  const auto max_chars = static_cast<uint32_t>(config_.max_input_chars_per_word);
  std::vector<NormalizedChar> word;
  uint32_t word_chars = 0;  // may exceed word.size(): overlong words stop storing characters
  auto flush = [&] {
    if (word_chars > 0) EmitWord(word, word_chars, out);
    word.clear();
    word_chars = 0;
  };
  auto push_char = [&](const NormalizedChar& c) {
    if (IsUnicodeWhitespace(c.cp)) {
      flush();
    } else if (IsBertPunctuation(c.cp)) {
      flush();
      word.push_back(c);
      word_chars = 1;
      flush();
    } else {
      if (word_chars <= max_chars) {
        word.push_back(c);
      } else {
        word.back().end = c.end;  // keep the span growing without storing the character
      }
      ++word_chars;
    }
  };

  std::vector<char32_t> stage, next_stage;
  size_t offset = 0;
  while (offset < text.size()) {
    char32_t cp;
    const int len = DecodeCodePoint(text, offset, &cp);
    const uint32_t begin = base + static_cast<uint32_t>(offset);
    const uint32_t end = begin + static_cast<uint32_t>(len);
    offset += len;

    stage.assign(1, cp);
    if (config_.normalize) {
      if (config_.clean_text) {
        if (cp == 0 || cp == 0xFFFD || IsBertControl(cp)) continue;
        if (IsBertWhitespace(cp)) stage[0] = ' ';
      }
      if (config_.handle_chinese_chars && IsChineseChar(cp)) stage = {' ', cp, ' '};
      if (config_.strip_accents) {
        next_stage.clear();
        for (char32_t c : stage) AppendCanonicalDecomposition(c, &next_stage);
        stage.clear();
        for (char32_t c : next_stage) {
          if (!IsNonspacingMark(c)) stage.push_back(c);
        }
      }
      if (config_.lowercase) {
        next_stage.clear();
        for (char32_t c : stage) AppendLowercase(c, &next_stage);
        stage.swap(next_stage);
      }
    }
    for (char32_t c : stage) push_char({c, begin, end});
  }
  flush();
}

void Tokenizer::EmitWord(const std::vector<NormalizedChar>& word, uint32_t word_chars,
                         TokenizedText* out) const {
  const TextSpan whole{word.front().begin, word.back().end};
  if (word_chars > static_cast<uint32_t>(config_.max_input_chars_per_word)) {
    out->ids.push_back(unk_id_);
    out->spans.push_back(whole);
    return;
  }
  std::string utf8;
  std::vector<size_t> boundary;  // byte offset of each character in `utf8`, plus the end
  for (const auto& c : word) {
    boundary.push_back(utf8.size());
    AppendUtf8(c.cp, &utf8);
  }
  boundary.push_back(utf8.size());

  // Greedy longest-match-first; one unmatched piece turns the whole word into [UNK].
  const size_t first_piece = out->ids.size();
  const size_t n = word.size();
  std::string key;
  for (size_t start = 0; start < n;) {
    size_t end = n;
    int32_t id = -1;
    for (; end > start; --end) {
      key.assign(start > 0 ? config_.continuing_subword_prefix : std::string());
      key.append(utf8, boundary[start], boundary[end] - boundary[start]);
      auto it = vocab_.find(key);
      if (it != vocab_.end()) {
        id = it->second;
        break;
      }
    }
    if (id < 0) {
      out->ids.resize(first_piece);
      out->spans.resize(first_piece);
      out->ids.push_back(unk_id_);
      out->spans.push_back(whole);
      return;
    }
    out->ids.push_back(id);
    out->spans.push_back({word[start].begin, word[end - 1].end});
    start = end;
  }
}

std::vector<int32_t> Tokenizer::AddSpecialTokens(const std::vector<int32_t>& content) const {
  std::vector<int32_t> ids;
  ids.reserve(content.size() + num_special_tokens());
  ids.insert(ids.end(), config_.prefix_ids.begin(), config_.prefix_ids.end());
  ids.insert(ids.end(), content.begin(), content.end());
  ids.insert(ids.end(), config_.suffix_ids.begin(), config_.suffix_ids.end());
  return ids;
}

const std::string& Tokenizer::IdToToken(int32_t id) const {
  static const std::string* const kEmpty = new std::string();
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return *kEmpty;
  return id_to_token_[id];
}

}  // namespace embedding::model_store
