// `embedctl rerank-eval`: what TempScale does to a reranker. On the self-supervised tasks of
// retrieval_task.h, each query reranks its pool of candidates (Rerank, one call per query) at
// every τ and long-text strategy; per length bucket: MRR@10, and each column's paired gain
// over τ = 1 of its strategy (and chunk_max's over truncate at the same τ) with its standard
// error, so a difference is judged against the queries' noise.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/embedctl/paired_statistics.h"
#include "client/embedctl/retrieval_task.h"
#include "client/embedding_client.h"

namespace embedding::client {

struct RerankEvalOptions {
  std::string model;  // the reranker
  std::vector<float> taus = {1.0f, 0.9f, 0.8f, 0.7f};
  std::vector<v1::LongTextStrategy> strategies = {v1::LONG_TEXT_STRATEGY_TRUNCATE,
                                                  v1::LONG_TEXT_STRATEGY_CHUNK_MAX};
  std::function<void(size_t, size_t)> progress;  // (calls done, calls in all)
};

struct RerankEvalColumn {
  v1::LongTextStrategy strategy;
  float tau = 1.0f;
};

struct RerankEvalReport {
  std::vector<RerankEvalColumn> columns;
  std::vector<std::string> buckets;
  std::vector<size_t> queries;           // per bucket
  std::vector<std::vector<double>> mrr;  // [bucket][column], MRR@10
  // [bucket][column]: against τ = 1 of the same strategy (none for τ = 1 itself) ...
  std::vector<std::vector<PairedGain>> gain_over_tau1;
  // ... and against the first strategy at the same τ (none for the first strategy).
  std::vector<std::vector<PairedGain>> gain_over_first_strategy;
};

// INVALID_ARGUMENT naming --rerank-temperatures without τ = 1 among the taus (the baseline);
// the first failed call's error.
absl::StatusOr<RerankEvalReport> RunRerankEval(EmbeddingClient& client,
                                               const std::vector<BucketTask>& tasks,
                                               const RerankEvalOptions& options);

std::string FormatRerankEvalTable(const RerankEvalReport& report);
std::string RerankEvalJson(const RerankEvalReport& report);

}  // namespace embedding::client
