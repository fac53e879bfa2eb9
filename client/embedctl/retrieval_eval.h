// `embedctl eval`: retrieval quality per length bucket, per long-text strategy and τ, on the
// self-supervised tasks of retrieval_task.h. Rows are length buckets, up to and beyond the
// model's window; columns are strategy × τ (1, a fixed τ, AUTO). It answers "for my
// documents, which strategy and which τ retrieve best?".
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/embedctl/retrieval_task.h"
#include "client/embedding_client.h"

namespace embedding::client {

struct EvalOptions {
  std::vector<v1::LongTextStrategy> strategies;
  float fixed_tau = 0.7f;
  RetrievalTaskOptions tasks;
  size_t batch = 8;
  size_t in_flight = 1;  // calls at once, spread over the client's addresses
  std::function<void(size_t, size_t)> progress;  // (calls done, calls in all)
};

struct EvalColumn {
  v1::LongTextStrategy strategy;
  std::string tau;  // "1", the fixed τ, or "auto"
};

struct EvalReport {
  std::vector<EvalColumn> columns;
  std::vector<std::string> buckets;
  std::vector<size_t> documents;            // per bucket
  std::vector<std::vector<double>> mrr;     // [bucket][column], MRR@10
  std::vector<std::vector<double>> cosine;  // [bucket][column], mean pairwise cosine
};

absl::StatusOr<EvalReport> RunEval(EmbeddingClient& client, const std::vector<BucketTask>& tasks,
                                   const EvalOptions& options);

std::string FormatEvalTable(const EvalReport& report);
std::string EvalJson(const EvalReport& report);
std::string EvalChartSvg(const EvalReport& report, const std::string& model);

}  // namespace embedding::client
