// What the Embedder sees of the served models: a version by name, and the current ones.
// ModelRegistry is the catalog the server runs; tests hand the Embedder fixed models.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/model.h"
#include "server/core/batcher.h"
#include "server/core/model_source.h"

namespace embedding::server {

// One loaded version of a model, with the batcher that runs its forward passes. Requests hold
// it (a shared_ptr) until they are answered, so a reload never pulls it from under them.
struct ServedModel {
  std::string name;
  std::string version;
  std::optional<HubOrigin> hub;  // set when it was loaded from the Hub cache
  // Set when a reload served this version in the dtype of the one it replaced, instead of
  // letting --dtype=auto measure again: that version's name.
  std::string dtype_kept_from;
  std::unique_ptr<model_store::Model> model;
  std::unique_ptr<Batcher> batcher;
};

class ModelCatalog {
 public:
  virtual ~ModelCatalog() = default;
  // "name" (its current version), "name@version" (any version still loaded), or "" (the
  // default model). NOT_FOUND naming what is served otherwise. Thread-safe.
  virtual absl::StatusOr<std::shared_ptr<const ServedModel>> Find(
      const std::string& name) const = 0;
  // The current version of every model, in --model order. Thread-safe.
  virtual std::vector<std::shared_ptr<const ServedModel>> Current() const = 0;
  virtual const std::string& default_name() const = 0;
};

}  // namespace embedding::server
