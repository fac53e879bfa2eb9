// Typed mirror of a Hugging Face `config.json` for encoder-only transformers, read through the
// family's ArchitectureSpec (field names, position kind), so the encoder sees one shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/spec/architecture.h"
#include "model_store/spec/classifier_head.h"

namespace embedding::model_store {

enum class Activation { kGeluErf, kGeluTanh, kRelu, kSilu };

// Rotary positions (NomicBert, GTE): the first `dim` features of each head's queries and keys are
// rotated by position-dependent angles with inverse frequencies base^(-2i/dim).
struct RotaryConfig {
  int64_t dim = 0;  // 0: no rotary
  double base = 10000.0;
  bool interleaved = false;  // pairs (0,1),(2,3)... instead of halves (i, i + dim/2)
  // Angles t x f in fp64 (f as the model's fp32 inverse frequencies), then cos and sin to fp32:
  // position 32,000 as accurate as position 100. false: in fp32, as the encoder families'
  // published code computes them (their rounding is part of those models).
  bool exact_angles = false;
  // Dynamic NTK: past `max_trained_positions` tokens the base grows with the sequence length,
  // base * (factor * L / max_trained - (factor - 1))^(dim / (dim - 2)). 0: no scaling.
  double scaling_factor = 0.0;
  int64_t max_trained_positions = 0;
  // Static NTK (GTE's rope_scaling {"type": "ntk"}), at every length: inverse frequencies
  // (base * f)^(-2i/dim) / f^(2/dim). 0: none.
  double static_ntk_factor = 0.0;
};

// GTE's logn attention scale: a sequence of n tokens has its queries scaled by
// ln(n) / ln(trained_length), at least 1 with `clip_at_one`: a length-adaptive temperature
// built into the model, which the request's tau divides further.
struct LognScale {
  bool enabled = false;
  bool clip_at_one = false;
  int64_t trained_length = 0;
  // The factor for a sequence of `length` tokens; 1 when disabled.
  double For(int64_t length) const;
};

struct EncoderConfig {
  std::string model_type;
  std::string family;  // ArchitectureSpec::family: what model info reports
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  // Grouped-query attention: key/value heads, each shared by num_attention_heads / this many
  // query heads. 0: one per query head.
  int64_t num_key_value_heads = 0;
  // A head's width where the config states it (Qwen3: 128 with hidden 1,024 and 16 heads);
  // 0: hidden_size / num_attention_heads.
  int64_t attention_head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 2;
  int64_t pad_token_id = 0;
  double layer_norm_eps = 1e-12;
  Activation hidden_act = Activation::kGeluErf;
  MlpKind mlp = MlpKind::kPlain;  // the family's (ArchitectureSpec::mlp)
  // x + f(norm(x)) instead of norm(x + f(x)).
  bool prenorm = false;
  bool norm_bias = true;  // LayerNorm with a bias (ModernBERT's have none)
  // RMSNorm w x / sqrt(mean(x^2) + eps) instead of LayerNorm (the decoders), in fp32.
  bool rms_norm = false;
  bool attention_bias = true;         // query/key/value
  bool attention_output_bias = true;  // the attention's output projection
  // Query i attends keys j <= i only (a decoder, unless it was trained bidirectional).
  bool causal = false;
  bool mlp_in_bias = true;
  bool mlp_out_bias = true;
  PositionKind positions = PositionKind::kAbsolute;
  // Index of the first token's row in the position table (pad_token_id + 1 for XLM-R).
  int64_t position_offset = 0;
  RotaryConfig rotary;
  // Per head, for ALiBi positions: head h adds -alibi_slopes[h] * |i - j| to its logits.
  std::vector<double> alibi_slopes;
  // MPNet: rows of its learned relative position bias ([buckets, heads]); 0: none.
  int64_t relative_attention_buckets = 0;
  // Where the buckets turn logarithmic up to (T5's relative_attention_max_distance; MPNet 128).
  int64_t relative_attention_max_distance = 128;
  LognScale logn_scale;
  // NomicBert v2's mixture of experts: layer i with i % moe_every == 1 sends each token to the
  // moe_top_k most probable of num_experts experts (a softmax in fp32 over the router's
  // logits), weighted by those probabilities, none dropped. 0: no expert layers.
  int64_t moe_every = 0;
  int64_t num_experts = 0;
  int64_t moe_top_k = 0;
  bool IsMoeLayer(int64_t layer) const { return moe_every > 0 && layer % moe_every == 1; }
  // The logits' scale before τ: 0 for 1/sqrt(head_dim); Gemma3's query_pre_attn_scalar^-1/2.
  double attention_scale = 0.0;
  // The word embeddings' factor (Gemma: sqrt(hidden_size)); 1 for none.
  double embedding_scale = 1.0;
  // Per layer: 0 for global attention, or a local band's half-width (keys |i - j| <= band).
  // Empty: every layer global.
  std::vector<int64_t> layer_bands;
  // Banded layers' rotary base, when it differs from the global one; 0: the same.
  double local_rotary_base = 0.0;
  // jina-embeddings-v3's task adapters (LoRA), by name in the checkpoint's order: a sequence
  // names one (or none: the base weights), and every linear layer and embedding table that has
  // them adds adapter_scale x B_t (A_t x) for its rows, never merged into the weights.
  std::vector<std::string> adapters;
  int64_t adapter_rank = 0;
  double adapter_scale = 0.0;  // lora_alpha / lora_rank
  // The widths the model was trained to be truncated to (jina-embeddings-v3's
  // matryoshka_dimensions), ascending; empty where the config lists none. Reported, not
  // enforced: a request's `dimensions` may take any width up to the vector's.
  std::vector<int64_t> matryoshka_dimensions;
  // Written by write_demo_model: seeded random weights.
  bool demo_model = false;
  // A *ForSequenceClassification checkpoint's head and labels; kind kEmbedding otherwise.
  ClassifierConfig classifier;

  int64_t head_dim() const {
    return attention_head_dim > 0 ? attention_head_dim : hidden_size / num_attention_heads;
  }
  int64_t key_value_heads() const {
    return num_key_value_heads > 0 ? num_key_value_heads : num_attention_heads;
  }
  // Keys a row of the widest banded layer sees (2 x band + 1, or band + 1 under a causal mask);
  // 0 when every layer is global.
  int64_t local_attention_keys() const {
    int64_t band = 0;
    for (int64_t b : layer_bands) band = b > band ? b : band;
    if (band == 0) return 0;
    return causal ? band + 1 : 2 * band + 1;
  }
  // Longest sequence, special tokens included: the position table less its offset.
  int64_t max_sequence_length() const { return max_position_embeddings - position_offset; }
};

// ALiBi's slopes for `heads` heads (Press et al.): for a power of two n, 2^(-8i/n) for
// i = 1..n; otherwise those of the largest power of two below, then every other slope of twice
// that many (12 heads: 2^-1 ... 2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5).
std::vector<double> AlibiSlopes(int64_t heads);

// Reads and validates `config.json` through the spec of its model_type: the sizes under the
// family's field names (positive, hidden divisible by heads), then its structure through the
// family's config mapping. INVALID_ARGUMENT for an unsupported
// model_type; DATA_LOSS names the file and the field; NOT_FOUND when the file is missing.
// `overrides`, when not empty, is a JSON object whose keys replace config.json's, as vLLM's
// --hf-overrides does (Qwen3-Reranker's architectures and classifier_from_token); errors then
// say so beside the file's name. INVALID_ARGUMENT for overrides that are not a JSON object.
absl::StatusOr<EncoderConfig> LoadEncoderConfig(const std::string& path,
                                                const std::string& overrides = "");

// Same, from JSON text (for tests and for the demo-model writer's round trip).
absl::StatusOr<EncoderConfig> ParseEncoderConfig(const std::string& label, const std::string& text,
                                                 const std::string& overrides = "");

}  // namespace embedding::model_store
