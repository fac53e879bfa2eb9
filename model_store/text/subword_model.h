// Tokenizer models: turn one pre-tokenized word into vocabulary ids with original byte spans.
// WordPiece (greedy longest match, BERT), Unigram (Viterbi over piece scores, SentencePiece) and
// BPE (ranked merges, GPT-2 and the byte-level models after it), as `tokenizer.json` configures
// them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/span.h"
#include "model_store/text/normalized_text.h"

namespace embedding::model_store {

// Byte span [begin, end) in the original UTF-8 text.
using TextSpan = ::embedding::Span;

struct TokenizedText {
  std::vector<int32_t> ids;  // content tokens only, no special tokens
  std::vector<TextSpan> spans;
};

class SubwordModel {
 public:
  virtual ~SubwordModel() = default;
  // Appends the tokens of `word` (non-empty) to `out`. Thread-safe.
  virtual void Tokenize(const NormalizedText& word, TokenizedText* out) const = 0;
};

struct WordPieceOptions {
  int32_t unk_id = 0;
  std::string continuing_subword_prefix = "##";
  int max_input_chars_per_word = 100;
};
std::unique_ptr<SubwordModel> MakeWordPiece(std::unordered_map<std::string, int32_t> vocab,
                                            WordPieceOptions options);

struct UnigramOptions {
  int32_t unk_id = 0;
  // A piece outside the vocabulary becomes its UTF-8 bytes as <0xNN> pieces, when all exist.
  bool byte_fallback = false;
};
// `pieces[id]` is (piece, log probability). INVALID_ARGUMENT when unk_id is out of range.
absl::StatusOr<std::unique_ptr<SubwordModel>> MakeUnigram(
    std::vector<std::pair<std::string, double>> pieces, UnigramOptions options);

struct BpeOptions {
  std::optional<int32_t> unk_id;  // without one, a character outside the vocabulary is dropped
  bool fuse_unk = false;          // consecutive unknown characters become one unknown token
  // A character outside the vocabulary becomes its UTF-8 bytes as <0xNN> tokens, when all exist.
  bool byte_fallback = false;
  bool ignore_merges = false;  // a word that is itself in the vocabulary is one token
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
};
// `merges` in rank order (first merges first). DATA_LOSS naming the merge's rank when one of
// its parts or their concatenation is not in `vocab`.
absl::StatusOr<std::unique_ptr<SubwordModel>> MakeBpe(
    std::unordered_map<std::string, int32_t> vocab,
    const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);

}  // namespace embedding::model_store
