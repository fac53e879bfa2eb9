#include "client/embedctl/hub_pull_command.h"

#include <unistd.h>

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "model_store/hub/download_progress.h"
#include "model_store/hub/hub_reference.h"
#include "model_store/hub/snapshot_pull.h"

namespace embedding::client {

int PullCommand(const std::vector<std::string>& references,
                const model_store::HubSettings& settings) {
  if (references.empty()) {
    std::cerr << "embedctl pull: name at least one repository (ORG/NAME[@REVISION])\n";
    return 2;
  }
  std::vector<model_store::HubReference> parsed;
  for (const std::string& argument : references) {
    for (absl::string_view spec : absl::StrSplit(argument, ',', absl::SkipEmpty())) {
      // NAME=REPO as in --model and EMBEDDING_MODELS: the repository is what is pulled, and a
      // NAME=PATH there is a directory model, nothing to pull.
      if (const size_t eq = spec.find('='); eq != absl::string_view::npos) {
        spec.remove_prefix(eq + 1);
        if (absl::StartsWith(spec, "/") || absl::StartsWith(spec, ".") ||
            absl::StartsWith(spec, "~")) {
          std::cerr << "embedctl pull: " << spec << " is a directory, not a Hub model; skipped\n";
          continue;
        }
      }
      auto reference = model_store::ParseHubReference(spec, "pull");
      if (!reference.ok()) {
        std::cerr << "embedctl: " << reference.status().message() << "\n";
        return 2;
      }
      parsed.push_back(*std::move(reference));
    }
  }
  auto progress = model_store::ProgressFor(STDERR_FILENO, [](const std::string& line) {
    std::cerr << "embedctl pull: " << line << "\n";
  });
  int exit_code = 0;
  for (const model_store::HubReference& reference : parsed) {
    auto snapshot = model_store::PullSnapshot(reference, settings, progress.get());
    if (!snapshot.ok()) {
      std::cerr << "embedctl pull: " << snapshot.status().message() << "\n";
      exit_code = 1;
      continue;
    }
    std::cout << model_store::ToString(reference) << " commit " << snapshot->commit << " -> "
              << snapshot->directory << "\n";
  }
  return exit_code;
}

}  // namespace embedding::client
