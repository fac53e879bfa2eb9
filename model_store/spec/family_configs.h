// Each family's config mapping (ArchitectureSpec::map_config): the structure its config.json
// states in its own keys, read into EncoderConfig. A key of one family is never read for
// another.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "model_store/spec/encoder_config.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {

// BERT and XLM-RoBERTa: hidden_act.
absl::Status MapBertConfig(const std::string& label, const nlohmann::json& json,
                           EncoderConfig* config);
// MPNet: hidden_act; relative_attention_num_buckets must be 32 (the bucketing transformers
// applies whatever the table's size); positions from padding index 1 whatever pad_token_id.
absl::Status MapMpnetConfig(const std::string& label, const nlohmann::json& json,
                            EncoderConfig* config);
// DistilBERT: activation; no token types.
absl::Status MapDistilBertConfig(const std::string& label, const nlohmann::json& json,
                                 EncoderConfig* config);
// NomicBert: activation_function (swiglu or geglu), rotary_emb_*, max_trained_positions,
// prenorm, qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias.
// (nomic_bert_moe: the same, with a plain GELU MLP and moe_every_n_layers, num_experts,
// moe_top_k; moe_normalize_expert_weights other than false is refused.)
absl::Status MapNomicBertConfig(const std::string& label, const nlohmann::json& json,
                                EncoderConfig* config);
// Jina's XLM-RoBERTa with rotary positions (jina-embeddings-v3): hidden_act, rotary_emb_base,
// rotary_emb_dim (a head's width by default), rotary_emb_interleaved, matryoshka_dimensions; the
// task adapters lora_adaptations, lora_rank and lora_alpha.
absl::Status MapXlmRobertaFlashConfig(const std::string& label, const nlohmann::json& json,
                                      EncoderConfig* config);
// JinaBERT v2: feed_forward_type (geglu or reglu), ALiBi slopes for num_attention_heads.
absl::Status MapJinaBertConfig(const std::string& label, const nlohmann::json& json,
                               EncoderConfig* config);
// ModernBERT: hidden_activation, norm_bias, attention_bias, mlp_bias; which layers are global
// from layer_types or global_attn_every_n_layers, the band from local_attention; rotary bases
// from rope_parameters or global_rope_theta / local_rope_theta.
absl::Status MapModernBertConfig(const std::string& label, const nlohmann::json& json,
                                 EncoderConfig* config);
// GTE "new" (Alibaba-NLP/new-impl): hidden_act, position_embedding_type (rope), rope_theta,
// rope_scaling ({"type": "ntk", "factor": f}), logn_attention_scale, logn_attention_clip1,
// layer_norm_type (layer_norm), pack_qkv (true).
absl::Status MapGteConfig(const std::string& label, const nlohmann::json& json,
                          EncoderConfig* config);

// The decoders (Qwen3, Qwen2, Mistral, Llama): hidden_act, rms_norm_eps, num_key_value_heads,
// head_dim, rope_theta, attention_bias, mlp_bias; causal unless use_bidirectional_attention or
// is_causal: false. rope_scaling other than the
// default, partial_rotary_factor below 1 and use_sliding_window are refused naming the field.
absl::Status MapDecoderConfig(const std::string& label, const nlohmann::json& json,
                              EncoderConfig* config);
// Mistral: the decoder's, and sliding_window as a causal band in every layer.
absl::Status MapMistralConfig(const std::string& label, const nlohmann::json& json,
                              EncoderConfig* config);
// Gemma3's text model: the decoder's keys, hidden_activation, query_pre_attn_scalar,
// embeddings scaled by sqrt(hidden_size), layer_types (or sliding_window_pattern) with
// sliding_window as a band (bidirectional under use_bidirectional_attention), rope_theta for
// full layers and rope_local_base_freq for sliding ones. attn_logit_softcapping is refused.
absl::Status MapGemma3Config(const std::string& label, const nlohmann::json& json,
                             EncoderConfig* config);
// T5's encoder: d_kv, relative_attention_num_buckets and _max_distance, layer_norm_epsilon;
// RMSNorm pre-norm without biases, no type table, logits unscaled (T5 folds 1/sqrt(d) into its
// weights). feed_forward_proj chose the spec (relu or gated-gelu, whose GELU is tanh's).
absl::Status MapT5Config(const std::string& label, const nlohmann::json& json,
                         EncoderConfig* config);
// Qwen2: the decoder's, with biases on q, k, v and none on o, as its code fixes them.
absl::Status MapQwen2Config(const std::string& label, const nlohmann::json& json,
                            EncoderConfig* config);

}  // namespace embedding::model_store
