#include "model_store/encoder_config.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {
using Json = nlohmann::json;

// Sizes and ids in a config stay below 2^31, so arithmetic on them (4 x hidden, the padding
// offset, weight sizes) cannot overflow int64.
constexpr int64_t kMaxConfigInteger = std::numeric_limits<int32_t>::max();

// Reads `field` into `out` when present and not null; DATA_LOSS unless an integer in
// [1, kMaxConfigInteger].
absl::Status ReadPositive(const std::string& label, const Json& json, const std::string& field,
                          bool required, int64_t* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) {
    if (required) return absl::DataLossError(absl::StrCat(label, ": missing field '", field, "'"));
    return absl::OkStatus();
  }
  if (!it->is_number_integer() || it->get<int64_t>() <= 0 ||
      it->get<int64_t>() > kMaxConfigInteger) {
    return absl::DataLossError(absl::StrCat(label, ": field '", field,
                                            "' must be an integer in [1, ", kMaxConfigInteger,
                                            "]"));
  }
  *out = it->get<int64_t>();
  return absl::OkStatus();
}

absl::Status ReadBool(const std::string& label, const Json& json, const char* field, bool* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_boolean())
    return absl::DataLossError(absl::StrCat(label, ": field '", field, "' must be true or false"));
  *out = it->get<bool>();
  return absl::OkStatus();
}

// Reads a number into `out` when present and not null; DATA_LOSS unless in (low, high].
absl::Status ReadNumber(const std::string& label, const Json& json, const std::string& field,
                        double low, double high, double* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number() || !(it->get<double>() > low && it->get<double>() <= high)) {
    return absl::DataLossError(
        absl::StrCat(label, ": field '", field, "' must be a number in (", low, ", ", high, "]"));
  }
  *out = it->get<double>();
  return absl::OkStatus();
}

// The activation, and whether the MLP is gated: a gated name needs a spec with a gate weight.
absl::Status ParseActivation(const std::string& label, const ArchitectureSpec& spec,
                             const std::string& name, EncoderConfig* config) {
  const bool gated_spec = !spec.mlp_gate.empty();
  const std::string& field = spec.fields.activation;
  if (gated_spec) {
    config->gated_mlp = true;
    if (name == "swiglu") {
      config->hidden_act = Activation::kSilu;
      return absl::OkStatus();
    }
    if (name == "geglu") {
      config->hidden_act = Activation::kGeluErf;
      return absl::OkStatus();
    }
    return absl::DataLossError(absl::StrCat(label, ": field '", field, "' is '", name,
                                            "'; supported for ", spec.model_type,
                                            ": swiglu, geglu"));
  }
  if (name == "gelu") {
    config->hidden_act = Activation::kGeluErf;
  } else if (name == "gelu_new" || name == "gelu_pytorch_tanh") {
    config->hidden_act = Activation::kGeluTanh;
  } else if (name == "relu") {
    config->hidden_act = Activation::kRelu;
  } else if (name == "silu" || name == "swish") {
    config->hidden_act = Activation::kSilu;
  } else {
    return absl::DataLossError(absl::StrCat(
        label, ": field '", field, "' is '", name,
        "'; supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu, swish"));
  }
  return absl::OkStatus();
}

absl::Status ParseRotary(const std::string& label, const Json& json, EncoderConfig* config) {
  double fraction = 1.0;
  RETURN_IF_ERROR(ReadNumber(label, json, "rotary_emb_fraction", 0.0, 1.0, &fraction));
  RotaryConfig& rotary = config->rotary;
  rotary.dim = static_cast<int64_t>(static_cast<double>(config->head_dim()) * fraction);
  if (rotary.dim < 2 || rotary.dim % 2 != 0) {
    return absl::DataLossError(absl::StrCat(label, ": field 'rotary_emb_fraction' gives ",
                                            rotary.dim, " rotary features per head; need an "
                                            "even number >= 2"));
  }
  RETURN_IF_ERROR(ReadNumber(label, json, "rotary_emb_base", 1.0, 1e12, &rotary.base));
  RETURN_IF_ERROR(ReadBool(label, json, "rotary_emb_interleaved", &rotary.interleaved));
  RETURN_IF_ERROR(ReadNumber(label, json, "rotary_scaling_factor", 0.0, 1e6,
                             &rotary.scaling_factor));
  // nomic's own config class defaults max_trained_positions to 2,048.
  rotary.max_trained_positions = 2048;
  RETURN_IF_ERROR(
      ReadPositive(label, json, "max_trained_positions", false, &rotary.max_trained_positions));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EncoderConfig> ParseEncoderConfig(const std::string& label,
                                                 const std::string& text) {
  Json json = Json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return absl::DataLossError(absl::StrCat(label, ": not a well-formed JSON object"));
  EncoderConfig config;
  auto type_it = json.find("model_type");
  if (type_it == json.end() || !type_it->is_string())
    return absl::DataLossError(absl::StrCat(label, ": missing string field 'model_type'"));
  config.model_type = type_it->get<std::string>();
  ASSIGN_OR_RETURN(const ArchitectureSpec* spec, FindArchitecture(config.model_type));
  const ConfigFieldNames& f = spec->fields;
  RETURN_IF_ERROR(ReadPositive(label, json, "vocab_size", true, &config.vocab_size));
  RETURN_IF_ERROR(ReadPositive(label, json, f.hidden_size, true, &config.hidden_size));
  RETURN_IF_ERROR(ReadPositive(label, json, f.num_layers, true, &config.num_hidden_layers));
  RETURN_IF_ERROR(ReadPositive(label, json, f.num_heads, true, &config.num_attention_heads));
  // Absent or null (GPT-2 style configs may leave n_inner null): four times the hidden size,
  // as both BERT and GPT-2 define it.
  config.intermediate_size = 4 * config.hidden_size;
  RETURN_IF_ERROR(
      ReadPositive(label, json, f.intermediate_size, false, &config.intermediate_size));
  RETURN_IF_ERROR(ReadPositive(label, json, f.max_positions, true,
                               &config.max_position_embeddings));
  RETURN_IF_ERROR(ReadPositive(label, json, "type_vocab_size", false, &config.type_vocab_size));
  RETURN_IF_ERROR(ReadBool(label, json, "demo_model", &config.demo_model));
  if (auto it = json.find("pad_token_id"); it != json.end() && it->is_number_integer()) {
    config.pad_token_id = it->get<int64_t>();
    if (config.pad_token_id > kMaxConfigInteger || config.pad_token_id < -kMaxConfigInteger) {
      return absl::DataLossError(absl::StrCat(label, ": field 'pad_token_id' must be in [-",
                                              kMaxConfigInteger, ", ", kMaxConfigInteger, "]"));
    }
  }
  RETURN_IF_ERROR(ReadNumber(label, json, f.layer_norm_eps, 0.0, 1.0, &config.layer_norm_eps));
  std::string activation = spec->mlp_gate.empty() ? "gelu" : "swiglu";
  if (auto it = json.find(f.activation); it != json.end() && !it->is_null()) {
    if (!it->is_string())
      return absl::DataLossError(absl::StrCat(label, ": field '", f.activation,
                                              "' must be a string"));
    activation = it->get<std::string>();
  }
  RETURN_IF_ERROR(ParseActivation(label, *spec, activation, &config));
  RETURN_IF_ERROR(ReadBool(label, json, "prenorm", &config.prenorm));
  RETURN_IF_ERROR(ReadBool(label, json, "qkv_proj_bias", &config.attention_bias));
  RETURN_IF_ERROR(ReadBool(label, json, "mlp_fc1_bias", &config.mlp_in_bias));
  RETURN_IF_ERROR(ReadBool(label, json, "mlp_fc2_bias", &config.mlp_out_bias));
  if (config.hidden_size % config.num_attention_heads != 0) {
    return absl::DataLossError(absl::StrCat(label, ": ", f.hidden_size, " ", config.hidden_size,
                                            " is not divisible by ", f.num_heads, " ",
                                            config.num_attention_heads));
  }
  config.positions = spec->positions;
  switch (spec->positions) {
    case PositionKind::kAbsolute:
      break;
    case PositionKind::kAbsoluteAfterPadding:
      if (config.pad_token_id < 0)
        return absl::DataLossError(absl::StrCat(label, ": field 'pad_token_id' must be >= 0"));
      config.position_offset = config.pad_token_id + 1;
      break;
    case PositionKind::kRotary:
      RETURN_IF_ERROR(ParseRotary(label, json, &config));
      break;
  }
  if (config.max_sequence_length() < 2) {
    return absl::DataLossError(absl::StrCat(label, ": field '", f.max_positions,
                                            "' leaves room for fewer than 2 tokens"));
  }
  return config;
}

absl::StatusOr<EncoderConfig> LoadEncoderConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseEncoderConfig(path, text.str());
}

}  // namespace embedding::model_store
