#include "server/app/model_events.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model_store/kernels/cpu_features.h"
#include "server/observability/server_log.h"

namespace embedding::server {
namespace {

// "model 'demo' version 1 (bert, 384 dims, window 510 tokens (512 with special tokens, by
// config.json max_position_embeddings), weights from model.safetensors, fp32)", and for a Hub model
// "from BAAI/bge-m3 at main, commit 5617a9f6...".
void LogServing(const ServedModel& served) {
  const model_store::Model& model = *served.model;
  const std::string origin =
      served.hub ? absl::StrCat(" from ", served.hub->repository, " at ", served.hub->revision,
                                ", commit ", served.hub->commit)
                 : "";
  ServerLog(LogLevel::kInfo,
            absl::StrCat("model '", served.name, "' version ", served.version, origin, " (",
                         model.config().family, ", ", model.encoder().embedding_dim(), " dims",
                         model.sentence_transformers().dense.empty()
                             ? ""
                             : absl::StrCat(" (", model.sentence_transformers().dense.size(),
                                            " Dense modules after pooling)"),
                         ", window ", model.max_content_tokens(), " tokens (",
                         model.max_input_length(), " with special tokens, by ",
                         model.window_source(), "), weights from ", model.weights_layout(), ", on ",
                         model_store::ComputeDeviceName(model.encoder().device()), ", ",
                         model_store::ComputeDTypeName(model.encoder().dtype()), ")",
                         model.is_demo() ? " -- DEMO model: random weights, vectors are "
                                           "not semantically meaningful"
                                         : ""));
  // Once per load, not per tensor: a checkpoint may carry hundreds (heads of other tasks).
  if (!model.unread_tensors().empty()) {
    ServerLog(
        LogLevel::kInfo,
        absl::StrCat("model '", served.name, "' ignores ", model.unread_tensors().size(),
                     " tensor(s) it does not use: ", absl::StrJoin(model.unread_tensors(), ", ")));
  }
  // Bit-identical is the rule (docs/operating.md); where a device's kernels break it, say so.
  if (model.batch_invariance_bound().value_or(0) > 0) {
    ServerLog(LogLevel::kInfo,
              absl::StrCat("model '", served.name, "' vectors alone and batched differ by up to ",
                           *model.batch_invariance_bound(), " per component on ",
                           model_store::ComputeDeviceName(model.encoder().device()), " in ",
                           model_store::ComputeDTypeName(model.encoder().dtype()),
                           " (measured at load; ModelInfo.batch_invariance_bound)"));
  }
  for (const auto& trial : model.dtype_trials()) {
    const std::string figures =
        trial.unavailable.empty()
            ? absl::StrCat("cosine to fp32 ", trial.min_cosine, " (guard ",
                           model_store::AccuracyGuard(trial.dtype), "), ",
                           static_cast<int64_t>(trial.tokens_per_second), " tokens/s",
                           trial.passed ? "" : ", failed its guard")
            : trial.unavailable;
    ServerLog(LogLevel::kInfo,
              absl::StrCat("model '", served.name, "' --dtype=auto tried ",
                           model_store::ComputeDTypeName(trial.dtype), ": ", figures));
  }
  if (!model.dtype_trials().empty()) {
    ServerLog(LogLevel::kInfo,
              absl::StrCat("model '", served.name, "' --dtype=auto chose ",
                           model_store::ComputeDTypeName(model.encoder().dtype()), " on ",
                           model_store::CpuIsa(), " (", model.dtype_choice_source(), ")"));
  }
}

// A reload that found something: what serves now, or why the new version was refused.
void LogReload(const ReloadOutcome& outcome) {
  if (outcome.result == ReloadOutcome::Result::kLoaded) {
    const std::string dtype =
        outcome.dtype_kept_from.empty()
            ? absl::StrCat(" in ", outcome.dtype)
            : absl::StrCat(" in ", outcome.dtype, ", the dtype version ", outcome.dtype_kept_from,
                           " served in (kept: --reload-dtype=measure or POST "
                           "/admin/reload?dtype=measure measures it again)");
    ServerLog(LogLevel::kInfo,
              absl::StrCat("model '", outcome.model, "' ",
                           outcome.new_model ? "added from --model-store" : "reloaded",
                           ": version ", outcome.version, " serving", dtype));
  } else if (outcome.result == ReloadOutcome::Result::kFailed && outcome.new_model) {
    ServerLog(LogLevel::kError, absl::StrCat("model '", outcome.model,
                                             "' in --model-store refused: ", outcome.error));
  } else if (outcome.result == ReloadOutcome::Result::kFailed) {
    ServerLog(LogLevel::kError,
              absl::StrCat("model '", outcome.model, "': new version refused: ", outcome.error,
                           "; version ", outcome.version, " keeps serving"));
  }
}

}  // namespace

ModelRegistry::VersionObserver ModelEvents::VersionObserver() const {
  ModelRegistry::VersionObserver observer;
  observer.on_serving = [metrics = metrics_](const ServedModel& model, bool current) {
    if (current) LogServing(model);
    metrics->SetModelInfo(model, current);
  };
  observer.on_fetch = [](const std::string& line) { ServerLog(LogLevel::kInfo, line); };
  observer.on_unloaded = [metrics = metrics_](const ServedModel& model) {
    metrics->RemoveModelInfo(model);
    ServerLog(LogLevel::kInfo, absl::StrCat("model '", model.name, "' version ", model.version,
                                            " unloaded (replaced, and no request holds it)"));
  };
  return observer;
}

ModelReloader::OutcomeObserver ModelEvents::ReloadObserver() const {
  return [metrics = metrics_](const ReloadOutcome& outcome) {
    metrics->ObserveReload(outcome.model, ReloadResultName(outcome.result));
    LogReload(outcome);
  };
}

}  // namespace embedding::server
