// Every metric family the server exports, declared as data: one line per family (name, help),
// in four groups. A group is built by naming the registry (`RequestMetrics{*registry}`); its
// members register in declaration order. Adding a metric is one line here and the observation
// that feeds it in metrics.cc.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace embedding::server {

template <typename T>
using MetricFamily = prometheus::Family<T>;
using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

// Registers one family of type T in `registry`.
template <typename T>
MetricFamily<T>& Declare(prometheus::Registry& registry, const char* name, const char* help) {
  return prometheus::detail::Builder<T>().Name(name).Help(help).Register(registry);
}

// Length collapse, per model, length bucket and tempscale ("off", "on", "auto").
struct CollapseMetrics {
  prometheus::Registry& registry;
  MetricFamily<Gauge>& mean_cosine = Declare<Gauge>(
      registry, "embedding_collapse_mean_cosine",
      "Mean pairwise cosine of the last W document vectors of the series; rises with length "
      "when embeddings collapse");
  MetricFamily<Gauge>& window_size = Declare<Gauge>(registry, "embedding_collapse_window_size",
                                                    "Vectors in the collapse window (n <= W)");
  MetricFamily<Histogram>& centroid_cosine = Declare<Histogram>(
      registry, "embedding_collapse_centroid_cosine",
      "Each new vector's cosine to its window's centroid, taken before it joins the window");
  MetricFamily<Histogram>& hf_ratio = Declare<Histogram>(
      registry, "embedding_token_hf_ratio",
      "Per sequence, ||X - 1 mean(X)||_F / ||X||_F of the final hidden states; low means token "
      "features collapsed to their mean");
  MetricFamily<Histogram>& temperature = Declare<Histogram>(
      registry, "embedding_temperature",
      "Attention temperature tau applied, per encoded sequence (AUTO varies it by length)");
};

// Calls and what they embedded.
struct RequestMetrics {
  prometheus::Registry& registry;
  MetricFamily<Counter>& requests = Declare<Counter>(
      registry, "embedding_requests_total", "RPCs finished, by method and gRPC status code");
  MetricFamily<Histogram>& duration =
      Declare<Histogram>(registry, "embedding_request_duration_seconds", "RPC duration, by method");
  MetricFamily<Counter>& documents =
      Declare<Counter>(registry, "embedding_documents_total", "Documents embedded");
  MetricFamily<Counter>& tokens =
      Declare<Counter>(registry, "embedding_tokens_total", "Content tokens of embedded documents");
  MetricFamily<Counter>& chunks =
      Declare<Counter>(registry, "embedding_chunks_total", "Chunks of embedded documents");
  MetricFamily<Counter>& truncated = Declare<Counter>(
      registry, "embedding_truncated_documents_total", "Documents whose tokens TRUNCATE dropped");
  // Their _sum / _count per length bucket is the mean per document.
  MetricFamily<Histogram>& sparse_weights =
      Declare<Histogram>(registry, "embedding_sparse_weights_per_document",
                         "Non-zero lexical weights in a document's sparse output");
  MetricFamily<Histogram>& multi_vectors =
      Declare<Histogram>(registry, "embedding_multi_vectors_per_document",
                         "Vectors in a document's multi-vector output");
  MetricFamily<Histogram>& queue_duration = Declare<Histogram>(
      registry, "embedding_queue_duration_seconds", "Embed: admission to the first batch");
  MetricFamily<Histogram>& tokenize_duration = Declare<Histogram>(
      registry, "embedding_tokenize_duration_seconds", "Embed: tokenisation and chunk planning");
  MetricFamily<Histogram>& inference_duration =
      Declare<Histogram>(registry, "embedding_inference_duration_seconds",
                         "Embed: forward passes the request took part in");
  MetricFamily<Counter>& ignored_fields = Declare<Counter>(
      registry, "embedding_http_ignored_fields_total",
      "Request body fields a route ignored (TEI's routes ignore fields they do not know), by "
      "method and field; past 64 names per method, field=\"_other\"");
};

// Rerank and Classify: the pairs (or texts) scored, per model and document length bucket. A
// reranker collapses with length too: its score distribution drifts as documents grow.
struct ScoreMetrics {
  prometheus::Registry& registry;
  MetricFamily<Counter>& pairs = Declare<Counter>(
      registry, "embedding_scored_pairs_total",
      "Documents (Rerank) or inputs (Classify) scored, by model, method and length bucket");
  MetricFamily<Counter>& tokens = Declare<Counter>(
      registry, "embedding_scored_tokens_total",
      "Content tokens of scored documents, the query's excluded; with it in every chunk, the "
      "forward passes' tokens are in embedding_batch_padded_tokens");
  MetricFamily<Histogram>& chunks = Declare<Histogram>(
      registry, "embedding_scored_chunks_per_pair",
      "Chunks a scored document was split into (the query in each)");
  MetricFamily<Histogram>& scores = Declare<Histogram>(
      registry, "embedding_score",
      "A reranker's relevance score per document (a classifier's top label score), after the "
      "model's score function whatever raw_scores asked");
};

// Forward passes, per model.
struct BatchMetrics {
  prometheus::Registry& registry;
  MetricFamily<Counter>& batches =
      Declare<Counter>(registry, "embedding_batches_total", "Forward passes");
  MetricFamily<Histogram>& sequences =
      Declare<Histogram>(registry, "embedding_batch_sequences", "Sequences per forward pass");
  MetricFamily<Histogram>& padded_tokens =
      Declare<Histogram>(registry, "embedding_batch_padded_tokens",
                         "Padded tokens (sequences x longest) per forward pass");
  MetricFamily<Histogram>& padding_ratio =
      Declare<Histogram>(registry, "embedding_batch_padding_ratio",
                         "Share of a forward pass's padded tokens that are padding");
  MetricFamily<Counter>& out_of_memory = Declare<Counter>(
      registry, "embedding_batch_out_of_memory_total",
      "Forward passes the model had no memory for (each retried in halves; a single "
      "sequence is refused with RESOURCE_EXHAUSTED)");
};

// The server's state: loaded models and reloads, admission's books and bounds, the build.
struct ServerMetrics {
  prometheus::Registry& registry;
  MetricFamily<Gauge>& model_info = Declare<Gauge>(
      registry, "embedding_model_info",
      "Loaded model versions; 1 for the current version, 0 for an older one still selectable "
      "as NAME@VERSION");
  MetricFamily<Counter>& reloads = Declare<Counter>(
      registry, "embedding_model_reloads_total",
      "Model reload attempts that found a new version, by result (loaded, failed)");
  MetricFamily<Gauge>& reload_failing =
      Declare<Gauge>(registry, "embedding_model_reload_failing",
                     "1 while the newest version on disk was refused and an older one serves");
  MetricFamily<Gauge>& queued_tokens =
      Declare<Gauge>(registry, "embedding_queued_tokens", "Tokens admitted and not yet encoded");
  MetricFamily<Gauge>& in_flight =
      Declare<Gauge>(registry, "embedding_in_flight_requests",
                     "Embed and Tokenize requests admitted and not finished");
  MetricFamily<Gauge>& queued_tokens_limit =
      Declare<Gauge>(registry, "embedding_queued_tokens_limit", "--max-queued-tokens");
  MetricFamily<Gauge>& concurrent_requests_limit =
      Declare<Gauge>(registry, "embedding_concurrent_requests_limit", "--max-concurrent-requests");
  MetricFamily<Gauge>& build_info =
      Declare<Gauge>(registry, "embedding_build_info", "Build of this server; value 1");
  // Only where models run on a GPU.
  MetricFamily<Gauge>& device_memory = Declare<Gauge>(
      registry, "embedding_device_memory_bytes",
      "GPU memory by kind: allocated (LibTorch's tensors), reserved (its cache, tensors "
      "included), free (the device's, beyond the cache), total");
  MetricFamily<Gauge>& device_utilization = Declare<Gauge>(
      registry, "embedding_device_utilization_ratio",
      "GPU utilisation as NVML samples it (nvidia-smi's figures): compute, the share of the last "
      "sample period in which a kernel ran; memory, in which device memory was read or written");
  MetricFamily<Counter>& batch_requests = Declare<Counter>(
      registry, "embedding_batch_requests_total",
      "Lines of Batch API jobs finished, by state: completed (in the output file) or failed "
      "(in the error file)");
  MetricFamily<Gauge>& batch_lines_pending = Declare<Gauge>(
      registry, "embedding_batch_lines_pending",
      "Lines of running Batch API jobs not yet finished");
};

}  // namespace embedding::server
