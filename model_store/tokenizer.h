// BERT-family tokenizer: BERT normalizer, BERT pre-tokenizer, WordPiece, and a template
// post-processor, configured from `tokenizer.json` or from `vocab.txt` + `tokenizer_config.json`.
// Every token keeps the byte span of the original text it came from.
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
#include "common/span.h"

namespace embedding::model_store {

struct TokenizerConfig {
  // BERT normalizer; `normalize` false means the file declared none.
  bool normalize = true;
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;  // already resolved: unset in the file follows `lowercase`
  bool lowercase = true;
  // WordPiece.
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  int max_input_chars_per_word = 100;
  // Post-processor for a single sequence: ids before and after the text.
  std::vector<int32_t> prefix_ids;
  std::vector<int32_t> suffix_ids;
  // Tokens matched verbatim in the raw text before normalization (e.g. "[SEP]").
  std::vector<std::pair<std::string, int32_t>> added_tokens;
  int32_t pad_id = 0;
};

// Byte span [begin, end) in the original UTF-8 text.
using TextSpan = ::embedding::Span;

struct TokenizedText {
  std::vector<int32_t> ids;  // content tokens only, no special tokens
  std::vector<TextSpan> spans;
};

class Tokenizer {
 public:
  // Reads `tokenizer.json`, or else `vocab.txt` with optional `tokenizer_config.json`.
  // NOT_FOUND when neither exists; DATA_LOSS naming the file and field for bad content;
  // INVALID_ARGUMENT listing supported components for an unsupported model/normalizer.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& model_dir);

  // From a parsed configuration and vocabulary (token -> id).
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Create(
      TokenizerConfig config, std::unordered_map<std::string, int32_t> vocab);

  // Splits `text` into content tokens with their byte spans. INVALID_ARGUMENT naming `field`
  // for invalid UTF-8. Thread-safe; linear in the text length.
  absl::StatusOr<TokenizedText> Tokenize(std::string_view text,
                                         absl::string_view field = "text") const;

  // `content` wrapped in the post-processor's special tokens (e.g. [CLS] ... [SEP]).
  std::vector<int32_t> AddSpecialTokens(const std::vector<int32_t>& content) const;
  int num_special_tokens() const {
    return static_cast<int>(config_.prefix_ids.size() + config_.suffix_ids.size());
  }

  // The token string for `id`, or "" when out of range.
  const std::string& IdToToken(int32_t id) const;
  size_t vocab_size() const { return id_to_token_.size(); }
  const TokenizerConfig& config() const { return config_; }

 private:
  struct NormalizedChar;
  Tokenizer() = default;

  void TokenizeSegment(std::string_view text, uint32_t base, TokenizedText* out) const;
  void EmitWord(const std::vector<NormalizedChar>& word, uint32_t word_chars,
                TokenizedText* out) const;

  TokenizerConfig config_;
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  int32_t unk_id_ = 0;
};

}  // namespace embedding::model_store
