// What a cross-encoder or classifier is, as data: transformers' *ForSequenceClassification head
// per family (the steps after pooling), and what a checkpoint's config.json says of its labels.
// A family without a head spec is served as an embedder only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace embedding::model_store {

// One step of a head: a linear layer, then an activation, then a LayerNorm.
struct ClassifierStep {
  std::string linear;          // tensor names without ".weight" / ".bias"
  bool under_prefix = false;   // under the base model's prefix (BERT's "bert.pooler.dense")
  std::string activation;      // "tanh", "relu", "config" (config.json's), "" for none
  std::string norm;            // a LayerNorm after the activation; "" for none
  // config.json's boolean saying whether the linear layer has a bias; "" : it always has one.
  std::string bias_field;
  bool bias = true;  // false: never one (the decoders' `score`)
};

struct ClassifierHeadSpec {
  // transformers' class for it (what a checkpoint's config.json names; the demo writer's).
  std::string architecture;
  std::vector<ClassifierStep> steps;  // empty: the family has no classification head here
  // config.json's field choosing the pooled token ("cls" or "mean"); "": the first token.
  std::string pooling_field;
  // The decoders' heads read the last token (the only one that saw the whole pair).
  bool last_token = false;
  // config.json's field naming the activation of a "config" step.
  std::string activation_field;
};

// What a model does with its encoder's output.
enum class ModelKind {
  kEmbedding,   // vectors (every *Model, *ForMaskedLM ... checkpoint)
  kReranker,    // *ForSequenceClassification with one label: a relevance score per pair
  kClassifier,  // *ForSequenceClassification with N > 1 labels
};

// "embedding", "reranker", "classifier": ModelInfo's and /info's spelling.
const char* ModelKindName(ModelKind kind);

// How a head's logits become scores: problem_type (multi-label: sigmoid per label; one label:
// sigmoid; else softmax), or sentence-transformers' activation_fn in config.json (Identity: the
// logits as they are).
enum class ScoreFunction { kSigmoid, kSoftmax, kIdentity };

// "sigmoid", "softmax", "identity".
const char* ScoreFunctionName(ScoreFunction function);

struct ClassifierConfig {
  ModelKind kind = ModelKind::kEmbedding;
  std::string architecture;         // config.json's architectures[0]
  std::vector<std::string> labels;  // by index: id2label, or LABEL_i
  ScoreFunction score = ScoreFunction::kSigmoid;
  bool mean_pooling = false;  // the head reads the mean of the tokens, not the first one
  bool last_token_pooling = false;  // ... or the last token
  std::string activation;  // the head's "config" activation (ModernBERT: classifier_activation)
  // Which optional head biases exist, by the spec's bias_field names.
  std::vector<std::string> biases_absent;
};

// Reads architectures, num_labels / id2label and problem_type for the family's head. A
// *ForSequenceClassification checkpoint of a family without a head spec is refused
// (INVALID_ARGUMENT naming config.json's architectures and the families with heads); DATA_LOSS
// naming the field for a malformed id2label or problem_type.
absl::StatusOr<ClassifierConfig> ReadClassifierConfig(const std::string& label,
                                                      const nlohmann::json& config,
                                                      const std::string& family,
                                                      const ClassifierHeadSpec& head);

}  // namespace embedding::model_store
