// Architectures as data: one generic encoder, described per family by the names of its config
// fields and weights and by which layers it uses. Adding a family means adding a spec here;
// the forward pass has no architecture branches.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::model_store {

enum class PositionKind {
  kAbsolute,               // a learned table indexed from 0 (BERT)
  kAbsoluteAfterPadding,   // a learned table indexed from pad_token_id + 1 (RoBERTa, XLM-R)
  kRotary,                 // no table: rotary on queries and keys (NomicBert)
};

// The config.json field names a family uses for the encoder's sizes.
struct ConfigFieldNames {
  std::string hidden_size = "hidden_size";
  std::string num_layers = "num_hidden_layers";
  std::string num_heads = "num_attention_heads";
  std::string intermediate_size = "intermediate_size";
  std::string max_positions = "max_position_embeddings";
  std::string layer_norm_eps = "layer_norm_eps";
  std::string activation = "hidden_act";
};

struct ArchitectureSpec {
  std::string model_type;
  // Hub checkpoints of the family, ", "-separated (the README's table lists each).
  std::string known_checkpoints;
  ConfigFieldNames fields;
  PositionKind positions = PositionKind::kAbsolute;
  // Checkpoints save weights with or without the base-model prefix; tried in order.
  std::vector<std::string> weight_prefixes;

  std::string word_embeddings;
  std::string position_embeddings;    // empty for rotary positions
  std::string token_type_embeddings;  // bound when config.type_vocab_size > 0
  std::string embeddings_norm;
  // Layer i's weights are `layer_prefix + i + "." + suffix`.
  std::string layer_prefix;
  // Either one fused [3 x hidden, hidden] projection, or three separate ones.
  std::string fused_qkv;
  std::string query, key, value;
  std::string attention_output;
  std::string attention_norm;
  // The feed-forward input projection; with `mlp_gate`, the gated form
  // out(in(x) * act(gate(x))), otherwise out(act(in(x))).
  std::string mlp_in;
  std::string mlp_gate;
  std::string mlp_out;
  std::string output_norm;
};

// The spec for `model_type`; INVALID_ARGUMENT listing the supported types otherwise.
absl::StatusOr<const ArchitectureSpec*> FindArchitecture(const std::string& model_type);

// Comma-separated supported model types, for messages and ListModels.
std::string SupportedArchitectures();

// Every spec, in registry order (the README's table is checked against it).
const std::vector<ArchitectureSpec>& AllArchitectures();

}  // namespace embedding::model_store
