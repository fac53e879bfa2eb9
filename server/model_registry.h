// The models this server serves, by name, each with its own batcher thread. Every model call
// (loading and forward passes) runs on one inference thread the caller owns (see main.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/model.h"
#include "server/batcher.h"
#include "server/server_options.h"
#include "server/worker_pool.h"

namespace embedding::server {

struct ServedModel {
  std::string name;
  std::string version;
  std::unique_ptr<model_store::Model> model;
  std::unique_ptr<Batcher> batcher;
};

class ModelRegistry {
 public:
  // Observer for every forward pass of model `name` (metrics).
  using BatchObserverFactory = std::function<Batcher::BatchObserver(const ServedModel&)>;

  // Loads every source on `inference` (a one-thread pool that outlives the registry); each
  // model's batcher runs its forward passes there and its completions on `completions`.
  // Errors name the model and its directory.
  static absl::StatusOr<std::unique_ptr<ModelRegistry>> Load(
      const ModelOptions& options, const BatcherOptions& batching, WorkerPool* inference,
      Batcher::Executor completions, const BatchObserverFactory& observers = nullptr);

  // `name`, or the default model for "". NOT_FOUND listing the served names otherwise.
  absl::StatusOr<const ServedModel*> Find(const std::string& name) const;

  const std::vector<std::unique_ptr<ServedModel>>& models() const { return models_; }
  const std::string& default_name() const { return default_name_; }

 private:
  std::vector<std::unique_ptr<ServedModel>> models_;
  std::string default_name_;
};

}  // namespace embedding::server
