// What appeared or changed on disk, for the model registry: the model directories of a
// --model-store (one scan, used at start-up and by every reload), and for each watched
// directory whether a change is new and has settled (the same at two looks in a row, so a
// half-copied version is never taken).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/core_options.h"

namespace embedding::server {

// The subdirectories of `store` that hold a model (model_store::LocateModelVersion), each
// served under its directory's name, sorted by name. Names holding '@' (which selects a
// version) are skipped. INVALID_ARGUMENT naming --model_store when it cannot be read.
absl::StatusOr<std::vector<ModelSource>> ListStoreModels(const std::string& store);

// One directory's change state, from its signatures (model_store::LocatedVersion).
class ChangeTracker {
 public:
  // Starts from a state already taken (a loaded model), or from nothing.
  explicit ChangeTracker(std::string taken = "") : taken_(taken), seen_(std::move(taken)) {}

  // Looks at the directory's `signature` now. True when it differs from the one last taken
  // and, with `settled`, equals the one seen at the previous look.
  bool ShouldTake(const std::string& signature, bool settled) {
    const bool stable = signature == seen_;
    seen_ = signature;
    return signature != taken_ && (!settled || stable);
  }
  // `signature` was tried, loaded or not: a broken state is not tried again until it changes.
  void Taken(const std::string& signature) { taken_ = signature; }

 private:
  std::string taken_;
  std::string seen_;
};

}  // namespace embedding::server
