#include "model_store/formats/checkpoint.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& model_dir) {
  auto checkpoint = std::make_unique<Checkpoint>();
  const fs::path single = fs::path(model_dir) / "model.safetensors";
  const fs::path index_path = fs::path(model_dir) / "model.safetensors.index.json";

  if (fs::exists(single)) {
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(single.string()));
    for (const auto& [name, view] : file->tensors()) checkpoint->index_[name] = &view;
    checkpoint->files_.push_back(std::move(file));
    return checkpoint;
  }
  if (!fs::exists(index_path)) {
    return absl::NotFoundError(absl::StrCat(model_dir,
                                            ": neither model.safetensors nor "
                                            "model.safetensors.index.json exists"));
  }
  std::ifstream in(index_path);
  nlohmann::json index = nlohmann::json::parse(in, nullptr, false);
  if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") ||
      !index["weight_map"].is_object()) {
    return absl::DataLossError(
        absl::StrCat(index_path.string(), ": not a JSON object with a 'weight_map' object"));
  }
  std::map<std::string, const SafetensorsFile*> shards;
  for (const auto& [tensor, shard_json] : index["weight_map"].items()) {
    if (!shard_json.is_string())
      return absl::DataLossError(absl::StrCat(index_path.string(), ": tensor '", tensor,
                                              "' maps to a non-string shard name"));
    const std::string shard = shard_json.get<std::string>();
    // Shards live beside the index; a path would let an index read arbitrary files.
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "..") {
      return absl::DataLossError(absl::StrCat(index_path.string(), ": tensor '", tensor,
                                              "' names an invalid shard '", shard, "'"));
    }
    auto it = shards.find(shard);
    if (it == shards.end()) {
      ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open((fs::path(model_dir) / shard).string()));
      it = shards.emplace(shard, file.get()).first;
      checkpoint->files_.push_back(std::move(file));
    }
    auto view = it->second->tensors().find(tensor);
    if (view == it->second->tensors().end()) {
      return absl::DataLossError(absl::StrCat(index_path.string(), ": tensor '", tensor,
                                              "' is not in shard '", shard, "'"));
    }
    checkpoint->index_[tensor] = &view->second;
  }
  return checkpoint;
}

const TensorView* Checkpoint::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

}  // namespace embedding::model_store
