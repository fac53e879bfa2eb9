// The collapse report: embeds a corpus at several temperatures and tabulates, per length
// bucket and tau, the mean pairwise cosine, the mean high-frequency ratio and the count, and
// recommends per bucket the tau whose mean cosine comes closest to the shortest bucket's at
// tau = 1.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/embedding_client.h"

namespace embedding::client {

struct CollapseReportOptions {
  std::vector<float> temperatures;  // 1.0 is added when missing: it is the reference
  std::string model;
  v1::LongTextStrategy strategy = v1::LONG_TEXT_STRATEGY_UNSPECIFIED;
  // Cut every document to each bucket's length (when long enough), so one corpus of long
  // documents covers every bucket.
  bool cut_to_buckets = false;
  int batch_size = 16;
  // > 0: also embed every document as the mean of chunks of this many tokens, beside the
  // model's native window, to compare one long window with chunk-and-merge.
  uint32_t compare_chunk_tokens = 0;
  // Called after each request with (done, total) requests.
  std::function<void(size_t, size_t)> progress;
};

struct CollapseCell {
  std::string mode = "native";  // or "chunks of N"
  std::string bucket;
  float temperature = 1.0f;
  double mean_cosine = 0;
  double mean_hf_ratio = 0;
  size_t count = 0;
};

struct CollapseReport {
  std::vector<std::string> buckets;  // those with data, shortest first
  std::vector<float> temperatures;   // ascending
  std::vector<std::string> modes;    // "native" first
  std::vector<CollapseCell> cells;   // mode-, then bucket-major
  std::string reference_bucket;      // shortest bucket with >= 2 native documents at tau = 1
  double reference_cosine = 0;
  std::map<std::string, float> recommended;  // bucket -> tau, from the native cells

  const CollapseCell* Find(const std::string& bucket, float temperature,
                           const std::string& mode = "native") const;
};

// Errors are the server's (first failing request) or INVALID_ARGUMENT for an empty corpus.
absl::StatusOr<CollapseReport> RunCollapseReport(EmbeddingClient& client,
                                                 const std::vector<std::string>& corpus,
                                                 const CollapseReportOptions& options);

std::string FormatCollapseTable(const CollapseReport& report);
std::string CollapseReportJson(const CollapseReport& report);
// Mean cosine against length bucket, one line per tau.
std::string CollapseChartSvg(const CollapseReport& report, const std::string& model);

}  // namespace embedding::client
