#include "model_store/formats/late_interaction_config.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/formats/checkpoint.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Python's string.punctuation, one word each: both layouts' default skiplist.
constexpr const char* kPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
// Far above any ColBERT's lengths (jina-colbert-v2 reads 8,192), and below what a window holds.
constexpr int64_t kMaxLength = 1 << 20;

// The file's JSON object; an empty object when the file is missing. DATA_LOSS when malformed.
absl::StatusOr<Json> ReadObject(const fs::path& path) {
  if (!fs::exists(path)) return Json::object();
  std::ifstream in(path);
  Json json = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::DataLossError(absl::StrCat(path.string(), ": not a JSON object"));
  }
  return json;
}

absl::Status Malformed(const fs::path& path, const char* field, const std::string& want) {
  return absl::DataLossError(absl::StrCat(path.string(), ": field '", field, "' must be ", want));
}

// Fields absent or null keep their defaults, as both codes read them.
absl::Status ReadString(const Json& json, const fs::path& path, const char* field,
                        std::string* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_string()) return Malformed(path, field, "a string");
  *out = it->get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadLength(const Json& json, const fs::path& path, const char* field, int64_t* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxLength)
    return Malformed(path, field, absl::StrCat("an integer in [1, ", kMaxLength, "]"));
  *out = it->get<int64_t>();
  return absl::OkStatus();
}

absl::Status ReadBool(const Json& json, const fs::path& path, const char* field, bool* out) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_boolean()) return Malformed(path, field, "true or false");
  *out = it->get<bool>();
  return absl::OkStatus();
}

std::vector<std::string> Punctuation() {
  std::vector<std::string> words;
  for (const char* c = kPunctuation; *c != '\0'; ++c) words.emplace_back(1, *c);
  return words;
}

constexpr const char* kPylateFields[] = {"query_prefix",       "document_prefix",
                                         "query_length",       "document_length",
                                         "do_query_expansion", "attend_to_expansion_tokens",
                                         "skiplist_words"};

bool HasPylateModule(const Json& modules) {
  for (const Json& module : modules.is_array() ? modules : Json::array()) {
    const Json type = module.is_object() ? module.value("type", Json()) : Json();
    if (type.is_string() && absl::StartsWith(type.get<std::string>(), "pylate.")) return true;
  }
  return false;
}

// PyLate's ColBERT._parse_model_config, then its defaults.
absl::StatusOr<LateInteractionConfig> ReadPylate(const fs::path& path, const Json& st) {
  LateInteractionConfig config;
  config.layout = absl::StrCat("PyLate (", path.string(), ")");
  RETURN_IF_ERROR(ReadString(st, path, "query_prefix", &config.query_prefix));
  RETURN_IF_ERROR(ReadString(st, path, "document_prefix", &config.document_prefix));
  RETURN_IF_ERROR(ReadLength(st, path, "query_length", &config.query_length));
  RETURN_IF_ERROR(ReadLength(st, path, "document_length", &config.document_length));
  RETURN_IF_ERROR(ReadBool(st, path, "do_query_expansion", &config.do_query_expansion));
  RETURN_IF_ERROR(
      ReadBool(st, path, "attend_to_expansion_tokens", &config.attend_to_expansion_tokens));
  config.skiplist_words = Punctuation();
  if (auto it = st.find("skiplist_words"); it != st.end() && !it->is_null()) {
    if (!it->is_array()) return Malformed(path, "skiplist_words", "a list of strings");
    config.skiplist_words.clear();
    for (const Json& word : *it) {
      if (!word.is_string()) return Malformed(path, "skiplist_words", "a list of strings");
      config.skiplist_words.push_back(word.get<std::string>());
    }
  }
  // PyLate: "If we do not do query expansion, we do not attend to the expansion tokens".
  if (!config.do_query_expansion) config.attend_to_expansion_tokens = false;
  return config;
}

// ColBERT's ColBERTConfig as artifact.metadata saves it; PyLate's fallbacks where absent.
absl::StatusOr<LateInteractionConfig> ReadStanford(const fs::path& path, const Json& meta) {
  LateInteractionConfig config;
  config.layout = absl::StrCat("Stanford ColBERT (", path.string(), ")");
  config.projection_in_checkpoint = true;
  config.query_prefix = "[unused0]";
  config.document_prefix = "[unused1]";
  RETURN_IF_ERROR(ReadString(meta, path, "query_token_id", &config.query_prefix));
  RETURN_IF_ERROR(ReadString(meta, path, "doc_token_id", &config.document_prefix));
  RETURN_IF_ERROR(ReadLength(meta, path, "query_maxlen", &config.query_length));
  RETURN_IF_ERROR(ReadLength(meta, path, "doc_maxlen", &config.document_length));
  RETURN_IF_ERROR(
      ReadBool(meta, path, "attend_to_mask_tokens", &config.attend_to_expansion_tokens));
  // ColBERT's DocTokenizer masks punctuation only under mask_punctuation (its default true).
  bool mask_punctuation = true;
  RETURN_IF_ERROR(ReadBool(meta, path, "mask_punctuation", &mask_punctuation));
  if (mask_punctuation) config.skiplist_words = Punctuation();
  return config;
}

}  // namespace

absl::StatusOr<std::optional<LateInteractionConfig>> ReadLateInteractionConfig(
    const std::string& model_dir, const Checkpoint& checkpoint) {
  const fs::path dir(model_dir);
  const fs::path st_path = dir / "config_sentence_transformers.json";
  // modules.json is a list (its own reader reports it malformed).
  std::ifstream modules_in(dir / "modules.json");
  const Json modules = modules_in ? Json::parse(modules_in, nullptr, false) : Json();
  ASSIGN_OR_RETURN(Json st, ReadObject(st_path));
  bool pylate = HasPylateModule(modules);
  for (const char* field : kPylateFields) pylate = pylate || st.contains(field);
  if (pylate) {
    ASSIGN_OR_RETURN(LateInteractionConfig config, ReadPylate(st_path, st));
    return std::optional<LateInteractionConfig>(std::move(config));
  }

  const fs::path meta_path = dir / "artifact.metadata";
  ASSIGN_OR_RETURN(Json config_json, ReadObject(dir / "config.json"));
  const Json architectures = config_json.value("architectures", Json::array());
  const bool hf_colbert =
      architectures.is_array() && !architectures.empty() && architectures[0] == "HF_ColBERT";
  if (!fs::exists(meta_path) && !hf_colbert && checkpoint.Find("linear.weight") == nullptr)
    return std::optional<LateInteractionConfig>();
  ASSIGN_OR_RETURN(Json meta, ReadObject(meta_path));
  ASSIGN_OR_RETURN(LateInteractionConfig config, ReadStanford(meta_path, meta));
  return std::optional<LateInteractionConfig>(std::move(config));
}

}  // namespace embedding::model_store
