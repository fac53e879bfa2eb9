// The load generator behind `embedctl bench`: closed loop (fixed concurrency) or open loop
// (fixed arrival rate), bounded by a request count and/or a duration, with a mixed workload
// (tau on/off, several strategies, synthetic lengths or a corpus) and injected deadlines and
// cancellations. Every answer is checked; a wrong answer is an error, not throughput.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/embedding_client.h"

namespace embedding::client {

struct BenchOptions {
  int64_t requests = 0;                            // 0: bounded by duration only
  absl::Duration duration = absl::ZeroDuration();  // zero: bounded by requests only
  int concurrency = 1;                             // closed loop
  double rate = 0;  // > 0: open loop at this many requests per second
  int documents_per_request = 1;
  std::vector<std::string> corpus;  // empty: synthetic documents
  // Take the corpus in file order, cycling (a harness sends each document once); otherwise
  // documents are drawn at random.
  bool corpus_in_order = false;
  // Synthetic lengths in words (about one token each): log-normal with this median and sigma,
  // clipped to [1, max_words].
  double median_words = 200;
  double sigma = 1.0;
  int max_words = 20000;
  double tempscale_share = 0.5;  // share of requests with tau = tempscale_tau
  float tempscale_tau = 0.7f;
  std::vector<v1::LongTextStrategy> strategies = {v1::LONG_TEXT_STRATEGY_CHUNK_MEAN};
  std::string model;
  std::string task;           // the model's task adapter for every request; "": none
  double deadline_share = 0;  // share of requests sent with `injected_deadline`
  absl::Duration injected_deadline = absl::Milliseconds(2);
  double cancel_share = 0;  // share cancelled after a random 0-20 ms
  absl::Duration timeout = absl::Seconds(60);
  uint64_t seed = 1;
  // Called about twice a second with requests finished so far.
  std::function<void(int64_t finished, double seconds)> progress;
};

struct BenchReport {
  int64_t requests = 0;  // finished: ok + every error
  int64_t ok = 0;
  int64_t documents = 0;
  int64_t tokens = 0;
  double seconds = 0;
  std::map<std::string, int64_t> errors;      // gRPC code name (or WRONG_ANSWER) -> count
  double p50 = 0, p90 = 0, p99 = 0, max = 0;  // latency of OK requests, seconds
  double requests_per_second() const { return seconds > 0 ? ok / seconds : 0; }
  double documents_per_second() const { return seconds > 0 ? documents / seconds : 0; }
  double tokens_per_second() const { return seconds > 0 ? tokens / seconds : 0; }
};

// Runs the load. INVALID_ARGUMENT for options without a bound; otherwise errors are counted
// in the report, never returned.
absl::StatusOr<BenchReport> RunBench(EmbeddingClient& client, const BenchOptions& options);

std::string FormatBenchTable(const BenchReport& report);
std::string BenchReportJson(const BenchReport& report);

}  // namespace embedding::client
