#include "server/core/model_source.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "model_store/hub/snapshot_pull.h"

namespace embedding::server {

absl::StatusOr<LocatedSource> LocateSource(const ModelSource& source,
                                           const std::function<void(const std::string&)>& log) {
  LocatedSource out;
  std::string directory = source.directory;
  if (source.hub.has_value()) {
    auto progress = model_store::ProgressFor(
        STDERR_FILENO, [&log](const std::string& line) { if (log) log(line); });
    auto snapshot = model_store::PullSnapshot(*source.hub, source.hub_settings, progress.get());
    if (!snapshot.ok()) {
      return absl::Status(snapshot.status().code(), absl::StrCat("model '", source.name, "': ",
                                                                 snapshot.status().message()));
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
  out.tempscale_schedule = source.tempscale_schedule;
  out.hf_overrides = source.hf_overrides;
  if (!out.tempscale_schedule.empty()) {
    std::error_code size_error, time_error;
    const auto size = std::filesystem::file_size(out.tempscale_schedule, size_error);
    const auto time = std::filesystem::last_write_time(out.tempscale_schedule, time_error);
    absl::StrAppend(&out.located.signature, "|", out.tempscale_schedule, ":", size_error ? 0 : size,
                    ":", time_error ? 0 : time.time_since_epoch().count());
  }
  return out;
}

}  // namespace embedding::server
