#include "model_store/formats/checkpoint.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "model_store/formats/safetensors_file.h"
#include "model_store/formats/torch_save_file.h"
#include "nlohmann/json.hpp"

namespace embedding::model_store {
namespace fs = std::filesystem;
namespace {

// The index's weight_map: tensor name -> shard file (beside the index, never a path).
absl::StatusOr<std::map<std::string, std::string>> ReadWeightMap(const fs::path& index_path) {
  std::ifstream in(index_path);
  nlohmann::json index = nlohmann::json::parse(in, nullptr, false);
  if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") ||
      !index["weight_map"].is_object()) {
    return absl::DataLossError(
        absl::StrCat(index_path.string(), ": not a JSON object with a 'weight_map' object"));
  }
  std::map<std::string, std::string> weight_map;
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
    weight_map[tensor] = shard;
  }
  return weight_map;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TensorFile>> OpenTensorFile(const std::string& path) {
  if (!fs::exists(path)) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  if (absl::EndsWith(path, ".safetensors")) return SafetensorsFile::Open(path);
  return TorchSaveFile::Open(path);
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& model_dir) {
  const char* layout = nullptr;
  for (const char* candidate : kWeightLayouts) {
    if (fs::exists(fs::path(model_dir) / candidate)) {
      layout = candidate;
      break;
    }
  }
  if (layout == nullptr) {
    return absl::NotFoundError(absl::StrCat(model_dir, ": no weights: none of ",
                                            absl::StrJoin(kWeightLayouts, ", "), " exists"));
  }
  auto checkpoint = std::make_unique<Checkpoint>();
  const fs::path path = fs::path(model_dir) / layout;
  checkpoint->layout_ = layout;
  if (!absl::EndsWith(layout, ".index.json")) {
    ASSIGN_OR_RETURN(auto file, OpenTensorFile(path.string()));
    for (const auto& [name, view] : file->tensors()) checkpoint->Index(name, &view);
    checkpoint->files_.push_back(std::move(file));
    return checkpoint;
  }
  ASSIGN_OR_RETURN(const auto weight_map, ReadWeightMap(path));
  std::map<std::string, const TensorFile*> shards;
  for (const auto& [tensor, shard] : weight_map) {
    auto it = shards.find(shard);
    if (it == shards.end()) {
      ASSIGN_OR_RETURN(auto file, OpenTensorFile((fs::path(model_dir) / shard).string()));
      it = shards.emplace(shard, file.get()).first;
      checkpoint->files_.push_back(std::move(file));
    }
    auto view = it->second->tensors().find(tensor);
    if (view == it->second->tensors().end()) {
      return absl::DataLossError(
          absl::StrCat(path.string(), ": tensor '", tensor, "' is not in shard '", shard, "'"));
    }
    checkpoint->Index(tensor, &view->second);
  }
  checkpoint->layout_ += absl::StrCat(" (", shards.size(), " shards)");
  return checkpoint;
}

void Checkpoint::Index(const std::string& name, const TensorView* view) {
  index_.try_emplace(name).first->second.view = view;
  for (const auto& [old_suffix, suffix] : {std::pair{".gamma", ".weight"}, {".beta", ".bias"}}) {
    absl::string_view stem = name;
    if (absl::ConsumeSuffix(&stem, old_suffix)) aliases_[absl::StrCat(stem, suffix)] = name;
  }
}

const TensorView* Checkpoint::Find(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    auto alias = aliases_.find(name);
    if (alias == aliases_.end()) return nullptr;
    it = index_.find(alias->second);
  }
  it->second.read = true;
  return it->second.view;
}

std::vector<const TensorView*> Checkpoint::UnreadTensors() const {
  std::vector<const TensorView*> unread;
  for (const auto& [name, entry] : index_)
    if (!entry.read) unread.push_back(entry.view);
  return unread;
}

}  // namespace embedding::model_store
