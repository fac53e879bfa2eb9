#include "server/core/store_watcher.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "model_store/formats/model_version.h"

namespace embedding::server {

absl::StatusOr<std::vector<ModelSource>> ListStoreModels(const std::string& store) {
  std::vector<ModelSource> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(store, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find('@') != std::string::npos) continue;  // as for --model: '@' picks a version
    if (model_store::LocateModelVersion(entry.path().string()).ok())
      found.push_back({name, entry.path().string()});
  }
  if (ec)
    return absl::InvalidArgumentError(absl::StrCat("--model_store=", store, ": ", ec.message()));
  std::sort(found.begin(), found.end(),
            [](const ModelSource& a, const ModelSource& b) { return a.name < b.name; });
  return found;
}

}  // namespace embedding::server
