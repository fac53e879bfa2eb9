// What the server says when models come and go: one observer for the registry's version
// events and the reloader's outcomes, from start-up on, feeding both the log and the metrics.
#pragma once

#include "server/core/model_registry.h"
#include "server/core/model_reloader.h"
#include "server/observability/metrics.h"

namespace embedding::server {

class ModelEvents {
 public:
  // `metrics` must outlive the observers handed out.
  explicit ModelEvents(Metrics* metrics) : metrics_(metrics) {}

  // For ModelRegistry::Load: a version that starts serving is logged (architecture, size,
  // window, dtype and the --dtype=auto trials) and exported; an unloaded one is removed.
  ModelRegistry::VersionObserver VersionObserver() const;
  // For the ModelReloader: every reload attempt, logged and counted.
  ModelReloader::OutcomeObserver ReloadObserver() const;

 private:
  Metrics* const metrics_;
};

}  // namespace embedding::server
