#include "model_store/architecture.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace embedding::model_store {
namespace {

ArchitectureSpec BertSpec() {
  ArchitectureSpec spec;
  spec.model_type = "bert";
  spec.weight_prefixes = {"bert.", ""};
  spec.word_embeddings = "embeddings.word_embeddings";
  spec.position_embeddings = "embeddings.position_embeddings";
  spec.token_type_embeddings = "embeddings.token_type_embeddings";
  spec.embeddings_norm = "embeddings.LayerNorm";
  spec.layer_prefix = "encoder.layer.";
  spec.query = "attention.self.query";
  spec.key = "attention.self.key";
  spec.value = "attention.self.value";
  spec.attention_output = "attention.output.dense";
  spec.attention_norm = "attention.output.LayerNorm";
  spec.intermediate = "intermediate.dense";
  spec.output = "output.dense";
  spec.output_norm = "output.LayerNorm";
  return spec;
}

const std::vector<ArchitectureSpec>& Registry() {
  static const auto* const kSpecs = new std::vector<ArchitectureSpec>{BertSpec()};
  return *kSpecs;
}

}  // namespace

absl::StatusOr<const ArchitectureSpec*> FindArchitecture(const std::string& model_type) {
  for (const auto& spec : Registry()) {
    if (spec.model_type == model_type) return &spec;
  }
  return absl::InvalidArgumentError(absl::StrCat("config.json: unsupported model_type '",
                                                 model_type,
                                                 "'; supported: ", SupportedArchitectures()));
}

std::string SupportedArchitectures() {
  std::vector<std::string> names;
  for (const auto& spec : Registry()) names.push_back(spec.model_type);
  return absl::StrJoin(names, ", ");
}

}  // namespace embedding::model_store
