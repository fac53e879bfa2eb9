// The models this server serves, by name, each version with its own batcher thread, and
// their reload: a new version loads beside the serving one and replaces it in one step.
// Requests hold the version they started on (a shared_ptr), so they finish on it.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/model.h"
#include "server/core/batcher.h"
#include "server/core/core_options.h"
#include "server/core/model_catalog.h"
#include "server/core/store_watcher.h"
#include "server/core/worker_pool.h"

namespace embedding::server {

// What one reload did, for the admin endpoint, the log and the metrics.
struct ReloadOutcome {
  enum class Result { kLoaded, kUnchanged, kFailed };
  std::string model;
  Result result = Result::kUnchanged;
  std::string version;     // the version now serving ("" for a new model that failed to load)
  std::string error;       // kFailed: why the new version was refused
  bool new_model = false;  // a subdirectory of --model-store not served before
  std::string dtype;       // kLoaded: the dtype the new version serves in
  std::string dtype_kept_from;  // kLoaded: set when that dtype was kept from this version
};
const char* ReloadResultName(ReloadOutcome::Result result);

class ModelRegistry final : public ModelCatalog {
 public:
  // Observer for every forward pass of a model (metrics); called once per loaded version.
  using BatchObserverFactory = std::function<Batcher::BatchObserver(const ServedModel&)>;
  // Told of every version that starts or stops serving (metrics).
  struct VersionObserver {
    std::function<void(const ServedModel&, bool current)> on_serving;
    std::function<void(const ServedModel&)> on_unloaded;
    // A line about fetching a Hub model's files (each file's start and end, a cache fallback).
    std::function<void(const std::string&)> on_fetch;
  };

  // Loads every source; the first version of each runs its forward passes on `inference` (a
  // one-thread pool that outlives the registry) and its completions on `completions`. Errors
  // name the model and its directory.
  static absl::StatusOr<std::unique_ptr<ModelRegistry>> Load(
      const ModelOptions& options, const BatcherOptions& batching, WorkerPool* inference,
      WorkerPool* completions, BatchObserverFactory observers = nullptr,
      VersionObserver versions = {});

  // "name" (its current version), "name@version" (any version still loaded), or "" (the
  // default model). NOT_FOUND naming what is served otherwise. Thread-safe.
  absl::StatusOr<std::shared_ptr<const ServedModel>> Find(const std::string& name) const override;

  // The current version of every model, in --model order. Thread-safe.
  std::vector<std::shared_ptr<const ServedModel>> Current() const override;
  const std::string& default_name() const override { return default_name_; }

  // Looks at each model's directory (all models when `name` is empty) and loads what changed
  // there: a new versioned subdirectory, or changed files in a flat one. With a --model-store,
  // also its subdirectories not yet served, each as a new model under its directory's name.
  // `settled`: only a change seen unchanged at the previous call (a poller's guard against
  // half-copied files). A version that fails to load is refused and the current one keeps
  // serving; it is not tried again until its files change. One reload at a time; blocks while
  // loading. NOT_FOUND for an unknown `name`.
  // Under --dtype=auto a new version of a served model keeps the dtype of the version it
  // replaces, unless `measure_dtype` (auto then measures it afresh); new models always measure.
  absl::StatusOr<std::vector<ReloadOutcome>> Reload(const std::string& name, bool settled,
                                                    bool measure_dtype);

  // Frees replaced versions that no request holds any more (their batchers stop here, never
  // on a thread of their own). Called after every reload and by the poller.
  void ReleaseUnused();

 private:
  struct Entry {
    ModelSource source;
    ChangeTracker changes;  // of the directory the current version came from
    std::deque<std::shared_ptr<const ServedModel>> versions;  // newest first
  };

  ModelRegistry(const ModelOptions& options, const BatcherOptions& batching, WorkerPool* inference,
                WorkerPool* completions, BatchObserverFactory observers, VersionObserver versions);
  // Model::Load on a thread of its own, its forward passes on the inference pool's thread.
  absl::StatusOr<std::unique_ptr<model_store::Model>> LoadOffThread(
      const std::string& directory, model_store::ModelOptions options) const;
  // The located version, loaded on a thread of its own (see the .cc), with its batcher; in the
  // dtype of `keep_dtype_of` when given and the server's --dtype is auto.
  absl::StatusOr<std::shared_ptr<const ServedModel>> LoadVersion(
      const std::string& name, const LocatedSource& source,
      const ServedModel* keep_dtype_of = nullptr) const;
  ReloadOutcome ReloadEntry(Entry& entry, bool settled, bool measure_dtype);
  // Serves the store's new subdirectories (only `name` when not empty), as Reload describes.
  std::vector<ReloadOutcome> AddFromStore(const std::string& name, bool settled);
  bool Serves(const std::string& name) const;

  const ModelOptions options_;
  const BatcherOptions batching_;
  WorkerPool* const inference_;
  WorkerPool* const completions_;
  const BatchObserverFactory batch_observers_;
  const VersionObserver version_observer_;
  std::string default_name_;

  std::mutex reload_mu_;   // one reload at a time; held while loading, never by Find
  mutable std::mutex mu_;  // guards entries_ and replaced_
  // Changed only under both locks: versions by ReloadEntry, new entries by AddFromStore.
  std::vector<Entry> entries_;
  std::vector<std::shared_ptr<const ServedModel>> replaced_;  // out of entries_, maybe in use
  // The store's unserved model directories (under reload_mu_), so a broken model is tried
  // once per change.
  std::map<std::string, ChangeTracker> candidates_;
};

}  // namespace embedding::server
