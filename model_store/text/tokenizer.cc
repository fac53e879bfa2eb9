#include "model_store/text/tokenizer.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "model_store/text/added_tokens.h"
#include "model_store/text/unicode_text.h"

namespace embedding::model_store {
namespace {

// The start of the character holding byte `offset` of valid UTF-8 (`offset` itself on a
// boundary or at the end).
uint32_t CharacterStart(std::string_view text, uint32_t offset) {
  while (offset > 0 && offset < text.size() &&
         (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80)
    --offset;
  return offset;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(TokenizerParts parts) {
  auto tokenizer = std::unique_ptr<Tokenizer>(new Tokenizer());
  TokenizerConfig& config = parts.config;
  int32_t max_id = -1;
  for (const auto& [token, id] : parts.vocab) {
    if (id < 0) return absl::DataLossError(absl::StrCat("vocab: token '", token, "' has id ", id));
    max_id = std::max(max_id, id);
  }
  for (const AddedToken& token : config.added_tokens) {
    if (token.id < 0)
      return absl::DataLossError(
          absl::StrCat("added_tokens: '", token.content, "' has id ", token.id));
    max_id = std::max(max_id, token.id);
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
  for (const AddedToken& token : config.added_tokens)
    tokenizer->id_to_token_[token.id] = token.content;
  for (AddedToken token : config.added_tokens) {
    if (token.normalized && parts.normalizer) {
      // Matched in normalized text, so its content is normalized too (the library's rule).
      NormalizedText content = DecodeNormalized(token.content, 0);
      parts.normalizer->Normalize(&content);
      token.content = EncodeUtf8(content, 0, content.size());
    }
    if (token.content.empty()) continue;
    (token.normalized ? tokenizer->normalized_added_ : tokenizer->raw_added_).push_back(token);
  }
  // Longest first, so "[SEP]" never hides inside a shorter match at one position.
  for (auto* tokens : {&tokenizer->raw_added_, &tokenizer->normalized_added_}) {
    std::stable_sort(tokens->begin(), tokens->end(), [](const auto& a, const auto& b) {
      return a.content.size() > b.content.size();
    });
  }
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
  // Added tokens matched in the raw text split it first; the pieces between are tokenized.
  size_t pos = 0;
  for (const AddedTokenMatch& match : FindAddedTokens(text, raw_added_)) {
    TokenizeSegment(text.substr(pos, match.begin - pos), static_cast<uint32_t>(pos), &out);
    out.ids.push_back(raw_added_[match.token].id);
    out.spans.push_back({static_cast<uint32_t>(match.begin), static_cast<uint32_t>(match.end)});
    pos = match.end;
  }
  TokenizeSegment(text.substr(pos), static_cast<uint32_t>(pos), &out);
  if (config_.trim_offsets) TrimOffsets(text, &out);
  return out;
}

void Tokenizer::TokenizeSegment(std::string_view text, uint32_t base, TokenizedText* out) const {
  if (text.empty()) return;
  NormalizedText normalized = DecodeNormalized(text, base);
  if (normalizer_) normalizer_->Normalize(&normalized);
  if (normalized_added_.empty()) return TokenizeNormalized(std::move(normalized), base == 0, out);
  // Added tokens marked `normalized` are matched in the normalized text.
  const std::string utf8 = EncodeUtf8(normalized, 0, normalized.size());
  std::vector<size_t> char_at(utf8.size() + 1, 0);  // byte offset -> character index
  for (size_t i = 0, offset = 0; i < normalized.size(); ++i) {
    char_at[offset] = i;
    std::string one;
    AppendUtf8(normalized[i].cp, &one);
    offset += one.size();
  }
  char_at[utf8.size()] = normalized.size();
  size_t pos = 0;
  for (const AddedTokenMatch& match : FindAddedTokens(utf8, normalized_added_)) {
    const size_t first = char_at[match.begin], last = char_at[match.end];
    TokenizeNormalized(NormalizedText(normalized.begin() + pos, normalized.begin() + first),
                       base == 0 && pos == 0, out);
    out->ids.push_back(normalized_added_[match.token].id);
    out->spans.push_back({normalized[first].begin, normalized[last - 1].end});
    pos = last;
  }
  TokenizeNormalized(NormalizedText(normalized.begin() + pos, normalized.end()),
                     base == 0 && pos == 0, out);
}

void Tokenizer::TokenizeNormalized(NormalizedText normalized, bool at_text_start,
                                   TokenizedText* out) const {
  if (normalized.empty()) return;
  for (const NormalizedText& word : pre_tokenizer_->Split(std::move(normalized), at_text_start)) {
    model_->Tokenize(word, out);
  }
}

// The byte-level space ("Ġ", U+0120) at a token's edges is left out of its span, as
// Hugging Face's ByteLevel post-processor trims offsets.
void Tokenizer::TrimOffsets(std::string_view text, TokenizedText* out) const {
  constexpr absl::string_view kSpace = "\u0120";
  auto count = [&](absl::string_view token, bool from_end) {
    uint32_t n = 0;
    while (from_end ? absl::ConsumeSuffix(&token, kSpace) : absl::ConsumePrefix(&token, kSpace))
      ++n;
    return n;
  };
  for (size_t i = 0; i < out->ids.size(); ++i) {
    // Counted from each end of the whole token: a token of spaces only is trimmed from both.
    const std::string& token = IdToToken(out->ids[i]);
    uint32_t leading = count(token, false);
    const uint32_t trailing = count(token, true);
    TextSpan& span = out->spans[i];
    const bool first = i == 0 || span.begin == 0;
    if (first && config_.add_prefix_space && leading == 1) leading = 0;
    span.begin = std::min(span.begin + leading, span.end);
    if (span.end >= trailing) span.end = std::max(span.end - trailing, span.begin);
    // Spaces counted in bytes can end inside the character a prefix space was aligned to; the
    // library's character offsets round down, and a span stays on character boundaries.
    span.begin = CharacterStart(text, span.begin);
    span.end = CharacterStart(text, span.end);
  }
}

PairEncoding Tokenizer::EncodePair(const std::vector<int32_t>& first,
                                   const std::vector<int32_t>& second) const {
  PairEncoding out;
  out.ids.reserve(first.size() + second.size() + num_pair_special_tokens());
  for (const PairTemplatePiece& piece : config_.pair) {
    const std::vector<int32_t>& ids = piece.kind == PairTemplatePiece::kFirst    ? first
                                      : piece.kind == PairTemplatePiece::kSecond ? second
                                                                                 : piece.ids;
    if (piece.kind == PairTemplatePiece::kSecond) {
      out.second_begin = static_cast<int32_t>(out.ids.size());
    }
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    out.type_ids.insert(out.type_ids.end(), ids.size(), piece.type_id);
  }
  return out;
}

int Tokenizer::num_pair_special_tokens() const {
  size_t count = 0;
  for (const PairTemplatePiece& piece : config_.pair) count += piece.ids.size();
  return static_cast<int>(count);
}

std::vector<int32_t> Tokenizer::AddSpecialTokens(const std::vector<int32_t>& content) const {
  std::vector<int32_t> ids;
  ids.reserve(content.size() + num_special_tokens());
  ids.insert(ids.end(), config_.prefix_ids.begin(), config_.prefix_ids.end());
  ids.insert(ids.end(), content.begin(), content.end());
  ids.insert(ids.end(), config_.suffix_ids.begin(), config_.suffix_ids.end());
  return ids;
}

int32_t Tokenizer::TokenToId(std::string_view token) const {
  for (size_t id = 0; id < id_to_token_.size(); ++id) {
    if (id_to_token_[id] == token) return static_cast<int32_t>(id);
  }
  return -1;
}

void Tokenizer::AppendToPairTemplate(std::vector<int32_t> ids) {
  PairTemplatePiece piece;
  piece.ids = std::move(ids);
  for (const PairTemplatePiece& given : config_.pair) {
    if (given.kind == PairTemplatePiece::kSecond) piece.type_id = given.type_id;
  }
  config_.pair.push_back(std::move(piece));
}

const std::string& Tokenizer::IdToToken(int32_t id) const {
  static const std::string* const kEmpty = new std::string();
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return *kEmpty;
  return id_to_token_[id];
}

}  // namespace embedding::model_store
