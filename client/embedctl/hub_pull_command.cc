#include "client/embedctl/hub_pull_command.h"

#include <unistd.h>

#include <iostream>

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
  for (const std::string& text : references) {
    auto reference = model_store::ParseHubReference(text, "pull");
    if (!reference.ok()) {
      std::cerr << "embedctl: " << reference.status().message() << "\n";
      return 2;
    }
    parsed.push_back(*std::move(reference));
  }
  auto progress = model_store::ProgressFor(
      STDERR_FILENO, [](const std::string& line) { std::cerr << "embedctl pull: " << line << "\n"; });
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
