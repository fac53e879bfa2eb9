// Writes the files a model directory carries besides its weights: any text file, and the
// sentence-transformers settings (modules.json, 1_Pooling/config.json,
// config_sentence_transformers.json). Used by the demo-model writers.
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {

// INTERNAL naming the path when it cannot be written.
absl::Status WriteTextFile(const std::filesystem::path& path, const std::string& text);

// Transformer then Pooling (`pooling`: cls | mean | max), then Normalize when `normalize`;
// `prompts` is config_sentence_transformers.json's "prompts" object.
absl::Status WriteSentenceTransformersFiles(const std::filesystem::path& root, int hidden_size,
                                            const std::string& pooling, bool normalize,
                                            const nlohmann::json& prompts);

}  // namespace embedding::model_store
