#include "model_store/spec/family_configs.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/spec/config_fields.h"

namespace embedding::model_store {
namespace {
using Json = nlohmann::json;

// An ungated activation by its Hugging Face name, read from `field` (`fallback` when absent).
absl::Status MapActivation(const std::string& label, const Json& json, const std::string& field,
                           const std::string& fallback, Activation* out) {
  std::string name = fallback;
  RETURN_IF_ERROR(ReadString(label, json, field, &name));
  if (name == "gelu") {
    *out = Activation::kGeluErf;
  } else if (name == "gelu_new" || name == "gelu_pytorch_tanh") {
    *out = Activation::kGeluTanh;
  } else if (name == "relu") {
    *out = Activation::kRelu;
  } else if (name == "silu" || name == "swish") {
    *out = Activation::kSilu;
  } else {
    return absl::DataLossError(
        absl::StrCat(label, ": field '", field, "' is '", name,
                     "'; supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu, swish"));
  }
  return absl::OkStatus();
}

// A field that must hold `expected` when present: a setting this service does not implement
// is refused by name rather than served wrongly.
absl::Status RequireString(const std::string& label, const Json& json, const std::string& field,
                           const std::string& expected) {
  std::string value = expected;
  RETURN_IF_ERROR(ReadString(label, json, field, &value));
  if (value != expected) {
    return absl::DataLossError(
        absl::StrCat(label, ": field '", field, "' is '", value, "'; supported: ", expected));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MapBertConfig(const std::string& label, const Json& json, EncoderConfig* config) {
  return MapActivation(label, json, "hidden_act", "gelu", &config->hidden_act);
}

absl::Status MapMpnetConfig(const std::string& label, const Json& json, EncoderConfig* config) {
  int64_t buckets = 32;
  RETURN_IF_ERROR(ReadPositive(label, json, "relative_attention_num_buckets", false, &buckets));
  if (buckets != 32) {
    return absl::DataLossError(absl::StrCat(
        label, ": field 'relative_attention_num_buckets' is ", buckets,
        "; supported: 32 (transformers' MPNet buckets by 32 whatever the table holds)"));
  }
  config->relative_attention_buckets = buckets;
  config->type_vocab_size = 0;
  // MPNetEmbeddings fixes padding_idx at 1; positions count from 2.
  config->pad_token_id = 1;
  config->position_offset = 2;
  return MapActivation(label, json, "hidden_act", "gelu", &config->hidden_act);
}

absl::Status MapDistilBertConfig(const std::string& label, const Json& json,
                                 EncoderConfig* config) {
  // sinusoidal_pos_embds needs nothing: the sin/cos table is the position embedding's
  // weight, saved in the checkpoint like a learned one.
  config->type_vocab_size = 0;  // no token type embeddings
  return MapActivation(label, json, "activation", "gelu", &config->hidden_act);
}

namespace {

// nomic-embed-text-v2-moe's experts: moe_every_n_layers, num_experts, moe_top_k; the top-k
// weights are used as the softmax gives them (moe_normalize_expert_weights false or null).
absl::Status MapNomicExperts(const std::string& label, const Json& json, EncoderConfig* config) {
  RETURN_IF_ERROR(ReadCount(label, json, "moe_every_n_layers", &config->moe_every));
  if (config->moe_every == 0) return absl::OkStatus();
  RETURN_IF_ERROR(ReadPositive(label, json, "num_experts", true, &config->num_experts));
  RETURN_IF_ERROR(ReadPositive(label, json, "moe_top_k", true, &config->moe_top_k));
  // Every expert is a full MLP in memory: a damaged count is refused before weights are sized.
  if (config->num_experts > 1024 || config->moe_top_k > config->num_experts) {
    return absl::DataLossError(absl::StrCat(label, ": fields 'num_experts' ", config->num_experts,
                                            " and 'moe_top_k' ", config->moe_top_k,
                                            "; supported: 1 <= moe_top_k <= num_experts <= 1024"));
  }
  if (auto it = json.find("moe_normalize_expert_weights");
      it != json.end() && !it->is_null() && *it != false && *it != 0) {
    return absl::DataLossError(absl::StrCat(label, ": field 'moe_normalize_expert_weights' is ",
                                            it->dump(), "; supported: false or null"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MapNomicBertConfig(const std::string& label, const Json& json, EncoderConfig* config) {
  // v1's MLP is gated (swiglu is SiLU, geglu GELU, on the gate); v2's is plain GELU with experts.
  std::string activation = config->mlp == MlpKind::kPlain ? "gelu" : "swiglu";
  RETURN_IF_ERROR(ReadString(label, json, "activation_function", &activation));
  if (activation == "swiglu") {
    config->hidden_act = Activation::kSilu;
  } else if (activation == "geglu" || activation == "gelu") {
    config->hidden_act = Activation::kGeluErf;
  }
  if (config->mlp == MlpKind::kPlain) {
    RETURN_IF_ERROR(MapNomicExperts(label, json, config));
  } else if (auto it = json.find("moe_every_n_layers");
             it != json.end() && it->is_number() && *it != 0) {
    return absl::DataLossError(absl::StrCat(
        label, ": field 'moe_every_n_layers' is ", it->dump(),
        " with a gated MLP; experts are served with activation_function gelu (v2-moe's layout)"));
  }
  RETURN_IF_ERROR(ReadBool(label, json, "prenorm", &config->prenorm));
  RETURN_IF_ERROR(ReadBool(label, json, "qkv_proj_bias", &config->attention_bias));
  config->attention_output_bias = config->attention_bias;  // out_proj shares the flag
  RETURN_IF_ERROR(ReadBool(label, json, "mlp_fc1_bias", &config->mlp_in_bias));
  RETURN_IF_ERROR(ReadBool(label, json, "mlp_fc2_bias", &config->mlp_out_bias));
  double fraction = 1.0;
  RETURN_IF_ERROR(ReadNumber(label, json, "rotary_emb_fraction", 0.0, 1.0, &fraction));
  RotaryConfig& rotary = config->rotary;
  rotary.dim = static_cast<int64_t>(static_cast<double>(config->head_dim()) * fraction);
  if (rotary.dim < 2 || rotary.dim % 2 != 0) {
    return absl::DataLossError(absl::StrCat(label, ": field 'rotary_emb_fraction' gives ",
                                            rotary.dim,
                                            " rotary features per head; need an "
                                            "even number >= 2"));
  }
  RETURN_IF_ERROR(ReadNumber(label, json, "rotary_emb_base", 1.0, 1e12, &rotary.base));
  RETURN_IF_ERROR(ReadBool(label, json, "rotary_emb_interleaved", &rotary.interleaved));
  RETURN_IF_ERROR(
      ReadNumber(label, json, "rotary_scaling_factor", 0.0, 1e6, &rotary.scaling_factor));
  // nomic's own config class defaults max_trained_positions to 2,048.
  rotary.max_trained_positions = 2048;
  return ReadPositive(label, json, "max_trained_positions", false, &rotary.max_trained_positions);
}

absl::Status MapXlmRobertaFlashConfig(const std::string& label, const Json& json,
                                      EncoderConfig* config) {
  RETURN_IF_ERROR(MapActivation(label, json, "hidden_act", "gelu", &config->hidden_act));
  RotaryConfig& rotary = config->rotary;
  rotary.dim = config->head_dim();
  RETURN_IF_ERROR(ReadPositive(label, json, "rotary_emb_dim", false, &rotary.dim));
  if (rotary.dim % 2 != 0 || rotary.dim > config->head_dim()) {
    return absl::DataLossError(absl::StrCat(label, ": field 'rotary_emb_dim' is ", rotary.dim,
                                            "; allowed an even number up to the head's width ",
                                            config->head_dim()));
  }
  RETURN_IF_ERROR(ReadNumber(label, json, "rotary_emb_base", 1.0, 1e12, &rotary.base));
  RETURN_IF_ERROR(ReadBool(label, json, "rotary_emb_interleaved", &rotary.interleaved));
  if (const auto dims = json.find("matryoshka_dimensions");
      dims != json.end() && !dims->is_null()) {
    for (const Json& dim : dims->is_array() ? *dims : Json::array({nullptr})) {
      const int64_t last =
          config->matryoshka_dimensions.empty() ? 0 : config->matryoshka_dimensions.back();
      if (!dim.is_number_integer() || dim.get<int64_t>() <= last ||
          dim.get<int64_t>() > config->hidden_size) {
        return absl::DataLossError(
            absl::StrCat(label, ": field 'matryoshka_dimensions' is ", dims->dump().substr(0, 80),
                         "; allowed ascending widths in [1, ", config->hidden_size, "]"));
      }
      config->matryoshka_dimensions.push_back(dim.get<int64_t>());
    }
  }
  const auto names = json.find("lora_adaptations");
  if (names == json.end() || names->is_null()) return absl::OkStatus();
  if (!names->is_array() || names->empty() || names->size() > 64) {
    return absl::DataLossError(absl::StrCat(label, ": field 'lora_adaptations' is ",
                                            names->dump().substr(0, 80),
                                            "; allowed a list of 1 to 64 task names"));
  }
  for (const Json& name : *names) {
    if (!name.is_string() || name.get<std::string>().empty() ||
        std::find(config->adapters.begin(), config->adapters.end(), name) !=
            config->adapters.end()) {
      return absl::DataLossError(absl::StrCat(label, ": field 'lora_adaptations' holds ",
                                              name.dump().substr(0, 80),
                                              "; allowed distinct non-empty task names"));
    }
    config->adapters.push_back(name.get<std::string>());
  }
  config->adapter_rank = 4;  // jina's XLMRobertaFlashConfig defaults
  double alpha = 1.0;
  RETURN_IF_ERROR(ReadPositive(label, json, "lora_rank", false, &config->adapter_rank));
  RETURN_IF_ERROR(ReadNumber(label, json, "lora_alpha", 0.0, 1e6, &alpha));
  if (config->adapter_rank > 1024) {
    return absl::DataLossError(absl::StrCat(label, ": field 'lora_rank' is ", config->adapter_rank,
                                            "; allowed [1, 1024]"));
  }
  config->adapter_scale = alpha / static_cast<double>(config->adapter_rank);
  return absl::OkStatus();
}

absl::Status MapJinaBertConfig(const std::string& label, const Json& json, EncoderConfig* config) {
  std::string feed_forward = "geglu";
  RETURN_IF_ERROR(ReadString(label, json, "feed_forward_type", &feed_forward));
  if (feed_forward == "geglu") {
    config->hidden_act = Activation::kGeluErf;
  } else if (feed_forward == "reglu") {
    config->hidden_act = Activation::kRelu;
  } else {
    return absl::DataLossError(absl::StrCat(label, ": field 'feed_forward_type' is '", feed_forward,
                                            "'; supported: geglu, reglu"));
  }
  config->mlp_in_bias = false;  // gated_layers has none; wo does
  config->alibi_slopes = AlibiSlopes(config->num_attention_heads);
  return absl::OkStatus();
}

namespace {

// rope_parameters' entry for one attention kind: {"rope_type": "default", "rope_theta": x}.
absl::Status ReadRopeParameters(const std::string& label, const Json& parameters,
                                const std::string& kind, double* theta) {
  const auto entry = parameters.find(kind);
  if (entry == parameters.end() || entry->is_null()) return absl::OkStatus();
  const std::string field = absl::StrCat(label, ": rope_parameters.", kind);
  if (!entry->is_object()) {
    return absl::DataLossError(absl::StrCat(field, " must be an object"));
  }
  RETURN_IF_ERROR(RequireString(field, *entry, "rope_type", "default"));
  return ReadNumber(field, *entry, "rope_theta", 1.0, 1e12, theta);
}

// layer_types (transformers v5's spelling of which layers slide) into `sliding`, one per
// layer; false when the config has none (the caller's legacy keys decide).
absl::StatusOr<bool> ReadLayerTypes(const std::string& label, const Json& json, int64_t layers,
                                    std::vector<bool>* sliding) {
  auto types = json.find("layer_types");
  if (types == json.end() || types->is_null()) return false;
  if (!types->is_array() || static_cast<int64_t>(types->size()) != layers) {
    return absl::DataLossError(
        absl::StrCat(label, ": field 'layer_types' must list ", layers, " layers"));
  }
  sliding->assign(layers, false);
  for (int64_t i = 0; i < layers; ++i) {
    const Json& type = (*types)[i];
    if (type != "sliding_attention" && type != "full_attention") {
      return absl::DataLossError(absl::StrCat(label, ": field 'layer_types[", i, "]' is ",
                                              type.dump(),
                                              "; supported: full_attention, sliding_attention"));
    }
    (*sliding)[i] = type == "sliding_attention";
  }
  return true;
}

// The rotary bases of full and sliding layers: rope_parameters per layer kind (v5), else the
// family's two legacy fields; each left as given where the config is silent.
absl::Status ReadLayerRotaryBases(const std::string& label, const Json& json,
                                  const std::string& full_field, const std::string& sliding_field,
                                  double* full, double* sliding) {
  if (auto parameters = json.find("rope_parameters");
      parameters != json.end() && !parameters->is_null()) {
    if (!parameters->is_object()) {
      return absl::DataLossError(
          absl::StrCat(label, ": field 'rope_parameters' must be an object"));
    }
    RETURN_IF_ERROR(ReadRopeParameters(label, *parameters, "full_attention", full));
    return ReadRopeParameters(label, *parameters, "sliding_attention", sliding);
  }
  RETURN_IF_ERROR(ReadNumber(label, json, full_field, 1.0, 1e12, full));
  return ReadNumber(label, json, sliding_field, 1.0, 1e12, sliding);
}

}  // namespace

absl::Status MapModernBertConfig(const std::string& label, const Json& json,
                                 EncoderConfig* config) {
  RETURN_IF_ERROR(MapActivation(label, json, "hidden_activation", "gelu", &config->hidden_act));
  config->prenorm = true;
  config->norm_bias = false;
  config->attention_bias = false;
  bool mlp_bias = false;
  RETURN_IF_ERROR(ReadBool(label, json, "norm_bias", &config->norm_bias));
  RETURN_IF_ERROR(ReadBool(label, json, "attention_bias", &config->attention_bias));
  config->attention_output_bias = config->attention_bias;  // Wo shares the flag
  RETURN_IF_ERROR(ReadBool(label, json, "mlp_bias", &mlp_bias));
  config->mlp_in_bias = config->mlp_out_bias = mlp_bias;
  // Which layers attend globally: layer_types (transformers v5), else every n-th from 0.
  const int64_t layers = config->num_hidden_layers;
  std::vector<bool> sliding;
  ASSIGN_OR_RETURN(const bool typed, ReadLayerTypes(label, json, layers, &sliding));
  if (!typed) {
    int64_t every = 3;  // transformers' default
    RETURN_IF_ERROR(ReadPositive(label, json, "global_attn_every_n_layers", false, &every));
    for (int64_t i = 0; i < layers; ++i) sliding.push_back(i % every != 0);
  }
  // local_attention is the whole window: a local layer attends |i - j| <= local_attention / 2.
  int64_t window = 128;
  RETURN_IF_ERROR(ReadPositive(label, json, "local_attention", false, &window));
  if (window < 2) {
    return absl::DataLossError(absl::StrCat(label, ": field 'local_attention' must be >= 2"));
  }
  for (int64_t i = 0; i < layers; ++i) config->layer_bands.push_back(sliding[i] ? window / 2 : 0);
  RotaryConfig& rotary = config->rotary;
  rotary.dim = config->head_dim();
  if (rotary.dim % 2 != 0) {
    return absl::DataLossError(absl::StrCat(label,
                                            ": rotary positions need an even head "
                                            "size, not ",
                                            rotary.dim));
  }
  // transformers' defaults, then either spelling.
  rotary.base = 160000.0;
  double local_base = 10000.0;
  RETURN_IF_ERROR(ReadLayerRotaryBases(label, json, "global_rope_theta", "local_rope_theta",
                                       &rotary.base, &local_base));
  config->local_rotary_base = local_base;
  return absl::OkStatus();
}

absl::Status MapGteConfig(const std::string& label, const Json& json, EncoderConfig* config) {
  RETURN_IF_ERROR(MapActivation(label, json, "hidden_act", "gelu", &config->hidden_act));
  RETURN_IF_ERROR(RequireString(label, json, "position_embedding_type", "rope"));
  RETURN_IF_ERROR(RequireString(label, json, "layer_norm_type", "layer_norm"));
  bool packed_qkv = true;
  RETURN_IF_ERROR(ReadBool(label, json, "pack_qkv", &packed_qkv));
  if (!packed_qkv) {
    return absl::DataLossError(
        absl::StrCat(label, ": field 'pack_qkv' is false; supported: true (one qkv_proj)"));
  }
  // The up half of up_gate_proj has no bias; q, k, v, o and down do.
  config->mlp_in_bias = false;
  RotaryConfig& rotary = config->rotary;
  rotary.dim = config->head_dim();
  if (rotary.dim % 2 != 0) {
    return absl::DataLossError(absl::StrCat(label,
                                            ": rotary positions need an even head "
                                            "size, not ",
                                            rotary.dim));
  }
  RETURN_IF_ERROR(ReadNumber(label, json, "rope_theta", 1.0, 1e12, &rotary.base));
  if (auto it = json.find("rope_scaling"); it != json.end() && !it->is_null()) {
    if (!it->is_object()) {
      return absl::DataLossError(absl::StrCat(label,
                                              ": field 'rope_scaling' must be an object "
                                              "or null"));
    }
    const std::string field = label + ": rope_scaling";
    RETURN_IF_ERROR(RequireString(field, *it, "type", "ntk"));
    if (it->contains("mixed_b") && !(*it)["mixed_b"].is_null()) {
      return absl::DataLossError(absl::StrCat(label,
                                              ": field 'rope_scaling.mixed_b' is set; "
                                              "supported: fixed NTK scaling only"));
    }
    double factor = 0.0;
    RETURN_IF_ERROR(ReadNumber(field, *it, "factor", 0.0, 1e6, &factor));
    if (factor == 0.0) {
      return absl::DataLossError(absl::StrCat(label, ": field 'rope_scaling.factor' is missing"));
    }
    // The published code scales only when its cache, max_position_embeddings x factor
    // positions, outgrows max_position_embeddings: for a factor above 1, at every length.
    if (factor > 1.0) rotary.static_ntk_factor = factor;
  }
  LognScale& logn = config->logn_scale;
  RETURN_IF_ERROR(ReadBool(label, json, "logn_attention_scale", &logn.enabled));
  RETURN_IF_ERROR(ReadBool(label, json, "logn_attention_clip1", &logn.clip_at_one));
  logn.trained_length = config->max_position_embeddings;
  if (logn.enabled && logn.trained_length < 2) {
    return absl::DataLossError(absl::StrCat(label,
                                            ": logn_attention_scale needs "
                                            "max_position_embeddings >= 2"));
  }
  return absl::OkStatus();
}

namespace {

// Settings a decoder may carry that change its output and that this service does not implement:
// refused by name rather than served wrongly.
absl::Status RefuseDecoderExtensions(const std::string& label, const Json& json) {
  if (auto it = json.find("rope_scaling"); it != json.end() && !it->is_null()) {
    std::string type = "default";
    if (it->is_object()) {
      RETURN_IF_ERROR(ReadString(label + ": rope_scaling", *it, "rope_type", &type));
      RETURN_IF_ERROR(ReadString(label + ": rope_scaling", *it, "type", &type));
    }
    if (type != "default") {
      return absl::DataLossError(absl::StrCat(label, ": field 'rope_scaling' is ", it->dump(),
                                              "; supported: null (plain rotary)"));
    }
  }
  double partial = 1.0;
  RETURN_IF_ERROR(ReadNumber(label, json, "partial_rotary_factor", 0.0, 1.0, &partial));
  if (partial != 1.0) {
    return absl::DataLossError(
        absl::StrCat(label, ": field 'partial_rotary_factor' is ", partial, "; supported: 1"));
  }
  // Qwen2/Qwen3 apply their window to the layers from max_window_layers on, a scheme whose
  // masks have changed between transformers releases: refused, not guessed.
  bool use_sliding_window = false;
  RETURN_IF_ERROR(ReadBool(label, json, "use_sliding_window", &use_sliding_window));
  if (use_sliding_window) {
    return absl::DataLossError(absl::StrCat(
        label, ": field 'use_sliding_window' is true; supported: false (every layer global)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MapDecoderConfig(const std::string& label, const Json& json, EncoderConfig* config) {
  RETURN_IF_ERROR(MapActivation(label, json, "hidden_act", "silu", &config->hidden_act));
  RETURN_IF_ERROR(RefuseDecoderExtensions(label, json));
  config->prenorm = true;
  config->rms_norm = true;
  config->norm_bias = false;
  config->type_vocab_size = 0;
  config->layer_norm_eps = 1e-6;
  RETURN_IF_ERROR(ReadNumber(label, json, "rms_norm_eps", 0.0, 1.0, &config->layer_norm_eps));
  RETURN_IF_ERROR(
      ReadPositive(label, json, "num_key_value_heads", false, &config->num_key_value_heads));
  RETURN_IF_ERROR(ReadPositive(label, json, "head_dim", false, &config->attention_head_dim));
  // Llama, Mistral and Qwen3: one flag for q, k, v and o, off unless set.
  config->attention_bias = false;
  RETURN_IF_ERROR(ReadBool(label, json, "attention_bias", &config->attention_bias));
  config->attention_output_bias = config->attention_bias;
  bool mlp_bias = false;
  RETURN_IF_ERROR(ReadBool(label, json, "mlp_bias", &mlp_bias));
  config->mlp_in_bias = config->mlp_out_bias = mlp_bias;
  // Causal, unless the checkpoint was trained bidirectional (either spelling).
  bool bidirectional = false, causal = true;
  RETURN_IF_ERROR(ReadBool(label, json, "use_bidirectional_attention", &bidirectional));
  RETURN_IF_ERROR(ReadBool(label, json, "is_causal", &causal));
  config->causal = causal && !bidirectional;
  RotaryConfig& rotary = config->rotary;
  rotary.dim = config->head_dim();
  if (rotary.dim % 2 != 0) {
    return absl::DataLossError(
        absl::StrCat(label, ": rotary positions need an even head size, not ", rotary.dim));
  }
  rotary.base = 10000.0;
  RETURN_IF_ERROR(ReadNumber(label, json, "rope_theta", 1.0, 1e12, &rotary.base));
  // A 32k window turns its fastest pair through 32,000 radians: fp32's rounding of t x f there
  // is 2e-3 radians, so angles are computed in fp64.
  rotary.exact_angles = true;
  return absl::OkStatus();
}

absl::Status MapMistralConfig(const std::string& label, const Json& json, EncoderConfig* config) {
  RETURN_IF_ERROR(MapDecoderConfig(label, json, config));
  // Query i attends keys i - window < j <= i, in every layer. (Qwen2 and Qwen3 carry the key
  // too but apply it only under use_sliding_window, which MapDecoderConfig refuses.)
  if (auto it = json.find("sliding_window"); it != json.end() && !it->is_null()) {
    int64_t window = 0;
    RETURN_IF_ERROR(ReadPositive(label, json, "sliding_window", false, &window));
    if (window < 2 || !config->causal) {
      return absl::DataLossError(absl::StrCat(label, ": field 'sliding_window' is ", window,
                                              window < 2 ? "; supported: >= 2 or null"
                                                         : " on a bidirectional model; "
                                                           "supported: null"));
    }
    if (window < config->max_position_embeddings) {
      config->layer_bands.assign(config->num_hidden_layers, window - 1);
    }
  }
  return absl::OkStatus();
}

absl::Status MapGemma3Config(const std::string& label, const Json& json, EncoderConfig* config) {
  RETURN_IF_ERROR(MapDecoderConfig(label, json, config));
  RETURN_IF_ERROR(
      MapActivation(label, json, "hidden_activation", "gelu_pytorch_tanh", &config->hidden_act));
  if (auto it = json.find("attn_logit_softcapping"); it != json.end() && !it->is_null()) {
    return absl::DataLossError(absl::StrCat(label, ": field 'attn_logit_softcapping' is ",
                                            it->dump(), "; supported: null (Gemma3's)"));
  }
  double scalar = 256.0;  // Gemma3TextConfig's default
  RETURN_IF_ERROR(ReadNumber(label, json, "query_pre_attn_scalar", 0.0, 1e9, &scalar));
  config->attention_scale = 1.0 / std::sqrt(scalar);
  config->embedding_scale = std::sqrt(static_cast<double>(config->hidden_size));
  // Which layers slide: layer_types, else every sliding_window_pattern-th layer is full.
  const int64_t layers = config->num_hidden_layers;
  std::vector<bool> sliding;
  ASSIGN_OR_RETURN(const bool typed, ReadLayerTypes(label, json, layers, &sliding));
  if (!typed) {
    int64_t pattern = 6;
    RETURN_IF_ERROR(ReadPositive(label, json, "sliding_window_pattern", false, &pattern));
    for (int64_t i = 0; i < layers; ++i) sliding.push_back((i + 1) % pattern != 0);
  }
  int64_t window = 4096;
  RETURN_IF_ERROR(ReadPositive(label, json, "sliding_window", false, &window));
  if (window < 2) {
    return absl::DataLossError(absl::StrCat(label, ": field 'sliding_window' must be >= 2"));
  }
  // Causal (modeling_gemma3's sliding_window_overlay): keys i - window < j <= i. Bidirectional:
  // Gemma3TextConfig.__post_init__ first rewrites window to window // 2 + 1, and the
  // bidirectional overlay keeps |i - j| < that, so the radius is window // 2 (TEI's gemma3.rs).
  const int64_t band = config->causal ? window - 1 : window / 2;
  for (int64_t i = 0; i < layers; ++i)
    config->layer_bands.push_back(
        sliding[i] && band < config->max_position_embeddings - 1 ? band : 0);
  RotaryConfig& rotary = config->rotary;
  rotary.base = 1000000.0;
  double local_base = 10000.0;
  RETURN_IF_ERROR(ReadLayerRotaryBases(label, json, "rope_theta", "rope_local_base_freq",
                                       &rotary.base, &local_base));
  config->local_rotary_base = local_base;
  // Gemma3's published code computes the angles t x f in fp32: their rounding is the model's.
  rotary.exact_angles = false;
  return absl::OkStatus();
}

absl::Status MapT5Config(const std::string& label, const Json& json, EncoderConfig* config) {
  config->hidden_act = config->mlp == MlpKind::kPlain ? Activation::kRelu : Activation::kGeluTanh;
  config->prenorm = true;
  config->rms_norm = true;
  config->norm_bias = false;
  config->attention_bias = config->attention_output_bias = false;
  config->mlp_in_bias = config->mlp_out_bias = false;
  config->type_vocab_size = 0;
  config->attention_scale = 1.0;
  config->layer_norm_eps = 1e-6;
  RETURN_IF_ERROR(ReadNumber(label, json, "layer_norm_epsilon", 0.0, 1.0, &config->layer_norm_eps));
  RETURN_IF_ERROR(ReadPositive(label, json, "d_kv", false, &config->attention_head_dim));
  int64_t buckets = 32;
  RETURN_IF_ERROR(ReadPositive(label, json, "relative_attention_num_buckets", false, &buckets));
  RETURN_IF_ERROR(ReadPositive(label, json, "relative_attention_max_distance", false,
                               &config->relative_attention_max_distance));
  // Half the buckets per direction, half of those exact: the logarithmic part needs room.
  if (buckets < 4 || buckets % 4 != 0 || config->relative_attention_max_distance <= buckets / 4) {
    return absl::DataLossError(absl::StrCat(
        label, ": fields 'relative_attention_num_buckets' ", buckets,
        " and 'relative_attention_max_distance' ", config->relative_attention_max_distance,
        "; supported: a multiple of 4, and a distance past a quarter of it"));
  }
  config->relative_attention_buckets = buckets;
  return absl::OkStatus();
}

absl::Status MapQwen2Config(const std::string& label, const Json& json, EncoderConfig* config) {
  RETURN_IF_ERROR(MapDecoderConfig(label, json, config));
  // Qwen2's code fixes its biases whatever the config says: q, k, v with, o without.
  config->attention_bias = true;
  config->attention_output_bias = false;
  return absl::OkStatus();
}

}  // namespace embedding::model_store
