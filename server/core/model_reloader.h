// Keeps served models current: checks their directories on a timer, reloads on an admin
// call, reports every outcome (log line and metrics), and frees replaced versions once no
// request holds them.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/model_registry.h"

namespace embedding::server {

class ModelReloader {
 public:
  using OutcomeObserver = std::function<void(const ReloadOutcome&)>;

  // Checks every model's directory every `interval` (zero: only on ReloadNow) and takes a new
  // version once it looks the same at two checks in a row, measuring its dtype again when
  // `measure_dtype` (--reload-dtype). `registry` outlives the reloader.
  ModelReloader(ModelRegistry* registry, absl::Duration interval, bool measure_dtype,
                OutcomeObserver observer);
  // Stops the timer thread (waiting for a load in progress).
  ~ModelReloader();

  // Loads whatever changed in `model`'s directory (every model's for ""), now; `measure_dtype`
  // as ModelRegistry::Reload, unset: as the timer does. Blocks while loading. NOT_FOUND for a
  // model not served.
  absl::StatusOr<std::vector<ReloadOutcome>> ReloadNow(const std::string& model,
                                                       std::optional<bool> measure_dtype);

 private:
  void Run();
  void Report(const std::vector<ReloadOutcome>& outcomes) const;

  ModelRegistry* const registry_;
  const absl::Duration interval_;
  const bool measure_dtype_;
  const OutcomeObserver observer_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace embedding::server
