// A Hugging Face tokenizer as `tokenizer.json` composes it: added tokens matched in the raw
// text, then normalizer -> pre-tokenizer -> model (WordPiece or Unigram) -> template
// post-processor. Also loads a BERT `vocab.txt` + `tokenizer_config.json`. Every token keeps the
// byte span of the original text it came from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model_store/text/normalizer.h"
#include "model_store/text/pre_tokenizer.h"
#include "model_store/text/subword_model.h"

namespace embedding::model_store {

// A token matched in the text before the subword model sees it (tokenizer.json's added_tokens).
struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool lstrip = false;       // the match takes the whitespace before it
  bool rstrip = false;       // and after it
  bool single_word = false;  // matched only between non-word characters
  bool normalized = false;   // matched in the normalized text, not the raw one
};

// One piece of a post-processor's pair template: special ids, or where the first (A) or second
// (B) sequence goes, each with its token type.
struct PairTemplatePiece {
  enum Kind { kSpecial, kFirst, kSecond };
  Kind kind = kSpecial;
  std::vector<int32_t> ids;  // kSpecial only
  int32_t type_id = 0;
};

// A pair as the model reads it: ids and their token types.
struct PairEncoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
  // Where the second text's tokens begin in `ids`: what comes before depends on the first
  // alone (a reranker's query part, the same for each of its documents).
  int32_t second_begin = 0;
};

struct TokenizerConfig {
  // Post-processor for a single sequence: ids before and after the text.
  std::vector<int32_t> prefix_ids;
  std::vector<int32_t> suffix_ids;
  // Post-processor for a pair (a query and a document for a cross-encoder): empty when the
  // tokenizer defines none.
  std::vector<PairTemplatePiece> pair;
  // Tokens matched in the text before the subword model (e.g. "[SEP]", "<s>", runs of spaces).
  std::vector<AddedToken> added_tokens;
  // A ByteLevel or RoBERTa post-processor's trim_offsets: a token's span leaves out the spaces
  // its byte-level string starts or ends with (one added prefix space excepted).
  bool trim_offsets = false;
  bool add_prefix_space = false;
  int32_t pad_id = 0;
  int32_t unk_id = -1;  // the subword model's unknown token; -1 when it has none
};

// The stages of one tokenizer. `normalizer` may be null.
struct TokenizerParts {
  TokenizerConfig config;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<SubwordModel> model;
  // Every vocabulary token with its id (the model's and the added ones), for IdToToken.
  std::unordered_map<std::string, int32_t> vocab;
};

class Tokenizer {
 public:
  // Reads `tokenizer.json`, or else `vocab.txt` with optional `tokenizer_config.json`.
  // NOT_FOUND when neither exists; DATA_LOSS naming the file and field for bad content;
  // INVALID_ARGUMENT listing supported components for an unsupported model/normalizer.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& model_dir);

  // The text of a tokenizer.json, named `label` in errors (the fuzz target's entry).
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromJson(const std::string& label,
                                                             std::string_view text);

  // From its stages. DATA_LOSS for a negative id.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Create(TokenizerParts parts);

  // Splits `text` into content tokens with their byte spans. INVALID_ARGUMENT naming `field`
  // for invalid UTF-8. Thread-safe; linear in the text length.
  absl::StatusOr<TokenizedText> Tokenize(std::string_view text,
                                         absl::string_view field = "text") const;

  // `content` wrapped in the post-processor's special tokens (e.g. [CLS] ... [SEP]).
  std::vector<int32_t> AddSpecialTokens(const std::vector<int32_t>& content) const;
  int num_special_tokens() const {
    return static_cast<int>(config_.prefix_ids.size() + config_.suffix_ids.size());
  }
  // `first` and `second` (content ids) in the pair template, with their token types: what
  // Hugging Face's tokenizer gives for encode(first, second). Requires has_pair_template().
  PairEncoding EncodePair(const std::vector<int32_t>& first,
                          const std::vector<int32_t>& second) const;
  bool has_pair_template() const { return !config_.pair.empty(); }
  // The special tokens the pair template adds.
  int num_pair_special_tokens() const;

  // The token string for `id`, or "" when out of range.
  const std::string& IdToToken(int32_t id) const;
  // The id of the vocabulary token spelled `token` (as tokenizer.json's vocab spells it), or
  // -1. Linear in the vocabulary: for load time.
  int32_t TokenToId(std::string_view token) const;
  // Appends `ids` to the pair template as special tokens of the second sequence's type: the
  // end of a score prompt (score_prompt.h). For Model::Load, before the tokenizer is shared.
  void AppendToPairTemplate(std::vector<int32_t> ids);
  size_t vocab_size() const { return id_to_token_.size(); }
  const TokenizerConfig& config() const { return config_; }

 private:
  Tokenizer() = default;

  void TokenizeSegment(std::string_view text, uint32_t base, TokenizedText* out) const;
  void TokenizeNormalized(NormalizedText normalized, bool at_text_start, TokenizedText* out) const;
  void TrimOffsets(std::string_view text, TokenizedText* out) const;

  TokenizerConfig config_;
  // added_tokens split by where they are matched; a normalized one's content is normalized.
  std::vector<AddedToken> raw_added_;
  std::vector<AddedToken> normalized_added_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<SubwordModel> model_;
  std::vector<std::string> id_to_token_;
};

}  // namespace embedding::model_store
