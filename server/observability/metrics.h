// Every Prometheus metric the server exports: serving metrics and the per-length-bucket
// collapse metrics. Thread-safe; Render() gives the text exposition format.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model_store/kernels/compute_device.h"
#include "server/core/batcher.h"
#include "server/core/call_observer.h"
#include "server/core/embed_result.h"
#include "server/core/model_catalog.h"
#include "server/observability/collapse_window.h"
#include "server/observability/device_utilization.h"
#include "server/observability/metric_groups.h"

namespace embedding::server {

class Metrics {
 public:
  // `collapse_window` is W, the number of recent vectors per collapse series.
  explicit Metrics(size_t collapse_window);

  // Hooks to pass to the Embedder and the batchers.
  CallObserver CallHooks();
  Batcher::BatchObserver BatchHook(const std::string& model);

  // A loaded version: 1 while it is its model's current version, 0 while an older one stays
  // loaded (NAME@VERSION). Removed when the version is unloaded.
  void SetModelInfo(const ServedModel& model, bool current);
  void RemoveModelInfo(const ServedModel& model);
  // One reload attempt for `model`; a failed one sets embedding_model_reload_failing to 1
  // until a later attempt loads or finds nothing new.
  void ObserveReload(const std::string& model, const char* result);
  // One line of a Batch API job finished: "completed" or "failed"; and the lines left.
  void ObserveBatchLine(const char* state);
  void SetBatchLinesPending(int64_t lines);
  // Values read at scrape time (queue, in-flight), and the admission bounds they run against.
  void SetGaugeSources(std::function<int64_t()> queued_tokens,
                       std::function<int64_t()> in_flight_requests);
  void SetLimits(int64_t max_queued_tokens, int64_t max_concurrent_requests);
  // The GPU the models run on, read at scrape time; never set on the CPU.
  void SetDeviceMemorySource(const std::string& device,
                             std::function<model_store::DeviceMemory()> read);
  // The same GPU's utilisation, where NVML answers (device_utilization.h); a scrape at which
  // it does not keeps the last figures.
  void SetDeviceUtilizationSource(const std::string& device,
                                  std::function<absl::StatusOr<DeviceUtilization>()> read);

  // The exposition text of every metric.
  std::string Render();

  // What the service reports; public for tests.
  void ObserveScored(const ServedModel& model, const ScoreAnswer& answer);
  void ObserveEmbedded(const ServedModel& model, const EmbedParams& params,
                       const EmbedResult& result);
  void ObserveRpc(const char* method, absl::StatusCode code, double seconds);
  // Counts each ignored field of a call by method and name; a name's first sighting on a
  // method is logged (a warning), later ones are only counted. A client chooses the names, so
  // each method keeps at most kMaxIgnoredFieldNames (then "_other"), each cut to 64 bytes.
  void ObserveIgnoredFields(const char* method, const std::vector<std::string>& fields);
  static constexpr size_t kMaxIgnoredFieldNames = 64;
  void ObserveBatch(const std::string& model, const BatchStats& stats);

 private:
  struct CollapseSeries {
    explicit CollapseSeries(size_t w) : window(w) {}
    CollapseWindow window;
    // The model version whose vectors the window holds: versions are never mixed.
    std::string version;
    prometheus::Gauge* mean_cosine = nullptr;
    prometheus::Gauge* window_size = nullptr;
    prometheus::Histogram* centroid_cosine = nullptr;
    prometheus::Histogram* hf_ratio = nullptr;
  };
  CollapseSeries& Series(const std::string& model, const std::string& bucket,
                         const std::string& tempscale);
  // The document's vector joins its series' window; the series' gauges follow.
  void ObserveCollapse(const ServedModel& model, const std::string& tempscale,
                       const DocumentResult& doc);

  const size_t collapse_window_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::function<int64_t()> queued_tokens_source_;
  std::function<int64_t()> in_flight_source_;
  std::function<model_store::DeviceMemory()> device_memory_source_;
  // allocated, reserved, free, total; set with the source.
  std::vector<prometheus::Gauge*> device_memory_;
  std::function<absl::StatusOr<DeviceUtilization>()> device_utilization_source_;
  prometheus::Gauge* compute_utilization_ = nullptr;
  prometheus::Gauge* memory_utilization_ = nullptr;
  CollapseMetrics collapse_{*registry_};
  RequestMetrics requests_{*registry_};
  ScoreMetrics scores_{*registry_};
  BatchMetrics batches_{*registry_};
  ServerMetrics server_{*registry_};
  prometheus::Gauge& queued_tokens_ = server_.queued_tokens.Add({});
  prometheus::Gauge& in_flight_ = server_.in_flight.Add({});

  std::mutex ignored_mu_;
  std::map<std::string, std::set<std::string>> ignored_names_;  // per method, as labelled

  std::mutex mu_;  // collapse series
  std::map<std::tuple<std::string, std::string, std::string>, std::unique_ptr<CollapseSeries>>
      series_;
};

}  // namespace embedding::server
