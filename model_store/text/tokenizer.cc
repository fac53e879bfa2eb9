#include "model_store/text/tokenizer.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(TokenizerParts parts) {
  auto tokenizer = std::unique_ptr<Tokenizer>(new Tokenizer());
  TokenizerConfig& config = parts.config;
  int32_t max_id = -1;
  for (const auto& [token, id] : parts.vocab) {
    if (id < 0) return absl::DataLossError(absl::StrCat("vocab: token '", token, "' has id ", id));
    max_id = std::max(max_id, id);
  }
  for (const auto& [token, id] : config.added_tokens) {
    if (id < 0) return absl::DataLossError(absl::StrCat("added_tokens: '", token, "' has id ", id));
    max_id = std::max(max_id, id);
  }
  // Ids are (nearly) dense in every real vocabulary; a stray huge id must not size the table
  // (an id of 2^31 - 2 would ask for 64 GB here).
  const size_t entries = parts.vocab.size() + config.added_tokens.size();
  if (static_cast<size_t>(max_id) >= 2 * entries + 1024) {
    return absl::DataLossError(absl::StrCat("vocab: id ", max_id, " is far beyond the ", entries,
                                            " tokens the files define"));
  }
  tokenizer->id_to_token_.resize(max_id + 1);
  for (const auto& [token, id] : parts.vocab) tokenizer->id_to_token_[id] = token;
  for (const auto& [token, id] : config.added_tokens) tokenizer->id_to_token_[id] = token;
  // Longest added tokens first, so "[SEP]" never hides inside a shorter match at one position.
  std::stable_sort(config.added_tokens.begin(), config.added_tokens.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  config.added_tokens.erase(std::remove_if(config.added_tokens.begin(), config.added_tokens.end(),
                                           [](const auto& t) { return t.first.empty(); }),
                            config.added_tokens.end());
  tokenizer->config_ = std::move(config);
  tokenizer->normalizer_ = std::move(parts.normalizer);
  tokenizer->pre_tokenizer_ = std::move(parts.pre_tokenizer);
  tokenizer->model_ = std::move(parts.model);
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
  if (text.empty()) return;
  NormalizedText normalized = DecodeNormalized(text, base);
  if (normalizer_) normalizer_->Normalize(&normalized);
  for (const NormalizedText& word : pre_tokenizer_->Split(std::move(normalized), base == 0)) {
    model_->Tokenize(word, out);
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
