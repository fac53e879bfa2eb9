#include "model_store/formats/late_interaction_layout.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "model_store/formats/checkpoint.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

absl::Status Refuse(const std::string& where, const std::string& evidence) {
  return absl::InvalidArgumentError(absl::StrCat(
      where, ": ", evidence,
      ": a late-interaction (ColBERT) checkpoint, one vector per token scored by MaxSim; it is "
      "not served here, and never as a single-vector embedder"));
}

// The file's JSON, or null when it is missing or malformed (its own reader reports that).
Json ReadJsonOrNull(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  return Json::parse(in, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

absl::Status CheckNotLateInteractionFiles(const std::string& model_dir) {
  const fs::path dir(model_dir);
  if (fs::exists(dir / "artifact.metadata")) {
    return Refuse((dir / "artifact.metadata").string(), "Stanford ColBERT's metadata file");
  }
  const Json modules = ReadJsonOrNull(dir / "modules.json");
  for (const Json& module : modules.is_array() ? modules : Json::array()) {
    const Json type = module.is_object() ? module.value("type", Json()) : Json();
    if (type.is_string() && absl::StartsWith(type.get<std::string>(), "pylate.")) {
      return Refuse((dir / "modules.json").string(),
                    absl::StrCat("module of type '", type.get<std::string>().substr(0, 80), "'"));
    }
  }
  const Json st = ReadJsonOrNull(dir / "config_sentence_transformers.json");
  if (st.is_object()) {
    for (const char* field : {"query_prefix", "document_prefix", "query_length", "document_length",
                              "do_query_expansion", "attend_to_expansion_tokens",
                              "skiplist_words"}) {
      if (st.contains(field)) {
        return Refuse((dir / "config_sentence_transformers.json").string(),
                      absl::StrCat("PyLate's field '", field, "'"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNotLateInteractionWeights(const std::string& model_dir,
                                            const Checkpoint& checkpoint) {
  if (checkpoint.Find("linear.weight") != nullptr) {
    return Refuse(absl::StrCat(model_dir, "/", checkpoint.layout()),
                  "tensor 'linear.weight' (Stanford ColBERT's projection)");
  }
  return absl::OkStatus();
}

}  // namespace embedding::model_store
