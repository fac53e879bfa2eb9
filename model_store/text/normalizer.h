// Tokenizer normalizers, configured from a `tokenizer.json` "normalizer" object: BertNormalizer,
// NFC/NFD/NFKC/NFKD, Lowercase, Strip, Replace, Precompiled, and Sequence of these. Each
// rewrites NormalizedText in place and keeps every character's original span.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model_store/text/normalized_text.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Thread-safe.
  virtual void Normalize(NormalizedText* text) const = 0;
};

// nullptr for a JSON null (no normalizer). INVALID_ARGUMENT naming `label` and listing the
// supported types for an unknown one; DATA_LOSS for a malformed one.
absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const std::string& label,
                                                            const nlohmann::json& json);

// BERT's normalizer, also what a `vocab.txt` checkpoint's tokenizer_config.json describes.
struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;
  bool lowercase = true;
};
std::unique_ptr<Normalizer> MakeBertNormalizer(const BertNormalizerOptions& options);

}  // namespace embedding::model_store
