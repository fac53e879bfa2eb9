// Architectures as data: one generic post-norm encoder, described per family by the names
// of its weights. Adding XLM-RoBERTa or a long-context variant means adding an entry here.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::model_store {

struct ArchitectureSpec {
  std::string model_type;
  // Checkpoints save weights with or without the base-model prefix; tried in order.
  std::vector<std::string> weight_prefixes;

  std::string word_embeddings;
  std::string position_embeddings;
  std::string token_type_embeddings;
  std::string embeddings_norm;
  // Layer i's weights are `layer_prefix + i + "." + suffix`.
  std::string layer_prefix;
  std::string query;
  std::string key;
  std::string value;
  std::string attention_output;
  std::string attention_norm;
  std::string intermediate;
  std::string output;
  std::string output_norm;
};

// The spec for `model_type`; INVALID_ARGUMENT listing the supported types otherwise.
absl::StatusOr<const ArchitectureSpec*> FindArchitecture(const std::string& model_type);

// Comma-separated supported model types, for messages and ListModels.
std::string SupportedArchitectures();

}  // namespace embedding::model_store
