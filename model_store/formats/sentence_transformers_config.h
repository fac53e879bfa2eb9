// The optional sentence-transformers files beside a checkpoint: modules.json,
// the Pooling module's config.json, and config_sentence_transformers.json (prompts).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "model_store/formats/pooling.h"

namespace embedding::model_store {

struct SentenceTransformersConfig {
  // Unset when the directory declares no pooling (then the model's default applies).
  std::optional<PoolingMode> pooling;
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;
};

// Reads whatever of these files exist; absent files are not an error. DATA_LOSS naming the
// file for malformed JSON; INVALID_ARGUMENT for a pooling mode we do not implement.
absl::StatusOr<SentenceTransformersConfig> LoadSentenceTransformersConfig(
    const std::string& model_dir);

}  // namespace embedding::model_store
