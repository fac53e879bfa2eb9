#include "model_store/hub/model_file_selection.h"

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/formats/sentence_transformers_config.h"

namespace embedding::model_store {
namespace {

using Json = nlohmann::json;

absl::StatusOr<Json> ReadJson(const MetadataReader& read, const std::string& repo,
                              const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, read(path));
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    return absl::DataLossError(absl::StrCat(repo, ": ", path, " is not valid JSON"));
  return json;
}

// The shard files of a sharded checkpoint, from its index's weight_map.
absl::StatusOr<std::set<std::string>> IndexedShards(const MetadataReader& read,
                                                    const std::string& repo,
                                                    const std::string& index) {
  ASSIGN_OR_RETURN(Json json, ReadJson(read, repo, index));
  if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object())
    return absl::DataLossError(absl::StrCat(repo, ": ", index, " has no \"weight_map\" object"));
  std::set<std::string> shards;
  for (const auto& [tensor, file] : json["weight_map"].items()) {
    if (!file.is_string()) {
      return absl::DataLossError(
          absl::StrCat(repo, ": ", index, ": weight_map[\"", tensor, "\"] is not a file name"));
    }
    shards.insert(file.get<std::string>());
  }
  return shards;
}

// The folders of the sentence-transformers modules the server reads: Pooling ("1_Pooling"
// unless modules.json names another) and each Dense module's.
struct ModuleFolders {
  std::string pooling = "1_Pooling";
  std::vector<std::string> dense;
};

absl::StatusOr<ModuleFolders> ReadModuleFolders(const MetadataReader& read,
                                                const std::string& repo) {
  ASSIGN_OR_RETURN(Json modules, ReadJson(read, repo, "modules.json"));
  ModuleFolders folders;
  for (const Json& module : modules.is_array() ? modules : Json::array()) {
    if (!module.is_object() || !module.contains("path") || !module["path"].is_string()) continue;
    const std::string type = module.value("type", "");
    if (absl::StrContains(type, "Pooling")) folders.pooling = module["path"].get<std::string>();
    if (absl::EndsWith(type, ".Dense")) folders.dense.push_back(module["path"].get<std::string>());
  }
  return folders;
}

}  // namespace

absl::Status ValidateRepoPath(const std::string& path) {
  const auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("repository path \"", path.substr(0, 200), "\" ",
                                                   why, "; refusing to write it"));
  };
  if (path.empty() || path.size() > 1024) return refuse("is empty or over 1024 bytes");
  if (path.find('\\') != std::string::npos || path.find('\0') != std::string::npos)
    return refuse("contains a backslash or NUL");
  if (path.front() == '/') return refuse("is absolute");
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == "." || part == "..") return refuse("has an empty, . or .. part");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> SelectModelFiles(const std::string& repo,
                                                          const std::set<std::string>& listing,
                                                          const MetadataReader& read) {
  std::vector<std::string> files;
  const auto listed = [&](const std::string& path) { return listing.count(path) > 0; };
  // Takes `path` when the repository has it; says whether it did.
  const auto take_if_listed = [&](const std::string& path) {
    if (listed(path)) files.push_back(path);
    return listed(path);
  };
  if (!listed("config.json")) {
    return absl::NotFoundError(
        absl::StrCat(repo, ": no config.json in the repository; not a transformers checkpoint"));
  }
  files.push_back("config.json");

  for (const char* path :
       {"tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
        "config_sentence_transformers.json", "tempscale.json",
        "artifact.metadata"}) {  // Stanford ColBERT's lengths and markers
    take_if_listed(path);
  }
  for (const char* path : kTransformerConfigFiles) take_if_listed(path);
  // bge-m3's token heads (model_store/encoder/token_heads.h): a safetensors copy when there is one.
  for (const char* head : {"sparse_linear", "colbert_linear"}) {
    const std::string safetensors = std::string(head) + ".safetensors";
    if (!take_if_listed(safetensors)) take_if_listed(std::string(head) + ".pt");
  }
  if (!listed("tokenizer.json") && !listed("vocab.txt")) {
    return absl::NotFoundError(absl::StrCat(
        repo,
        ": neither tokenizer.json nor vocab.txt is in the repository; the server reads "
        "WordPiece and Unigram tokenizers from these files"));
  }
  if (listed("modules.json")) {
    files.push_back("modules.json");
    ASSIGN_OR_RETURN(ModuleFolders folders, ReadModuleFolders(read, repo));
    const std::string pooling_config = absl::StrCat(folders.pooling, "/config.json");
    RETURN_IF_ERROR(ValidateRepoPath(pooling_config));
    take_if_listed(pooling_config);
    // A Dense module's config and weights: safetensors when the folder has them.
    for (const std::string& folder : folders.dense) {
      RETURN_IF_ERROR(ValidateRepoPath(absl::StrCat(folder, "/config.json")));
      take_if_listed(absl::StrCat(folder, "/config.json"));
      if (!take_if_listed(absl::StrCat(folder, "/model.safetensors")))
        take_if_listed(absl::StrCat(folder, "/pytorch_model.bin"));
    }
  }

  // The weights in Checkpoint's order: safetensors before pickles.
  for (const char* index : kWeightLayouts) {
    if (!take_if_listed(index)) continue;
    if (!absl::EndsWith(index, ".index.json")) return files;
    ASSIGN_OR_RETURN(std::set<std::string> shards, IndexedShards(read, repo, index));
    for (const std::string& shard : shards) {
      RETURN_IF_ERROR(ValidateRepoPath(shard));
      if (!listed(shard)) {
        return absl::NotFoundError(
            absl::StrCat(repo, ": ", index, " names ", shard, ", which is not in the repository"));
      }
      files.push_back(shard);
    }
    return files;
  }
  return absl::NotFoundError(absl::StrCat(repo, ": no weights in the repository (none of ",
                                          absl::StrJoin(kWeightLayouts, ", "), ")"));
}

}  // namespace embedding::model_store
