// The models this server serves, by name, each version with its own batcher thread, and
// their reload: a new version loads beside the serving one and replaces it in one step.
// Requests hold the version they started on (a shared_ptr), so they finish on it.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
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

// What one reload did, for the admin endpoint, the log and the metrics.
struct ReloadOutcome {
  enum class Result { kLoaded, kUnchanged, kFailed };
  std::string model;
  Result result = Result::kUnchanged;
  std::string version;  // the version now serving
  std::string error;    // kFailed: why the new version was refused
};
const char* ReloadResultName(ReloadOutcome::Result result);

class ModelRegistry {
 public:
  // Observer for every forward pass of a model (metrics); called once per loaded version.
  using BatchObserverFactory = std::function<Batcher::BatchObserver(const ServedModel&)>;
  // Told of every version that starts or stops serving (metrics).
  struct VersionObserver {
    std::function<void(const ServedModel&, bool current)> on_serving;
    std::function<void(const ServedModel&)> on_unloaded;
  };

  // Loads every source; the first version of each runs its forward passes on `inference` (a
  // one-thread pool that outlives the registry) and its completions on `completions`. Errors
  // name the model and its directory.
  static absl::StatusOr<std::unique_ptr<ModelRegistry>> Load(
      const ModelOptions& options, const BatcherOptions& batching, WorkerPool* inference,
      Batcher::Executor completions, BatchObserverFactory observers = nullptr,
      VersionObserver versions = {});

  // "name" (its current version), "name@version" (any version still loaded), or "" (the
  // default model). NOT_FOUND naming what is served otherwise. Thread-safe.
  absl::StatusOr<std::shared_ptr<const ServedModel>> Find(const std::string& name) const;

  // The current version of every model, in --model order. Thread-safe.
  std::vector<std::shared_ptr<const ServedModel>> Current() const;
  const std::string& default_name() const { return default_name_; }

  // Looks at each model's directory (all models when `name` is empty) and loads what changed
  // there: a new versioned subdirectory, or changed files in a flat one. `settled`: only a
  // change seen unchanged at the previous call (a poller's guard against half-copied files).
  // A version that fails to load is refused and the current one keeps serving. One reload
  // at a time; blocks while loading. NOT_FOUND for an unknown `name`.
  absl::StatusOr<std::vector<ReloadOutcome>> Reload(const std::string& name, bool settled);

  // Frees replaced versions that no request holds any more (their batchers stop here, never
  // on a thread of their own). Called after every reload and by the poller.
  void ReleaseUnused();

 private:
  struct Entry {
    ModelSource source;
    std::string loaded_signature;  // of the directory the current version came from
    std::string seen_signature;    // at the previous Reload, for `settled`
    std::deque<std::shared_ptr<const ServedModel>> versions;  // newest first
  };

  ModelRegistry(const ModelOptions& options, const BatcherOptions& batching,
                WorkerPool* inference, Batcher::Executor completions,
                BatchObserverFactory observers, VersionObserver versions);
  // The model in `directory`, loaded on a thread of its own (see the .cc), with its batcher.
  absl::StatusOr<std::shared_ptr<const ServedModel>> LoadVersion(const std::string& name,
                                                                 const std::string& directory,
                                                                 std::string version) const;
  ReloadOutcome ReloadEntry(Entry& entry, bool settled);

  const ModelOptions options_;
  const BatcherOptions batching_;
  WorkerPool* const inference_;
  const Batcher::Executor completions_;
  const BatchObserverFactory batch_observers_;
  const VersionObserver version_observer_;
  std::string default_name_;

  std::mutex reload_mu_;  // one reload at a time; held while loading, never by Find
  mutable std::mutex mu_;  // guards entries_' versions and released_
  std::vector<Entry> entries_;
  std::vector<std::shared_ptr<const ServedModel>> replaced_;  // out of entries_, maybe in use
};

}  // namespace embedding::server
