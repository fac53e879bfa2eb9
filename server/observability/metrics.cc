#include "server/observability/metrics.h"

#include <prometheus/text_serializer.h>

#include "absl/status/status.h"
#include "model_store/encoder/encoder.h"

namespace embedding::server {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

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
    : collapse_window_(collapse_window),
      registry_(std::make_shared<prometheus::Registry>()),
      collapse_mean_cosine_(BuildGauge()
                                .Name("embedding_collapse_mean_cosine")
                                .Help("Mean pairwise cosine of the last W document vectors of the "
                                      "series; rises with length when embeddings collapse")
                                .Register(*registry_)),
      collapse_window_size_(BuildGauge()
                                .Name("embedding_collapse_window_size")
                                .Help("Vectors in the collapse window (n <= W)")
                                .Register(*registry_)),
      collapse_centroid_cosine_(BuildHistogram()
                                    .Name("embedding_collapse_centroid_cosine")
                                    .Help("Each new vector's cosine to its window's centroid, "
                                          "taken before it joins the window")
                                    .Register(*registry_)),
      token_hf_ratio_(BuildHistogram()
                          .Name("embedding_token_hf_ratio")
                          .Help("Per sequence, ||X - 1 mean(X)||_F / ||X||_F of the final hidden "
                                "states; low means token features collapsed to their mean")
                          .Register(*registry_)),
      documents_(BuildCounter()
                     .Name("embedding_documents_total")
                     .Help("Documents embedded")
                     .Register(*registry_)),
      temperature_(BuildHistogram()
                       .Name("embedding_temperature")
                       .Help("Attention temperature tau applied, per encoded sequence (AUTO varies "
                             "it by length)")
                       .Register(*registry_)),
      requests_(BuildCounter()
                    .Name("embedding_requests_total")
                    .Help("RPCs finished, by method and gRPC status code")
                    .Register(*registry_)),
      tokens_(BuildCounter()
                  .Name("embedding_tokens_total")
                  .Help("Content tokens of embedded documents")
                  .Register(*registry_)),
      chunks_(BuildCounter()
                  .Name("embedding_chunks_total")
                  .Help("Chunks of embedded documents")
                  .Register(*registry_)),
      truncated_(BuildCounter()
                     .Name("embedding_truncated_documents_total")
                     .Help("Documents whose tokens TRUNCATE dropped")
                     .Register(*registry_)),
      // Their _sum / _count per length bucket is the mean per document.
      sparse_weights_(BuildHistogram()
                          .Name("embedding_sparse_weights_per_document")
                          .Help("Non-zero lexical weights in a document's sparse output")
                          .Register(*registry_)),
      multi_vectors_(BuildHistogram()
                         .Name("embedding_multi_vectors_per_document")
                         .Help("Vectors in a document's multi-vector output")
                         .Register(*registry_)),
      request_duration_(BuildHistogram()
                            .Name("embedding_request_duration_seconds")
                            .Help("RPC duration, by method")
                            .Register(*registry_)),
      queue_duration_(BuildHistogram()
                          .Name("embedding_queue_duration_seconds")
                          .Help("Embed: admission to the first batch")
                          .Register(*registry_)),
      tokenize_duration_(BuildHistogram()
                             .Name("embedding_tokenize_duration_seconds")
                             .Help("Embed: tokenisation and chunk planning")
                             .Register(*registry_)),
      inference_duration_(BuildHistogram()
                              .Name("embedding_inference_duration_seconds")
                              .Help("Embed: forward passes the request took part in")
                              .Register(*registry_)),
      batch_sequences_(BuildHistogram()
                           .Name("embedding_batch_sequences")
                           .Help("Sequences per forward pass")
                           .Register(*registry_)),
      batch_padded_tokens_(BuildHistogram()
                               .Name("embedding_batch_padded_tokens")
                               .Help("Padded tokens (sequences x longest) per forward pass")
                               .Register(*registry_)),
      batch_padding_ratio_(BuildHistogram()
                               .Name("embedding_batch_padding_ratio")
                               .Help("Share of a forward pass's padded tokens that are padding")
                               .Register(*registry_)),
      batches_(BuildCounter()
                   .Name("embedding_batches_total")
                   .Help("Forward passes")
                   .Register(*registry_)),
      queued_tokens_(BuildGauge()
                         .Name("embedding_queued_tokens")
                         .Help("Tokens admitted and not yet encoded")
                         .Register(*registry_)
                         .Add({})),
      in_flight_(BuildGauge()
                     .Name("embedding_in_flight_requests")
                     .Help("Embed and Tokenize requests admitted and not finished")
                     .Register(*registry_)
                     .Add({})),
      model_info_(BuildGauge()
                      .Name("embedding_model_info")
                      .Help("Loaded model versions; 1 for the current version, 0 for an older "
                            "one still selectable as NAME@VERSION")
                      .Register(*registry_)),
      reloads_(BuildCounter()
                   .Name("embedding_model_reloads_total")
                   .Help("Model reload attempts that found a new version, by result "
                         "(loaded, failed)")
                   .Register(*registry_)),
      reload_failing_(BuildGauge()
                          .Name("embedding_model_reload_failing")
                          .Help("1 while the newest version on disk was refused and an older "
                                "one serves")
                          .Register(*registry_)) {
  BuildGauge()
      .Name("embedding_build_info")
      .Help("Build of this server; value 1")
      .Register(*registry_)
      .Add({{"version", EMBEDDING_VERSION}})  // the CMake project version
      .Set(1);
}

CallObserver Metrics::CallHooks() {
  CallObserver hooks;
  hooks.on_call_done = [this](const CallRecord& call) {
    ObserveRpc(call.method, call.code, call.seconds);
  };
  hooks.on_embedded = [this](const ServedModel& model, const EmbedParams& params,
                             const EmbedResult& result) { ObserveEmbedded(model, params, result); };
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
          {"dtype", model_store::ComputeDTypeName(model.model->encoder().dtype())}};
}

}  // namespace

void Metrics::SetModelInfo(const ServedModel& model, bool current) {
  model_info_.Add(ModelInfoLabels(model)).Set(current ? 1 : 0);
  reload_failing_.Add({{"model", model.name}});  // exported as 0 from the start
}

void Metrics::RemoveModelInfo(const ServedModel& model) {
  model_info_.Remove(&model_info_.Add(ModelInfoLabels(model)));
}

void Metrics::ObserveReload(const std::string& model, const char* result) {
  const std::string outcome = result;
  if (outcome == "unchanged") return;
  reloads_.Add({{"model", model}, {"result", outcome}}).Increment();
  reload_failing_.Add({{"model", model}}).Set(outcome == "failed" ? 1 : 0);
}

void Metrics::SetLimits(int64_t max_queued_tokens, int64_t max_concurrent_requests) {
  BuildGauge()
      .Name("embedding_queued_tokens_limit")
      .Help("--max-queued-tokens")
      .Register(*registry_)
      .Add({})
      .Set(static_cast<double>(max_queued_tokens));
  BuildGauge()
      .Name("embedding_concurrent_requests_limit")
      .Help("--max-concurrent-requests")
      .Register(*registry_)
      .Add({})
      .Set(static_cast<double>(max_concurrent_requests));
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
    slot->window_size = &collapse_window_size_.Add(labels);
    slot->centroid_cosine = &collapse_centroid_cosine_.Add(labels, CosineBuckets());
    slot->hf_ratio = &token_hf_ratio_.Add(labels, RatioBuckets());
  }
  return *slot;
}

void Metrics::ObserveEmbedded(const ServedModel& model, const EmbedParams& params,
                              const EmbedResult& result) {
  const std::string& name = model.name;
  const std::string tempscale = params.auto_temperature        ? "auto"
                                : params.temperature == 1.0f ? "off"
                                                             : "on";
  const std::string strategy = StrategyName(params.strategy);
  for (const DocumentResult& doc : result.documents) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      CollapseSeries& series = Series(name, doc.length_bucket, tempscale);
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
          series.mean_cosine = &collapse_mean_cosine_.Add(
              {{"model", name}, {"length_bucket", doc.length_bucket}, {"tempscale", tempscale}});
        }
        series.mean_cosine->Set(*mean);
      }
      for (float r : doc.high_frequency_ratios) series.hf_ratio->Observe(r);
    }
    documents_
        .Add({{"model", name},
              {"length_bucket", doc.length_bucket},
              {"tempscale", tempscale},
              {"strategy", strategy}})
        .Increment();
    prometheus::Histogram& tau =
        temperature_.Add({{"model", name}, {"length_bucket", doc.length_bucket}}, TemperatureBuckets());
    if (doc.sequence_temperatures.empty()) tau.Observe(doc.temperature);
    for (float t : doc.sequence_temperatures) tau.Observe(t);
    tokens_.Add({{"model", name}}).Increment(doc.token_count);
    chunks_.Add({{"model", name}}).Increment(doc.chunk_count);
    if (doc.truncated) truncated_.Add({{"model", name}}).Increment();
    const prometheus::Labels bucket = {{"model", name}, {"length_bucket", doc.length_bucket}};
    if (params.sparse)
      sparse_weights_.Add(bucket, PowersOfTwo(1, 16384)).Observe(doc.sparse.ids.size());
    if (params.multi_vector)
      multi_vectors_.Add(bucket, PowersOfTwo(1, 131072)).Observe(doc.multi_vector.count());
  }
  queue_duration_.Add({{"model", name}}, SecondsBuckets()).Observe(result.queue_seconds);
  tokenize_duration_.Add({{"model", name}}, SecondsBuckets()).Observe(result.tokenize_seconds);
  inference_duration_.Add({{"model", name}}, SecondsBuckets()).Observe(result.inference_seconds);
}

void Metrics::ObserveRpc(const char* method, absl::StatusCode code, double seconds) {
  // "INVALID_ARGUMENT" and so on: the google.rpc.Code names both doors share.
  requests_.Add({{"method", method}, {"code", absl::StatusCodeToString(code)}}).Increment();
  request_duration_.Add({{"method", method}}, SecondsBuckets()).Observe(seconds);
}

void Metrics::ObserveBatch(const std::string& model, const BatchStats& stats) {
  batches_.Add({{"model", model}}).Increment();
  batch_sequences_.Add({{"model", model}}, PowersOfTwo(1, 256)).Observe(stats.sequences);
  batch_padded_tokens_.Add({{"model", model}}, PowersOfTwo(16, 65536)).Observe(stats.padded_tokens);
  const double padding = stats.padded_tokens > 0
                             ? 1.0 - static_cast<double>(stats.real_tokens) / stats.padded_tokens
                             : 0.0;
  batch_padding_ratio_.Add({{"model", model}}, RatioBuckets()).Observe(padding);
}

std::string Metrics::Render() {
  if (queued_tokens_source_) queued_tokens_.Set(static_cast<double>(queued_tokens_source_()));
  if (in_flight_source_) in_flight_.Set(static_cast<double>(in_flight_source_()));
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace embedding::server
