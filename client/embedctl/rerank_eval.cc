#include "client/embedctl/rerank_eval.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "embedding/v1/strategy_names.h"
#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {

using Json = nlohmann::json;

// Query i's reciprocal rank at 10 of candidate i among its pool's, by the reranker's logits; a
// tie ranks the right candidate last, as ReciprocalRanks does for embeddings.
absl::StatusOr<double> QueryReciprocalRank(EmbeddingClient& client, const BucketTask& task,
                                           size_t pool_size, size_t i,
                                           const RerankEvalColumn& column,
                                           const std::string& model) {
  const size_t first = i / pool_size * pool_size;
  const size_t last = std::min(task.documents.size(), first + pool_size);
  v1::RerankRequest request;
  request.set_model(model);
  request.set_query(task.queries[i]);
  for (size_t j = first; j < last; ++j) request.add_documents(task.documents[j]);
  request.mutable_options()->set_temperature(column.tau);
  request.mutable_options()->set_strategy(column.strategy);
  request.mutable_options()->set_raw_scores(true);
  auto response = client.Rerank(request);
  if (!response.ok()) return response.status();
  std::vector<float> scores(last - first, 0.0f);
  for (const v1::RerankResult& result : response->results()) scores[result.index()] = result.score();
  const float right = scores[i - first];
  size_t rank = 1;
  for (size_t j = 0; j < scores.size(); ++j)
    if (j != i - first && scores[j] >= right) ++rank;
  return rank <= 10 ? 1.0 / static_cast<double>(rank) : 0.0;
}

std::string Label(const RerankEvalColumn& column) {
  return absl::StrFormat("%s/%g", column.strategy == v1::LONG_TEXT_STRATEGY_TRUNCATE ? "trunc"
                                  : column.strategy == v1::LONG_TEXT_STRATEGY_CHUNK_MAX
                                      ? "max"
                                      : v1::StrategyName(column.strategy),
                         column.tau);
}

}  // namespace

absl::StatusOr<RerankEvalReport> RunRerankEval(EmbeddingClient& client,
                                               const std::vector<BucketTask>& tasks,
                                               const RerankEvalOptions& options) {
  if (std::find(options.taus.begin(), options.taus.end(), 1.0f) == options.taus.end())
    return absl::InvalidArgumentError("--rerank-temperatures: must include 1, the baseline");
  RerankEvalReport report;
  for (v1::LongTextStrategy strategy : options.strategies)
    for (float tau : options.taus) report.columns.push_back({strategy, tau});
  size_t total = 0, done = 0;
  for (const BucketTask& task : tasks) total += task.queries.size() * report.columns.size();
  const size_t taus = options.taus.size();
  const size_t tau1 = static_cast<size_t>(
      std::find(options.taus.begin(), options.taus.end(), 1.0f) - options.taus.begin());
  for (const BucketTask& task : tasks) {
    const size_t pool = std::max<size_t>(1, task.pool_size);
    std::vector<std::vector<double>> ranks(report.columns.size());
    for (size_t c = 0; c < report.columns.size(); ++c) {
      for (size_t i = 0; i < task.queries.size(); ++i) {
        auto rr = QueryReciprocalRank(client, task, pool, i, report.columns[c], options.model);
        if (!rr.ok()) return rr.status();
        ranks[c].push_back(*rr);
        if (options.progress) options.progress(++done, total);
      }
    }
    std::vector<size_t> all(task.queries.size());
    std::iota(all.begin(), all.end(), 0);
    std::vector<double> mrr;
    std::vector<PairedGain> over_tau1, over_first;
    for (size_t c = 0; c < report.columns.size(); ++c) {
      mrr.push_back(MeanOver(ranks[c], all));
      const size_t baseline = c / taus * taus + tau1;
      over_tau1.push_back(c == baseline ? PairedGain{} : ComparePaired(ranks[c], ranks[baseline], all));
      over_first.push_back(c < taus ? PairedGain{} : ComparePaired(ranks[c], ranks[c % taus], all));
    }
    report.buckets.push_back(task.bucket);
    report.queries.push_back(task.queries.size());
    report.mrr.push_back(std::move(mrr));
    report.gain_over_tau1.push_back(std::move(over_tau1));
    report.gain_over_first_strategy.push_back(std::move(over_first));
  }
  return report;
}

std::string FormatRerankEvalTable(const RerankEvalReport& report) {
  std::string out =
      "Reranker MRR@10 per length bucket, each query reranking its pool; columns are "
      "strategy/tau (trunc = truncate, max = chunk_max). Below each row: the paired gain over "
      "tau=1 of the same strategy, +- its standard error\n";
  absl::StrAppendFormat(&out, "%-10s %7s", "bucket", "queries");
  for (const RerankEvalColumn& c : report.columns) absl::StrAppendFormat(&out, " %15s", Label(c));
  out += "\n";
  for (size_t b = 0; b < report.buckets.size(); ++b) {
    absl::StrAppendFormat(&out, "%-10s %7d", report.buckets[b], report.queries[b]);
    for (double v : report.mrr[b]) absl::StrAppendFormat(&out, " %15.3f", v);
    absl::StrAppendFormat(&out, "\n%-10s %7s", "", "");
    for (const PairedGain& g : report.gain_over_tau1[b]) {
      absl::StrAppendFormat(&out, " %15s",
                            g.queries == 0 ? "-" : absl::StrFormat("%+.3f+-%.3f", g.mean,
                                                                   g.standard_error));
    }
    out += "\n";
  }
  return out;
}

std::string RerankEvalJson(const RerankEvalReport& report) {
  auto gain = [](const PairedGain& g) {
    return g.queries == 0 ? Json(nullptr)
                          : Json({{"mean", g.mean}, {"standard_error", g.standard_error}});
  };
  Json columns = Json::array();
  for (const RerankEvalColumn& c : report.columns)
    // τ as given (0.8, not the float's 0.800000011920929).
    columns.push_back({{"strategy", v1::StrategyName(c.strategy)},
                       {"tau", std::stod(absl::StrFormat("%g", c.tau))}});
  Json rows = Json::array();
  for (size_t b = 0; b < report.buckets.size(); ++b) {
    Json over_tau1 = Json::array(), over_first = Json::array();
    for (const PairedGain& g : report.gain_over_tau1[b]) over_tau1.push_back(gain(g));
    for (const PairedGain& g : report.gain_over_first_strategy[b]) over_first.push_back(gain(g));
    rows.push_back({{"bucket", report.buckets[b]},
                    {"queries", report.queries[b]},
                    {"mrr_at_10", report.mrr[b]},
                    {"gain_over_tau_1", std::move(over_tau1)},
                    {"gain_over_first_strategy", std::move(over_first)}});
  }
  return Json({{"columns", columns}, {"rows", rows}}).dump(2) + "\n";
}

}  // namespace embedding::client
