#include "model_store/formats/sentence_transformers_config.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// Absent file: an empty object.
absl::StatusOr<Json> ReadOptionalJson(const fs::path& path) {
  if (!fs::exists(path)) return Json::object();
  std::ifstream in(path);
  Json json = Json::parse(in, nullptr, false);
  if (json.is_discarded())
    return absl::DataLossError(absl::StrCat(path.string(), ": not well-formed JSON"));
  return json;
}

absl::StatusOr<std::optional<PoolingMode>> ParsePooling(const fs::path& path, const Json& json) {
  if (!json.is_object() || json.empty()) return std::optional<PoolingMode>();
  std::vector<std::string> enabled;
  for (const auto& [key, value] : json.items()) {
    if (key.rfind("pooling_mode_", 0) == 0 && value.is_boolean() && value.get<bool>())
      enabled.push_back(key);
  }
  if (enabled.size() == 1 && enabled[0] == "pooling_mode_cls_token") return {PoolingMode::kCls};
  if (enabled.size() == 1 && enabled[0] == "pooling_mode_mean_tokens") return {PoolingMode::kMean};
  if (enabled.size() == 1 && enabled[0] == "pooling_mode_max_tokens") return {PoolingMode::kMax};
  if (enabled.size() == 1 && enabled[0] == "pooling_mode_lasttoken") {
    return {PoolingMode::kLastToken};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path.string(), ": pooling modes [", absl::StrJoin(enabled, ", "),
      "] are not supported (exactly one of pooling_mode_cls_token, pooling_mode_mean_tokens, "
      "pooling_mode_max_tokens, pooling_mode_lasttoken)"));
}

// `max_seq_length` of the first Transformer config present (see kTransformerConfigFiles).
absl::Status ReadMaxSeqLength(const fs::path& dir, SentenceTransformersConfig* config) {
  for (const char* name : kTransformerConfigFiles) {
    const fs::path path = dir / name;
    if (!fs::exists(path)) continue;
    ASSIGN_OR_RETURN(Json json, ReadOptionalJson(path));
    auto it = json.is_object() ? json.find("max_seq_length") : json.end();
    if (!json.is_object() || it == json.end() || it->is_null()) return absl::OkStatus();
    if (!it->is_number_integer() || it->get<int64_t>() < 2 || it->get<int64_t>() >= (1LL << 31)) {
      return absl::DataLossError(absl::StrCat(path.string(), ": max_seq_length ",
                                              it->dump().substr(0, 40),
                                              " is not an integer in [2, 2147483647]"));
    }
    config->max_seq_length = it->get<int64_t>();
    config->max_seq_length_file = name;
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

// A module folder named in modules.json: relative, inside the model directory.
absl::Status CheckModuleFolder(const std::string& model_dir, const std::string& folder) {
  if (folder.empty() || folder[0] == '/' || folder.find("..") != std::string::npos) {
    return absl::DataLossError(
        absl::StrCat(model_dir, "/modules.json: bad module path '", folder.substr(0, 80), "'"));
  }
  return absl::OkStatus();
}

// The last part of a module's class ("sentence_transformers.models.Dense" -> "Dense").
std::string ModuleKind(const Json& module) {
  const std::string type = module.value("type", "");
  return type.substr(type.rfind('.') == std::string::npos ? 0 : type.rfind('.') + 1);
}

absl::StatusOr<DenseModuleConfig> ReadDenseModule(const fs::path& dir, const std::string& folder) {
  DenseModuleConfig dense;
  dense.dir = (dir / folder).string();
  const fs::path path = dir / folder / "config.json";
  ASSIGN_OR_RETURN(Json json, ReadOptionalJson(path));
  for (auto [field, out] : {std::pair{"in_features", &dense.in_features},
                            std::pair{"out_features", &dense.out_features}}) {
    auto it = json.find(field);
    if (it == json.end() || !it->is_number_integer() || it->get<int64_t>() < 1 ||
        it->get<int64_t>() > 65536) {
      return absl::DataLossError(
          absl::StrCat(path.string(), ": field '", field, "' must be an integer in [1, 65536]"));
    }
    *out = it->get<int64_t>();
  }
  if (auto it = json.find("bias"); it != json.end()) {
    if (!it->is_boolean())
      return absl::DataLossError(absl::StrCat(path.string(), ": field 'bias' must be a boolean"));
    dense.bias = it->get<bool>();
  }
  // sentence-transformers saves the class ("torch.nn.modules.activation.Tanh"); Tanh is its
  // default.
  const std::string activation =
      json.value("activation_function", "torch.nn.modules.activation.Tanh");
  dense.activation = activation.substr(activation.rfind('.') + 1);
  for (const char* known : {"Tanh", "Identity", "ReLU", "GELU", "Sigmoid"}) {
    if (dense.activation == known) return dense;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path.string(), ": activation_function '", activation.substr(0, 120),
                   "' is not supported (Tanh, Identity, ReLU, GELU, Sigmoid from torch.nn)"));
}

// SpladePooling's config.json: max over tokens of log(1 + relu), the only form served (a sum
// would not merge across chunks as SPLADE's max does).
absl::Status CheckSpladePooling(const fs::path& dir, const std::string& folder) {
  const fs::path path = dir / folder / "config.json";
  ASSIGN_OR_RETURN(Json json, ReadOptionalJson(path));
  for (auto [field, want] : {std::pair{"pooling_strategy", "max"},
                             std::pair{"activation_function", "relu"}}) {
    const Json value = json.is_object() ? json.value(field, Json(want)) : Json(want);
    if (value != want) {
      return absl::InvalidArgumentError(absl::StrCat(path.string(), ": ", field, " ",
                                                     value.dump().substr(0, 80),
                                                     " is not supported (", want, " only)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SentenceTransformersConfig> LoadSentenceTransformersConfig(
    const std::string& model_dir) {
  SentenceTransformersConfig config;
  const fs::path dir(model_dir);
  try {
    ASSIGN_OR_RETURN(Json modules, ReadOptionalJson(dir / "modules.json"));
    std::string pooling_dir = "1_Pooling";
    for (const Json& module : modules.is_array() ? modules : Json::array()) {
      const std::string kind = ModuleKind(module);
      const std::string folder = module.value("path", "");
      if (kind == "Pooling") {
        RETURN_IF_ERROR(CheckModuleFolder(model_dir, folder));
        pooling_dir = folder;
      } else if (kind == "Dense") {
        RETURN_IF_ERROR(CheckModuleFolder(model_dir, folder));
        ASSIGN_OR_RETURN(DenseModuleConfig dense, ReadDenseModule(dir, folder));
        config.dense.push_back(std::move(dense));
      } else if (kind == "SpladePooling") {
        RETURN_IF_ERROR(CheckModuleFolder(model_dir, folder));
        RETURN_IF_ERROR(CheckSpladePooling(dir, folder));
        config.splade = true;
      } else if (kind != "Transformer" && kind != "MLMTransformer" && kind != "Normalize") {
        return absl::InvalidArgumentError(
            absl::StrCat(model_dir, "/modules.json: module '", module.value("name", ""),
                         "' of type '", module.value("type", "").substr(0, 120),
                         "' is not supported (Transformer, MLMTransformer, Pooling, "
                         "SpladePooling, Dense, Normalize)"));
      }
    }
    const fs::path pooling_path = dir / pooling_dir / "config.json";
    ASSIGN_OR_RETURN(Json pooling, ReadOptionalJson(pooling_path));
    ASSIGN_OR_RETURN(config.pooling, ParsePooling(pooling_path, pooling));

    RETURN_IF_ERROR(ReadMaxSeqLength(dir, &config));
    ASSIGN_OR_RETURN(Json st, ReadOptionalJson(dir / "config_sentence_transformers.json"));
    if (st.is_object()) {
      if (auto it = st.find("prompts"); it != st.end() && it->is_object()) {
        for (const auto& [name, prompt] : it->items()) {
          if (prompt.is_string()) config.prompts[name] = prompt.get<std::string>();
        }
      }
      if (auto it = st.find("default_prompt_name"); it != st.end() && it->is_string())
        config.default_prompt_name = it->get<std::string>();
    }
  } catch (const Json::exception& e) {
    return absl::DataLossError(
        absl::StrCat(model_dir, ": malformed sentence-transformers file: ", e.what()));
  }
  return config;
}

}  // namespace embedding::model_store
