#include "model_store/encoder_config.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

absl::Status ReadPositive(const std::string& label, const nlohmann::json& json, const char* field,
                          bool required, int64_t* out) {
  auto it = json.find(field);
  if (it == json.end()) {
    if (required) return absl::DataLossError(absl::StrCat(label, ": missing field '", field, "'"));
    return absl::OkStatus();
  }
  if (!it->is_number_integer() || it->get<int64_t>() <= 0) {
    return absl::DataLossError(
        absl::StrCat(label, ": field '", field, "' must be a positive integer"));
  }
  *out = it->get<int64_t>();
  return absl::OkStatus();
}

absl::StatusOr<Activation> ParseActivation(const std::string& label, const std::string& name) {
  if (name == "gelu") return Activation::kGeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  return absl::DataLossError(absl::StrCat(label, ": field 'hidden_act' is '", name,
                                          "'; supported: gelu, gelu_new, gelu_pytorch_tanh, relu"));
}

}  // namespace

absl::StatusOr<EncoderConfig> ParseEncoderConfig(const std::string& label,
                                                 const std::string& text) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return absl::DataLossError(absl::StrCat(label, ": not a well-formed JSON object"));
  EncoderConfig config;
  auto type_it = json.find("model_type");
  if (type_it == json.end() || !type_it->is_string())
    return absl::DataLossError(absl::StrCat(label, ": missing string field 'model_type'"));
  config.model_type = type_it->get<std::string>();
  RETURN_IF_ERROR(ReadPositive(label, json, "vocab_size", true, &config.vocab_size));
  RETURN_IF_ERROR(ReadPositive(label, json, "hidden_size", true, &config.hidden_size));
  RETURN_IF_ERROR(ReadPositive(label, json, "num_hidden_layers", true, &config.num_hidden_layers));
  RETURN_IF_ERROR(
      ReadPositive(label, json, "num_attention_heads", true, &config.num_attention_heads));
  RETURN_IF_ERROR(ReadPositive(label, json, "intermediate_size", true, &config.intermediate_size));
  RETURN_IF_ERROR(
      ReadPositive(label, json, "max_position_embeddings", true, &config.max_position_embeddings));
  RETURN_IF_ERROR(ReadPositive(label, json, "type_vocab_size", false, &config.type_vocab_size));
  if (auto it = json.find("demo_model"); it != json.end() && it->is_boolean())
    config.demo_model = it->get<bool>();
  if (auto it = json.find("pad_token_id"); it != json.end() && it->is_number_integer())
    config.pad_token_id = it->get<int64_t>();
  if (auto it = json.find("layer_norm_eps"); it != json.end()) {
    if (!it->is_number() || it->get<double>() <= 0)
      return absl::DataLossError(absl::StrCat(label, ": field 'layer_norm_eps' must be > 0"));
    config.layer_norm_eps = it->get<double>();
  }
  if (auto it = json.find("hidden_act"); it != json.end()) {
    if (!it->is_string())
      return absl::DataLossError(absl::StrCat(label, ": field 'hidden_act' must be a string"));
    ASSIGN_OR_RETURN(config.hidden_act, ParseActivation(label, it->get<std::string>()));
  }
  if (config.hidden_size % config.num_attention_heads != 0) {
    return absl::DataLossError(absl::StrCat(label, ": hidden_size ", config.hidden_size,
                                            " is not divisible by num_attention_heads ",
                                            config.num_attention_heads));
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
