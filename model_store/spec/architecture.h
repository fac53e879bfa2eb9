// Architectures as data: one generic encoder, described per family by the names of its config
// fields and weights and by which layers it uses. Adding a family means adding a spec here;
// the forward pass has no architecture branches.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/spec/classifier_head.h"
#include "nlohmann/json_fwd.hpp"

namespace embedding::model_store {

struct EncoderConfig;

enum class PositionKind {
  kAbsolute,              // a learned table indexed from 0 (BERT)
  kAbsoluteAfterPadding,  // a learned table indexed from pad_token_id + 1 (RoBERTa, XLM-R)
  kRotary,                // no table: rotary on queries and keys (NomicBert, GTE)
  kAlibi,                 // no table: -m_h |i - j| on head h's logits (JinaBERT v2)
};

// The feed-forward block: out(act(in(x))), or gated over a [2 x intermediate] projection,
// out(act(first) * second) or out(first * act(second)). Which half is activated differs by
// family, and getting it wrong still runs: each spec names it.
enum class MlpKind { kPlain, kGatedActivateFirst, kGatedActivateSecond };

// Reads what a family's config.json says about its structure (positions, norms, biases, the
// activation) in that family's own keys, after the sizes. DATA_LOSS naming `label` and the
// field.
using ConfigMapping = absl::Status (*)(const std::string& label, const nlohmann::json& json,
                                       EncoderConfig* config);

// The config.json field names a family uses for the encoder's sizes.
struct ConfigFieldNames {
  std::string hidden_size = "hidden_size";
  std::string num_layers = "num_hidden_layers";
  std::string num_heads = "num_attention_heads";
  std::string intermediate_size = "intermediate_size";
  std::string max_positions = "max_position_embeddings";
  std::string layer_norm_eps = "layer_norm_eps";
  std::string activation = "hidden_act";
  // The window when max_positions is absent (T5 has no position table; 0: the field is
  // required).
  int64_t default_max_positions = 0;
};

struct ArchitectureSpec {
  // The family's own name (the demo writer's --architecture); its model_type unless two
  // families share one.
  std::string family;
  std::string model_type;
  // Other model_type spellings of the same family (GTE's "new" is also shipped as "gte").
  std::vector<std::string> model_type_aliases;
  // Families sharing a model_type are told apart by one config field: the spec applies when
  // `variant_field` holds one of `variant_values`, or is absent and `variant_default` is set
  // (BERT and JinaBERT v2 are both "bert", told apart by position_embedding_type).
  std::string variant_field;
  std::vector<std::string> variant_values;
  bool variant_default = true;
  ConfigMapping map_config = nullptr;
  // Hub checkpoints of the family, ", "-separated (docs/models.md's table lists each).
  std::string known_checkpoints;
  ConfigFieldNames fields;
  PositionKind positions = PositionKind::kAbsolute;
  // Checkpoints save weights with or without the base-model prefix; tried in order.
  std::vector<std::string> weight_prefixes;

  std::string word_embeddings;
  std::string position_embeddings;    // empty for rotary positions
  std::string token_type_embeddings;  // bound when config.type_vocab_size > 0
  // MPNet: one learned relative position bias, [buckets, heads], shared by every layer (empty:
  // none).
  std::string relative_attention_bias;
  std::string embeddings_norm;  // empty: none (the decoders)
  // Layer i's weights are `layer_prefix + i + "." + suffix`.
  std::string layer_prefix;
  // Either one fused [3 x hidden, hidden] projection, or three separate ones.
  std::string fused_qkv;
  std::string query, key, value;
  // Qwen3: an RMSNorm over each head's queries and keys, before rotary. Empty: none.
  std::string query_norm, key_norm;
  std::string attention_output;
  std::string attention_norm;
  // The feed-forward input projection: [intermediate, hidden] plain, [2 x intermediate,
  // hidden] gated, where a family that stores the two halves apart names the second `mlp_gate`.
  MlpKind mlp = MlpKind::kPlain;
  std::string mlp_in;
  std::string mlp_gate;
  std::string mlp_out;
  std::string output_norm;
  // Gemma3's sandwich: a norm on the attention's and the MLP's output before each residual
  // add (x + post(f(pre(x)))). Empty: none.
  std::string attention_post_norm, output_post_norm;
  // A mixture of experts in place of the MLP in the layers EncoderConfig::IsMoeLayer names
  // (NomicBert v2's megablocks layout): the router's linear layer, the experts' stacked w1 and
  // w2 ([experts x intermediate, hidden] each; an expert is w2_e^T act(w1_e x)) and their
  // shared output bias. Empty router: none.
  struct MoeNames {
    std::string router, w1, w2, bias;
  } moe;
  // Added to every norm's weight at load: Gemma's RMSNorm multiplies by (1 + w).
  double norm_weight_offset = 0.0;
  // A language model's layout (Qwen, Mistral, Llama): its demo model gets a byte-level BPE
  // tokenizer appending an end token, last-token pooling and Qwen3's instruction prompt.
  bool decoder = false;
  // ModernBERT: its first layer has no attention norm, and a final norm follows the layers.
  bool first_layer_attention_norm = true;
  std::string final_norm;  // empty: none
  // transformers' <Family>ForSequenceClassification head; no steps where none is served.
  ClassifierHeadSpec classifier;
  // The masked-LM head SPLADE reads (transformers' <Family>ForMaskedLM): act(transform) then
  // its norm, then the decoder onto the vocabulary. Empty `transform`: none is served.
  struct MlmHead {
    std::string transform;       // a [hidden, hidden] linear layer, with bias
    std::string transform_norm;  // a LayerNorm
    std::string decoder;         // [vocab, hidden]; absent from a checkpoint that ties it
    std::string decoder_bias;    // the [vocab] bias tensor's full name
  } mlm_head;
};

// The spec a config.json describes, by its model_type and, where families share one, the
// variant field. INVALID_ARGUMENT listing the supported types, or naming the variant field and
// the values it may hold.
absl::StatusOr<const ArchitectureSpec*> FindArchitectureForConfig(const nlohmann::json& config);
// The spec whose `family` is `name`; INVALID_ARGUMENT listing the families otherwise.
absl::StatusOr<const ArchitectureSpec*> FindFamily(const std::string& name);

// Comma-separated supported model types, for messages and ListModels.
std::string SupportedArchitectures();

// Every spec, in registry order (docs/models.md's table is checked against it).
const std::vector<ArchitectureSpec>& AllArchitectures();

}  // namespace embedding::model_store
