// Where a served model's files are: a directory (flat or versioned), or a Hub repository in
// Hugging Face's shared cache, pulled (snapshot_pull.h) each time it is located, so a reload
// serves the commit a branch now points to.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "model_store/formats/model_version.h"
#include "server/core/core_options.h"

namespace embedding::server {

// The Hub identity of a model loaded from the cache.
struct HubOrigin {
  std::string repository;
  std::string revision;  // as given: a branch, a tag or a commit
  std::string commit;
};

struct LocatedSource {
  // Its signature also covers the --tempscale-schedule file, so a poll sees it change.
  model_store::LocatedVersion located;
  std::optional<HubOrigin> hub;
  std::string tempscale_schedule;  // the source's, or empty
  std::string hf_overrides;        // the source's, or empty
};

// The version to load now, a Hub model fetched first unless offline; `log` gets a line per
// file fetched and per cache fallback (may be empty). NOT_FOUND (naming the model, and for a
// Hub model the repository, revision and cache path) when the files are not there; DATA_LOSS
// for a corrupt cache entry or a download that failed verification; the Hub's statuses
// (model_store/hub/hub_api.h) for a failed download.
absl::StatusOr<LocatedSource> LocateSource(const ModelSource& source,
                                           const std::function<void(const std::string&)>& log);

}  // namespace embedding::server
