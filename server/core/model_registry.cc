#include "server/core/model_registry.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"
#include "model_store/formats/content_digest.h"
#include "model_store/formats/model_version.h"
#include "server/core/batch_budget.h"

namespace embedding::server {

namespace {

// --max_batch_tokens for `model` on its device (batch_budget.h), measured with its weights in.
absl::StatusOr<int64_t> BatchTokensFor(const model_store::Model& model, int64_t requested,
                                       double utilization) {
  const model_store::Encoder& encoder = model.encoder();
  if (!encoder.device().cuda) return ResolveBatchTokens(requested, nullptr);
  const model_store::DeviceMemory memory = encoder.device_memory();
  const std::string device = model_store::ComputeDeviceName(encoder.device());
  const DeviceBudget budget{memory.available_bytes(),       memory.total_bytes,
                            model.device_bytes_per_token(), utilization,
                            model.max_input_length(),       device.c_str()};
  return ResolveBatchTokens(requested, &budget);
}

}  // namespace

const char* ReloadResultName(ReloadOutcome::Result result) {
  switch (result) {
    case ReloadOutcome::Result::kLoaded:
      return "loaded";
    case ReloadOutcome::Result::kUnchanged:
      return "unchanged";
    case ReloadOutcome::Result::kFailed:
      return "failed";
  }
  return "unknown";
}

ModelRegistry::ModelRegistry(const ModelOptions& options, const BatcherOptions& batching,
                             WorkerPool* inference, WorkerPool* completions,
                             BatchObserverFactory observers, VersionObserver versions)
    : options_(options),
      batching_(batching),
      inference_(inference),
      completions_(completions),
      batch_observers_(std::move(observers)),
      version_observer_(std::move(versions)) {}

absl::StatusOr<std::unique_ptr<ModelRegistry>> ModelRegistry::Load(
    const ModelOptions& options, const BatcherOptions& batching, WorkerPool* inference,
    WorkerPool* completions, BatchObserverFactory observers, VersionObserver versions) {
  std::unique_ptr<ModelRegistry> registry(new ModelRegistry(
      options, batching, inference, completions, std::move(observers), std::move(versions)));
  for (const auto& source : options.sources) {
    for (const auto& existing : registry->entries_) {
      if (existing.source.name == source.name)
        return absl::InvalidArgumentError(
            absl::StrCat("--model: name '", source.name, "' given twice"));
    }
    ASSIGN_OR_RETURN(const LocatedSource located,
                     LocateSource(source, registry->version_observer_.on_fetch));
    ASSIGN_OR_RETURN(auto served, registry->LoadVersion(source.name, located));
    Entry entry;
    entry.source = source;
    entry.changes = ChangeTracker(located.located.signature);
    entry.versions.push_back(std::move(served));
    registry->entries_.push_back(std::move(entry));
  }
  for (const auto& entry : registry->entries_) {
    if (registry->version_observer_.on_serving)
      registry->version_observer_.on_serving(*entry.versions.front(), true);
  }
  registry->default_name_ =
      options.default_model.empty() ? options.sources.front().name : options.default_model;
  if (!registry->Find(registry->default_name_).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--default_model=", options.default_model, ": not among the served models"));
  }
  return registry;
}

absl::StatusOr<std::unique_ptr<model_store::Model>> ModelRegistry::LoadOffThread(
    const std::string& directory, model_store::ModelOptions options) const {
  // On a thread of its own that then exits: LibTorch's OpenMP gives every thread that starts
  // parallel work a pool of its own, and while those pools outnumber the CPUs libgomp cuts
  // spin-waits, which tripled forward-pass times when the main thread loaded and a batcher
  // thread ran (server/app/server.h, inference_). A thread that exits takes its pool with it, so
  // serving keeps its speed after a reload, and a reload does not stall the inference thread while
  // it loads.
  // Its forward passes, though, run where serving runs them: oneDNN counts a bf16 primitive's
  // scratch on the thread that builds it (model_store::ForwardRunner).
  WorkerPool* inference = inference_;
  options.run_forward = [inference](const std::function<void()>& passes) {
    inference->RunAndWait(passes);
  };
  absl::StatusOr<std::unique_ptr<model_store::Model>> model;
  std::thread([&] { model = model_store::Model::Load(directory, options); }).join();
  return model;
}

absl::StatusOr<std::shared_ptr<const ServedModel>> ModelRegistry::LoadVersion(
    const std::string& name, const LocatedSource& source, const ServedModel* keep_dtype_of) const {
  const std::string& directory = source.located.directory;
  model_store::ModelOptions load_options;
  load_options.encoder.dtype = options_.dtype;
  const bool keep_dtype =
      keep_dtype_of != nullptr && options_.dtype == model_store::ComputeDType::kAuto;
  if (keep_dtype) load_options.encoder.dtype = keep_dtype_of->model->encoder().dtype();
  load_options.encoder.intra_op_threads = options_.intra_op_threads;
  load_options.encoder.device = options_.device;
  load_options.max_input_length = options_.max_input_length;
  // The content hash names a flat directory's version, and keys auto's cached choice (a
  // versioned directory's name does not say what is in it).
  std::string content_version;
  // A kept dtype needs no hash: auto does not run.
  const bool auto_dtype = load_options.encoder.dtype == model_store::ComputeDType::kAuto;
  if (source.located.version.empty() || auto_dtype)
    content_version = model_store::ComputeModelVersion(directory);
  if (auto_dtype) {
    load_options.dtype_cache_dir = options_.dtype_cache_dir;
    load_options.content_version = content_version;
  }
  load_options.tempscale_schedule_file = source.tempscale_schedule;
  load_options.config_overrides = source.hf_overrides;
  // Overrides make another model of the same files (a reranker of a causal LM): a version of
  // its own, and a dtype choice of its own.
  const std::string overrides_tag =
      source.hf_overrides.empty()
          ? ""
          : absl::StrCat("+overrides.", model_store::Sha256Hex(source.hf_overrides).substr(0, 8));
  if (auto_dtype) absl::StrAppend(&load_options.content_version, overrides_tag);
  auto model = LoadOffThread(directory, std::move(load_options));
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat("model '", name, "': ", model.status().message()));
  }
  auto served = std::make_shared<ServedModel>();
  served->name = name;
  served->version = source.located.version.empty() ? content_version : source.located.version;
  // An attached schedule changes AUTO's vectors: it is part of the version (its digest).
  if (!source.tempscale_schedule.empty()) {
    auto digest =
        model_store::FileDigest(source.tempscale_schedule, model_store::DigestKind::kSha256);
    if (!digest.ok()) return digest.status();
    absl::StrAppend(&served->version, "+tempscale.", digest->substr(0, 8));
  }
  absl::StrAppend(&served->version, overrides_tag);
  served->hub = source.hub;
  if (keep_dtype) served->dtype_kept_from = keep_dtype_of->version;
  served->model = *std::move(model);
  const model_store::Encoder* encoder = &served->model->encoder();
  BatcherOptions batching = batching_;
  auto tokens =
      BatchTokensFor(*served->model, batching_.max_batch_tokens, options_.gpu_memory_utilization);
  if (!tokens.ok()) {
    return absl::Status(tokens.status().code(),
                        absl::StrCat("model '", name, "': ", tokens.status().message()));
  }
  batching.max_batch_tokens = *tokens;
  WorkerPool* inference = inference_;
  served->batcher = std::make_unique<Batcher>(
      [encoder, inference](const model_store::EncodeBatch& batch) {
        absl::StatusOr<model_store::EncodeResult> result;
        // A pass with no yield point is interactive (Batcher): it may run inside a background
        // pass's, between two of its layers.
        inference->RunAndWait([&] { result = encoder->Encode(batch); },
                              /*urgent=*/!batch.between_layers);
        return result;
      },
      served->model->pooling(), batching, completions_,
      batch_observers_ ? batch_observers_(*served) : nullptr,
      [inference] { inference->RunUrgent(); });
  return served;
}

absl::StatusOr<std::shared_ptr<const ServedModel>> ModelRegistry::Find(
    const std::string& name) const {
  const std::string& wanted = name.empty() ? default_name_ : name;
  const size_t at = wanted.rfind('@');
  const std::string model = wanted.substr(0, at);
  const std::string version = at == std::string::npos ? "" : wanted.substr(at + 1);
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& entry : entries_) {
    if (entry.source.name != model) continue;
    if (version.empty()) return entry.versions.front();
    std::vector<std::string> loaded;
    for (const auto& served : entry.versions) {
      if (served->version == version) return served;
      loaded.push_back(served->version);
    }
    return absl::NotFoundError(
        absl::StrCat("model: version ", QuotedValue(version), " of '", model,
                     "' is not loaded; loaded: ", absl::StrJoin(loaded, ", ")));
  }
  std::vector<std::string> names;
  for (const Entry& entry : entries_) names.push_back(entry.source.name);
  return absl::NotFoundError(absl::StrCat(
      "model: ", QuotedValue(wanted), " is not served; available: ", absl::StrJoin(names, ", ")));
}

std::vector<std::shared_ptr<const ServedModel>> ModelRegistry::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<const ServedModel>> current;
  for (const Entry& entry : entries_) current.push_back(entry.versions.front());
  return current;
}

absl::StatusOr<std::vector<ReloadOutcome>> ModelRegistry::Reload(const std::string& name,
                                                                 bool settled, bool measure_dtype) {
  std::lock_guard<std::mutex> reloading(reload_mu_);
  std::vector<ReloadOutcome> outcomes;
  bool found = false;
  for (Entry& entry : entries_) {
    if (!name.empty() && entry.source.name != name) continue;
    found = true;
    outcomes.push_back(ReloadEntry(entry, settled, measure_dtype));
  }
  if (!options_.store.empty() && (name.empty() || !found)) {  // after the loop: it grows entries_
    for (ReloadOutcome& added : AddFromStore(name, settled)) {
      found = true;
      outcomes.push_back(std::move(added));
    }
  }
  ReleaseUnused();
  if (!found) {
    return absl::NotFoundError(
        absl::StrCat("model: ", QuotedValue(name), " is not served; nothing to reload"));
  }
  return outcomes;
}

ReloadOutcome ModelRegistry::ReloadEntry(Entry& entry, bool settled, bool measure_dtype) {
  ReloadOutcome outcome;
  outcome.model = entry.source.name;
  std::shared_ptr<const ServedModel> serving;
  {
    std::lock_guard<std::mutex> lock(mu_);
    serving = entry.versions.front();
  }
  outcome.version = serving->version;
  // A poll (settled) reads a Hub model's cache only, so a ref moved by `embedctl pull` is picked
  // up without asking the Hub every interval; POST /admin/reload asks the Hub.
  ModelSource source = entry.source;
  if (settled) source.hub_settings.offline = true;
  auto located = LocateSource(source, version_observer_.on_fetch);
  if (!located.ok()) {
    outcome.result = ReloadOutcome::Result::kFailed;
    outcome.error = std::string(located.status().message());
    return outcome;
  }
  if (!entry.changes.ShouldTake(located->located.signature, settled)) return outcome;
  auto served = LoadVersion(entry.source.name, *located, measure_dtype ? nullptr : serving.get());
  entry.changes.Taken(located->located.signature);
  if (!served.ok()) {
    outcome.result = ReloadOutcome::Result::kFailed;
    outcome.error = std::string(served.status().message());
    return outcome;
  }
  outcome.result = ReloadOutcome::Result::kLoaded;
  outcome.dtype = model_store::ComputeDTypeName((*served)->model->encoder().dtype());
  outcome.dtype_kept_from = (*served)->dtype_kept_from;
  // Same bytes under new timestamps, or back to the serving version after a refused one.
  if ((*served)->version == outcome.version) return outcome;
  std::shared_ptr<const ServedModel> previous;
  {
    std::lock_guard<std::mutex> lock(mu_);
    previous = std::move(serving);
    entry.versions.push_front(*served);
    while (entry.versions.size() > std::max<size_t>(1, options_.versions_kept)) {
      replaced_.push_back(entry.versions.back());
      entry.versions.pop_back();
    }
  }
  if (version_observer_.on_serving) {
    version_observer_.on_serving(**served, true);
    version_observer_.on_serving(*previous, false);
  }
  outcome.version = (*served)->version;
  return outcome;
}

bool ModelRegistry::Serves(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& entry : entries_)
    if (entry.source.name == name) return true;
  return false;
}

std::vector<ReloadOutcome> ModelRegistry::AddFromStore(const std::string& name, bool settled) {
  std::vector<ReloadOutcome> outcomes;
  auto found = ListStoreModels(options_.store);
  if (!found.ok()) return outcomes;  // the store is gone for now; what serves keeps serving
  for (const ModelSource& source : *found) {
    const std::string& model = source.name;
    if ((!name.empty() && model != name) || Serves(model)) continue;
    auto located = LocateSource(source, version_observer_.on_fetch);
    if (!located.ok()) continue;  // changed since the scan
    ChangeTracker& candidate = candidates_[model];
    if (!candidate.ShouldTake(located->located.signature, settled)) continue;
    candidate.Taken(located->located.signature);

    ReloadOutcome outcome;
    outcome.model = model;
    outcome.new_model = true;
    auto served = LoadVersion(model, *located);
    if (!served.ok()) {
      outcome.result = ReloadOutcome::Result::kFailed;
      outcome.error = std::string(served.status().message());
      outcomes.push_back(std::move(outcome));
      continue;
    }
    Entry entry;
    entry.source = source;
    entry.changes = ChangeTracker(located->located.signature);
    entry.versions.push_back(*served);
    {
      std::lock_guard<std::mutex> lock(mu_);
      entries_.push_back(std::move(entry));
    }
    candidates_.erase(model);
    if (version_observer_.on_serving) version_observer_.on_serving(**served, true);
    outcome.result = ReloadOutcome::Result::kLoaded;
    outcome.version = (*served)->version;
    outcome.dtype = model_store::ComputeDTypeName((*served)->model->encoder().dtype());
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

void ModelRegistry::ReleaseUnused() {
  std::vector<std::shared_ptr<const ServedModel>> unused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = replaced_.begin(); it != replaced_.end();) {
      // Only this list holds it, and only Find (under mu_) could hand out a new reference,
      // but it is no longer in entries_: no request can take it from here on.
      if (it->use_count() == 1) {
        unused.push_back(std::move(*it));
        it = replaced_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& served : unused) {
    if (version_observer_.on_unloaded) version_observer_.on_unloaded(*served);
  }
  // `unused` goes out of scope here: each batcher stops on this thread.
}

}  // namespace embedding::server
