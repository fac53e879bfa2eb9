// The optional sentence-transformers files beside a checkpoint: modules.json,
// the Pooling module's config.json, and config_sentence_transformers.json (prompts).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/formats/pooling.h"

namespace embedding::model_store {

// The Transformer module's own config, one name per model class sentence-transformers knew
// (`sentence_bert_config.json` in most repositories); the first present is read.
inline constexpr const char* kTransformerConfigFiles[] = {
    "sentence_bert_config.json",       "sentence_roberta_config.json",
    "sentence_distilbert_config.json", "sentence_camembert_config.json",
    "sentence_albert_config.json",     "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json"};

// A sentence-transformers Dense module (`2_Dense/` ...): `activation(W x + b)` on each pooled
// vector, in modules.json's order, before Normalize.
struct DenseModuleConfig {
  std::string dir;  // the module's folder: its config.json and weights
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  // The activation's class as sentence-transformers saves it, short: "Tanh", "Identity",
  // "ReLU", "GELU" or "Sigmoid".
  std::string activation = "Tanh";
};

struct SentenceTransformersConfig {
  // Unset when the directory declares no pooling (then the model's default applies).
  std::optional<PoolingMode> pooling;
  // The length the model is used at, special tokens included (`max_seq_length`: 256 for
  // all-MiniLM-L6-v2 against 512 positions); unset when no Transformer config sets it.
  std::optional<int64_t> max_seq_length;
  std::string max_seq_length_file;  // the file that set it, for logs and refusals
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;
  std::vector<DenseModuleConfig> dense;  // in order; empty for most models
  // A SPLADE model (sentence-transformers' SparseEncoder: MLMTransformer + SpladePooling, max
  // over tokens of log(1 + relu(MLM logits))): sparse output over the vocabulary, no dense.
  bool splade = false;
};

// Reads whatever of these files exist; absent files are not an error. DATA_LOSS naming the
// file for malformed JSON, a `max_seq_length` that is not an integer in [2, 2^31) (null is
// unset, as sentence-transformers reads it) or a Dense config out of range; INVALID_ARGUMENT
// for a pooling mode, an activation, a SpladePooling other than max over relu, or a module
// type we do not implement (a model served
// without one of its modules would be wrong, not approximate).
absl::StatusOr<SentenceTransformersConfig> LoadSentenceTransformersConfig(
    const std::string& model_dir);

}  // namespace embedding::model_store
