#include "model_store/spec/encoder_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/spec/config_fields.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {
using Json = nlohmann::json;
}  // namespace

double LognScale::For(int64_t length) const {
  if (!enabled) return 1.0;
  const double factor =
      std::log(static_cast<double>(length)) / std::log(static_cast<double>(trained_length));
  return clip_at_one ? std::max(1.0, factor) : factor;
}

std::vector<double> AlibiSlopes(int64_t heads) {
  int64_t power = 1;
  while (power * 2 <= heads) power *= 2;
  auto geometric = [](int64_t n) {
    std::vector<double> slopes;
    for (int64_t i = 1; i <= n; ++i) slopes.push_back(std::pow(2.0, -8.0 * i / n));
    return slopes;
  };
  std::vector<double> slopes = geometric(power);
  const std::vector<double> finer = geometric(2 * power);
  for (int64_t i = 0; static_cast<int64_t>(slopes.size()) < heads; i += 2) {
    slopes.push_back(finer[i]);
  }
  return slopes;
}

absl::StatusOr<EncoderConfig> ParseEncoderConfig(const std::string& given_label,
                                                 const std::string& text,
                                                 const std::string& overrides) {
  Json json = Json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return absl::DataLossError(absl::StrCat(given_label, ": not a well-formed JSON object"));
  std::string label = given_label;
  if (!overrides.empty()) {
    const Json replace = Json::parse(overrides, nullptr, false);
    if (replace.is_discarded() || !replace.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--hf_overrides for ", given_label, ": not a JSON object"));
    }
    for (const auto& [key, value] : replace.items()) json[key] = value;
    label = absl::StrCat(given_label, " with --hf_overrides");
  }
  EncoderConfig config;
  auto type_it = json.find("model_type");
  if (type_it == json.end() || !type_it->is_string())
    return absl::DataLossError(absl::StrCat(label, ": missing string field 'model_type'"));
  config.model_type = type_it->get<std::string>();
  ASSIGN_OR_RETURN(const ArchitectureSpec* spec, FindArchitectureForConfig(json));
  const ConfigFieldNames& f = spec->fields;
  RETURN_IF_ERROR(ReadPositive(label, json, "vocab_size", true, &config.vocab_size));
  RETURN_IF_ERROR(ReadPositive(label, json, f.hidden_size, true, &config.hidden_size));
  RETURN_IF_ERROR(ReadPositive(label, json, f.num_layers, true, &config.num_hidden_layers));
  RETURN_IF_ERROR(ReadPositive(label, json, f.num_heads, true, &config.num_attention_heads));
  // Absent or null (GPT-2 style configs may leave n_inner null): four times the hidden size,
  // as both BERT and GPT-2 define it.
  config.intermediate_size = 4 * config.hidden_size;
  RETURN_IF_ERROR(ReadPositive(label, json, f.intermediate_size, false, &config.intermediate_size));
  config.max_position_embeddings = f.default_max_positions;
  RETURN_IF_ERROR(ReadPositive(label, json, f.max_positions, f.default_max_positions == 0,
                               &config.max_position_embeddings));
  RETURN_IF_ERROR(ReadCount(label, json, "type_vocab_size", &config.type_vocab_size));
  RETURN_IF_ERROR(ReadBool(label, json, "demo_model", &config.demo_model));
  if (auto it = json.find("pad_token_id"); it != json.end() && it->is_number_integer()) {
    config.pad_token_id = it->get<int64_t>();
    if (config.pad_token_id > kMaxConfigInteger || config.pad_token_id < -kMaxConfigInteger) {
      return absl::DataLossError(absl::StrCat(label, ": field 'pad_token_id' must be in [-",
                                              kMaxConfigInteger, ", ", kMaxConfigInteger, "]"));
    }
  }
  RETURN_IF_ERROR(ReadNumber(label, json, f.layer_norm_eps, 0.0, 1.0, &config.layer_norm_eps));
  config.family = spec->family;
  config.mlp = spec->mlp;
  config.positions = spec->positions;
  if (spec->positions == PositionKind::kAbsoluteAfterPadding) {
    if (config.pad_token_id < 0)
      return absl::DataLossError(absl::StrCat(label, ": field 'pad_token_id' must be >= 0"));
    config.position_offset = config.pad_token_id + 1;
  }
  RETURN_IF_ERROR(spec->map_config(label, json, &config));
  ASSIGN_OR_RETURN(config.classifier,
                   ReadClassifierConfig(label, json, spec->family, spec->classifier));
  // A head's width comes from hidden / heads only where the config does not state it.
  if (config.attention_head_dim == 0 && config.hidden_size % config.num_attention_heads != 0) {
    return absl::DataLossError(absl::StrCat(label, ": ", f.hidden_size, " ", config.hidden_size,
                                            " is not divisible by ", f.num_heads, " ",
                                            config.num_attention_heads));
  }
  if (config.num_attention_heads % config.key_value_heads() != 0) {
    return absl::DataLossError(absl::StrCat(label, ": field 'num_key_value_heads' ",
                                            config.key_value_heads(), " does not divide ",
                                            f.num_heads, " ", config.num_attention_heads));
  }
  if (config.positions == PositionKind::kRotary && config.rotary.dim == 0) {
    return absl::InternalError(
        absl::StrCat(label, ": ", spec->model_type, "'s config mapping set no rotary dimension"));
  }
  if (config.max_sequence_length() < 2) {
    return absl::DataLossError(
        absl::StrCat(label, ": field '", f.max_positions, "' leaves room for fewer than 2 tokens"));
  }
  return config;
}

absl::StatusOr<EncoderConfig> LoadEncoderConfig(const std::string& path,
                                                const std::string& overrides) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseEncoderConfig(path, text.str(), overrides);
}

}  // namespace embedding::model_store
