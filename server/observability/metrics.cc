#include "server/observability/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "model_store/encoder/encoder.h"
#include "server/core/scoring.h"
#include "server/observability/server_log.h"

namespace embedding::server {
namespace {

const Histogram::BucketBoundaries& CosineBuckets() {
  static const auto* const kBuckets =
      new Histogram::BucketBoundaries{0, .5, .7, .8, .85, .9, .925, .95, .975, .99, .995, 1};
  return *kBuckets;
}

const Histogram::BucketBoundaries& RatioBuckets() {
  static const auto* const kBuckets =
      new Histogram::BucketBoundaries{0, .05, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, 1};
  return *kBuckets;
}

const Histogram::BucketBoundaries& SecondsBuckets() {
  static const auto* const kBuckets = new Histogram::BucketBoundaries{
      .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120};
  return *kBuckets;
}

const Histogram::BucketBoundaries& TemperatureBuckets() {
  static const auto* const kBuckets =
      new Histogram::BucketBoundaries{.05, .1, .25, .5, .6, .7, .8, .9, .95, 1, 1.25, 1.5, 2, 4};
  return *kBuckets;
}

Histogram::BucketBoundaries PowersOfTwo(double first, double last) {
  Histogram::BucketBoundaries out;
  for (double b = first; b <= last; b *= 2) out.push_back(b);
  return out;
}

}  // namespace

Metrics::Metrics(size_t collapse_window)
    : collapse_window_(collapse_window), registry_(std::make_shared<prometheus::Registry>()) {
  server_.build_info.Add({{"version", EMBEDDING_VERSION}}).Set(1);  // the CMake project version
}

CallObserver Metrics::CallHooks() {
  CallObserver hooks;
  hooks.on_call_done = [this](const CallRecord& call) {
    ObserveRpc(call.method, call.code, call.seconds);
    if (!call.ignored_fields.empty()) ObserveIgnoredFields(call.method, call.ignored_fields);
  };
  hooks.on_embedded = [this](const ServedModel& model, const EmbedParams& params,
                             const EmbedResult& result) { ObserveEmbedded(model, params, result); };
  hooks.on_scored = [this](const ServedModel& model, const ScoreAnswer& answer) {
    ObserveScored(model, answer);
  };
  return hooks;
}

Batcher::BatchObserver Metrics::BatchHook(const std::string& model) {
  return [this, model](const BatchStats& stats) { ObserveBatch(model, stats); };
}

namespace {

prometheus::Labels ModelInfoLabels(const ServedModel& model) {
  return {{"model", model.name},
          {"version", model.version},
          {"architecture", model.model->config().family},
          {"dtype", model_store::ComputeDTypeName(model.model->encoder().dtype())},
          {"device", model_store::ComputeDeviceName(model.model->encoder().device())}};
}

}  // namespace

void Metrics::SetModelInfo(const ServedModel& model, bool current) {
  server_.model_info.Add(ModelInfoLabels(model)).Set(current ? 1 : 0);
  server_.reload_failing.Add({{"model", model.name}});  // exported as 0 from the start
}

void Metrics::RemoveModelInfo(const ServedModel& model) {
  server_.model_info.Remove(&server_.model_info.Add(ModelInfoLabels(model)));
}

void Metrics::ObserveReload(const std::string& model, const char* result) {
  const std::string outcome = result;
  if (outcome == "unchanged") return;
  server_.reloads.Add({{"model", model}, {"result", outcome}}).Increment();
  server_.reload_failing.Add({{"model", model}}).Set(outcome == "failed" ? 1 : 0);
}

void Metrics::ObserveBatchLine(const char* state) {
  server_.batch_requests.Add({{"state", state}}).Increment();
}

void Metrics::SetBatchLinesPending(int64_t lines) {
  server_.batch_lines_pending.Add({}).Set(static_cast<double>(lines));
}

void Metrics::SetLimits(int64_t max_queued_tokens, int64_t max_concurrent_requests) {
  server_.queued_tokens_limit.Add({}).Set(static_cast<double>(max_queued_tokens));
  server_.concurrent_requests_limit.Add({}).Set(static_cast<double>(max_concurrent_requests));
}

void Metrics::SetGaugeSources(std::function<int64_t()> queued_tokens,
                              std::function<int64_t()> in_flight_requests) {
  queued_tokens_source_ = std::move(queued_tokens);
  in_flight_source_ = std::move(in_flight_requests);
}

Metrics::CollapseSeries& Metrics::Series(const std::string& model, const std::string& bucket,
                                         const std::string& tempscale) {
  auto& slot = series_[{model, bucket, tempscale}];
  if (!slot) {
    const prometheus::Labels labels = {
        {"model", model}, {"length_bucket", bucket}, {"tempscale", tempscale}};
    slot = std::make_unique<CollapseSeries>(collapse_window_);
    slot->window_size = &collapse_.window_size.Add(labels);
    slot->centroid_cosine = &collapse_.centroid_cosine.Add(labels, CosineBuckets());
    slot->hf_ratio = &collapse_.hf_ratio.Add(labels, RatioBuckets());
  }
  return *slot;
}

void Metrics::ObserveCollapse(const ServedModel& model, const std::string& tempscale,
                              const DocumentResult& doc) {
  std::lock_guard<std::mutex> lock(mu_);
  CollapseSeries& series = Series(model.name, doc.length_bucket, tempscale);
  if (series.version != model.version) {
    series.window.Clear();
    series.version = model.version;
  }
  if (auto cosine = series.window.Add(doc.collapse_vector))
    series.centroid_cosine->Observe(*cosine);
  series.window_size->Set(static_cast<double>(series.window.size()));
  // Absent until two vectors exist: a placeholder 0 (or NaN) would read as a real value.
  if (auto mean = series.window.MeanCosine()) {
    if (series.mean_cosine == nullptr) {
      series.mean_cosine = &collapse_.mean_cosine.Add(
          {{"model", model.name}, {"length_bucket", doc.length_bucket}, {"tempscale", tempscale}});
    }
    series.mean_cosine->Set(*mean);
  }
  for (float r : doc.high_frequency_ratios) series.hf_ratio->Observe(r);
}

void Metrics::ObserveEmbedded(const ServedModel& model, const EmbedParams& params,
                              const EmbedResult& result) {
  const std::string& name = model.name;
  const std::string tempscale = params.auto_temperature      ? "auto"
                                : params.temperature == 1.0f ? "off"
                                                             : "on";
  const std::string strategy = StrategyName(params.strategy);
  for (const DocumentResult& doc : result.documents) {
    ObserveCollapse(model, tempscale, doc);
    requests_.documents
        .Add({{"model", name},
              {"length_bucket", doc.length_bucket},
              {"tempscale", tempscale},
              {"strategy", strategy}})
        .Increment();
    prometheus::Histogram& tau = collapse_.temperature.Add(
        {{"model", name}, {"length_bucket", doc.length_bucket}}, TemperatureBuckets());
    if (doc.sequence_temperatures.empty()) tau.Observe(doc.temperature);
    for (float t : doc.sequence_temperatures) tau.Observe(t);
    requests_.tokens.Add({{"model", name}}).Increment(doc.token_count);
    requests_.chunks.Add({{"model", name}}).Increment(doc.chunk_count);
    if (doc.truncated) requests_.truncated.Add({{"model", name}}).Increment();
    const prometheus::Labels bucket = {{"model", name}, {"length_bucket", doc.length_bucket}};
    if (params.sparse)
      requests_.sparse_weights.Add(bucket, PowersOfTwo(1, 16384)).Observe(doc.sparse.ids.size());
    if (params.multi_vector)
      requests_.multi_vectors.Add(bucket, PowersOfTwo(1, 131072)).Observe(doc.multi_vector.count());
  }
  requests_.queue_duration.Add({{"model", name}}, SecondsBuckets()).Observe(result.queue_seconds);
  requests_.tokenize_duration.Add({{"model", name}}, SecondsBuckets())
      .Observe(result.tokenize_seconds);
  requests_.inference_duration.Add({{"model", name}}, SecondsBuckets())
      .Observe(result.inference_seconds);
}

void Metrics::ObserveScored(const ServedModel& model, const ScoreAnswer& answer) {
  static const auto* const kScoreBuckets =
      new Histogram::BucketBoundaries{.05, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, .99};
  const model_store::ClassifierConfig& head = model.model->config().classifier;
  const std::string& method = answer.method;
  for (const ScoredInput& input : answer.results) {
    const prometheus::Labels bucket = {{"model", model.name}, {"length_bucket", input.length_bucket}};
    scores_.pairs
        .Add({{"model", model.name}, {"method", method}, {"length_bucket", input.length_bucket}})
        .Increment();
    scores_.tokens.Add({{"model", model.name}}).Increment(input.token_count);
    scores_.chunks.Add(bucket, PowersOfTwo(1, 1024)).Observe(input.chunk_count);
    const std::vector<float> scores =
        answer.raw_scores ? ScoresOf(input.scores, head.score, false) : input.scores;
    if (!scores.empty())
      scores_.scores.Add(bucket, *kScoreBuckets).Observe(*std::max_element(scores.begin(), scores.end()));
  }
}

void Metrics::ObserveRpc(const char* method, absl::StatusCode code, double seconds) {
  // "INVALID_ARGUMENT" and so on: the google.rpc.Code names both doors share.
  requests_.requests.Add({{"method", method}, {"code", absl::StatusCodeToString(code)}})
      .Increment();
  requests_.duration.Add({{"method", method}}, SecondsBuckets()).Observe(seconds);
}

void Metrics::ObserveIgnoredFields(const char* method, const std::vector<std::string>& fields) {
  for (const std::string& field : fields) {
    // 64 bytes at most, cut before a UTF-8 continuation byte so the label stays UTF-8.
    size_t length = std::min<size_t>(field.size(), 64);
    while (length < field.size() && length > 0 && (field[length] & 0xC0) == 0x80) --length;
    std::string name = field.substr(0, length);
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(ignored_mu_);
      std::set<std::string>& names = ignored_names_[method];
      if (names.count(name) == 0) {
        if (names.size() < kMaxIgnoredFieldNames) {
          names.insert(name);
          first = true;
        } else {
          name = "_other";
        }
      }
    }
    if (first) {
      ServerLog(LogLevel::kWarning,
                absl::StrCat(method, ": ignored the body field '", absl::CHexEscape(name),
                             "', which the route does not define (logged once per field; "
                             "counted in embedding_http_ignored_fields_total)"));
    }
    requests_.ignored_fields.Add({{"method", method}, {"field", name}}).Increment();
  }
}

void Metrics::ObserveBatch(const std::string& model, const BatchStats& stats) {
  batches_.batches.Add({{"model", model}}).Increment();
  batches_.sequences.Add({{"model", model}}, PowersOfTwo(1, 256)).Observe(stats.sequences);
  batches_.padded_tokens.Add({{"model", model}}, PowersOfTwo(16, 65536))
      .Observe(stats.padded_tokens);
  const double padding = stats.padded_tokens > 0
                             ? 1.0 - static_cast<double>(stats.real_tokens) / stats.padded_tokens
                             : 0.0;
  batches_.padding_ratio.Add({{"model", model}}, RatioBuckets()).Observe(padding);
  if (stats.out_of_memory) batches_.out_of_memory.Add({{"model", model}}).Increment();
}

void Metrics::SetDeviceMemorySource(const std::string& device,
                                    std::function<model_store::DeviceMemory()> read) {
  device_memory_source_ = std::move(read);
  for (const char* kind : {"allocated", "reserved", "free", "total"}) {
    device_memory_.push_back(&server_.device_memory.Add({{"device", device}, {"kind", kind}}));
  }
}

void Metrics::SetDeviceUtilizationSource(const std::string& device,
                                         std::function<absl::StatusOr<DeviceUtilization>()> read) {
  device_utilization_source_ = std::move(read);
  compute_utilization_ = &server_.device_utilization.Add({{"device", device}, {"kind", "compute"}});
  memory_utilization_ = &server_.device_utilization.Add({{"device", device}, {"kind", "memory"}});
}

std::string Metrics::Render() {
  if (queued_tokens_source_) queued_tokens_.Set(static_cast<double>(queued_tokens_source_()));
  if (in_flight_source_) in_flight_.Set(static_cast<double>(in_flight_source_()));
  if (device_memory_source_) {
    const model_store::DeviceMemory memory = device_memory_source_();
    const int64_t values[] = {memory.allocated_bytes, memory.reserved_bytes, memory.free_bytes,
                              memory.total_bytes};
    for (size_t i = 0; i < device_memory_.size(); ++i) {
      device_memory_[i]->Set(static_cast<double>(values[i]));
    }
  }
  if (device_utilization_source_) {
    if (const absl::StatusOr<DeviceUtilization> now = device_utilization_source_(); now.ok()) {
      compute_utilization_->Set(now->compute);
      memory_utilization_->Set(now->memory);
    }
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace embedding::server
