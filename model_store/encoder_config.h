// Typed mirror of a Hugging Face `config.json` for encoder-only transformers.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace embedding::model_store {

enum class Activation { kGeluErf, kGeluTanh, kRelu };

struct EncoderConfig {
  std::string model_type;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 2;
  int64_t pad_token_id = 0;
  double layer_norm_eps = 1e-12;
  Activation hidden_act = Activation::kGeluErf;
  // Written by write_demo_model: seeded random weights.
  bool demo_model = false;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
};

// Reads and validates `config.json` (positive sizes, hidden divisible by heads, known
// activation). DATA_LOSS names the file and the field; NOT_FOUND when the file is missing.
absl::StatusOr<EncoderConfig> LoadEncoderConfig(const std::string& path);

// Same, from JSON text (for tests and for the demo-model writer's round trip).
absl::StatusOr<EncoderConfig> ParseEncoderConfig(const std::string& label, const std::string& text);

}  // namespace embedding::model_store
