// Which files of a Hub repository a served model needs, decided from the repository's file
// listing and its small metadata files: config.json; the weights in the first layout of
// kWeightLayouts the repository has (model.safetensors, or the shards its index names; else
// pytorch_model.bin or its shards); tokenizer.json and/or vocab.txt with tokenizer_config.json
// and special_tokens_map.json; the sentence-transformers files (modules.json, the pooling config
// it names, config_sentence_transformers.json, sentence_bert_config.json or its siblings);
// tempscale.json; bge-m3's heads (sparse_linear and colbert_linear, .safetensors rather than .pt).
// Everything else (ONNX exports, a .bin beside safetensors, images) is left on the Hub.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::model_store {

// Reads a listed metadata file's text (the caller fetches it into the cache first).
using MetadataReader = std::function<absl::StatusOr<std::string>(const std::string& path)>;

// The paths to fetch, every one in `listing`, metadata files first. `repo` names the model in
// errors: NOT_FOUND for a missing config.json, tokenizer, or shard named by the index;
// NOT_FOUND, listing the layouts looked for, for a repository with no weights;
// INVALID_ARGUMENT for a path that could leave the snapshot (see ValidateRepoPath); DATA_LOSS
// for an index or modules.json that does not parse.
absl::StatusOr<std::vector<std::string>> SelectModelFiles(const std::string& repo,
                                                          const std::set<std::string>& listing,
                                                          const MetadataReader& read);

// A repository path is relative, with no empty, "." or ".." part, no backslash or NUL, at most
// 1024 bytes: it stays inside the snapshot folder. INVALID_ARGUMENT naming the path otherwise.
absl::Status ValidateRepoPath(const std::string& path);

}  // namespace embedding::model_store
