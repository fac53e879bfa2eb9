#include "server/core/model_source.h"

#include "absl/strings/str_cat.h"
#include "model_store/hub/hub_cache.h"

namespace embedding::server {

absl::StatusOr<LocatedSource> LocateSource(const ModelSource& source) {
  LocatedSource out;
  std::string directory = source.directory;
  if (source.hub.has_value()) {
    auto snapshot = model_store::FindCachedSnapshot(source.hub_cache, *source.hub);
    if (!snapshot.ok()) {
      std::string hint;
      if (snapshot.status().code() == absl::StatusCode::kNotFound) {
        hint = absl::StrCat("; no directory ", source.hub->repo,
                            " exists either. Hub models are read from the cache only (no "
                            "download): fill it with `huggingface-cli download ",
                            source.hub->repo, " --revision ", source.hub->revision,
                            "`, or pass --hub-cache-dir");
      }
      return absl::Status(
          snapshot.status().code(),
          absl::StrCat("model '", source.name, "': ", snapshot.status().message(), hint));
    }
    out.hub = HubOrigin{source.hub->repo, source.hub->revision, snapshot->commit};
    directory = snapshot->directory;
  }
  auto located = model_store::LocateModelVersion(directory);
  if (!located.ok()) {
    return absl::Status(located.status().code(),
                        absl::StrCat("model '", source.name, "': ", located.status().message()));
  }
  out.located = *std::move(located);
  return out;
}

}  // namespace embedding::server
