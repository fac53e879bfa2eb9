// What a cross-encoder or classifier is, as data: transformers' *ForSequenceClassification head
// per family (the steps after pooling), and what a checkpoint's config.json says of its labels.
// A family without a head spec is served as an embedder only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/spec/score_prompt.h"
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
  // The language-model head whose rows `classifier_from_token` reads in place of the last
  // step (the decoders' lm_head); a checkpoint that ties it reads word_embeddings instead.
  // Empty: classifier_from_token is refused.
  std::string lm_head;
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
  // vLLM's classifier_from_token (a language model served as a classifier, as Qwen3-Reranker
  // is): the last step is these tokens' rows of the LM head, so no other row is read. Two
  // tokens make one label scored by sigmoid(logit[1] - logit[0]), which is softmax over the
  // pair's [1]; more make one label each. Empty for a trained head.
  std::vector<std::string> from_tokens;
  std::vector<int32_t> from_token_ids;  // their vocabulary ids, resolved with the tokenizer
  // tie_word_embeddings (transformers' default: true): a checkpoint without lm_head's tensor
  // reads those rows of the word embeddings.
  bool lm_head_tied = true;
  // The text pairs are read inside (Qwen3-Reranker's recipe); empty: the tokenizer's pair
  // template alone.
  ScorePrompt prompt;
};

// Reads architectures, num_labels / id2label and problem_type for the family's head, or
// classifier_from_token and the prompt (is_original_qwen3_reranker, score_prompt). A
// *ForSequenceClassification checkpoint of a family without a head spec is refused
// (INVALID_ARGUMENT naming config.json's architectures and the families with heads), and so is
// classifier_from_token for a family without an LM head (naming the field); DATA_LOSS naming the
// field for a malformed id2label, problem_type, classifier_from_token or prompt.
absl::StatusOr<ClassifierConfig> ReadClassifierConfig(const std::string& label,
                                                      const nlohmann::json& config,
                                                      const std::string& family,
                                                      const ClassifierHeadSpec& head);

}  // namespace embedding::model_store
