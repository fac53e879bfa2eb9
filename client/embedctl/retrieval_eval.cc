#include "client/embedctl/retrieval_eval.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/embedctl/collapse_stats.h"
#include "client/embedctl/svg_chart.h"
#include "common/name_table.h"
#include "embedding/v1/strategy_names.h"
#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {
using Json = nlohmann::json;

// The request options of a τ column: "1", "auto", or the fixed τ.
EmbedOptions TauOptions(const std::string& tau, float fixed_tau, const std::string& model) {
  EmbedOptions options;
  options.model = model;
  if (tau == "auto")
    options.temperature_mode = v1::TEMPERATURE_MODE_AUTO;
  else
    options.temperature = tau == "1" ? 1.0f : fixed_tau;
  return options;
}

std::string ColumnLabel(const EvalColumn& c) {
  return absl::StrCat(v1::StrategyName(c.strategy), " tau=", c.tau);
}

// Table headers short enough for 15 columns.
constexpr NamedValue<v1::LongTextStrategy> kShortNames[] = {
    {v1::LONG_TEXT_STRATEGY_TRUNCATE, "trunc"},
    {v1::LONG_TEXT_STRATEGY_CHUNK_MEAN, "mean"},
    {v1::LONG_TEXT_STRATEGY_CHUNK_WEIGHTED_MEAN, "wmean"},
    {v1::LONG_TEXT_STRATEGY_CHUNK_MAX, "max"},
    {v1::LONG_TEXT_STRATEGY_CHUNK_ALL, "all"},
    {v1::LONG_TEXT_STRATEGY_LATE_CHUNKING, "late"}};

}  // namespace

absl::StatusOr<EvalReport> RunEval(EmbeddingClient& client, const std::vector<BucketTask>& tasks,
                                   const EvalOptions& options) {
  EvalReport report;
  const std::vector<std::string> taus = {"1", absl::StrFormat("%g", options.fixed_tau), "auto"};
  for (v1::LongTextStrategy strategy : options.strategies)
    for (const std::string& tau : taus) report.columns.push_back({strategy, tau});
  const size_t batch = std::max<size_t>(1, options.batch);
  size_t total_calls = 0, calls = 0;
  for (const BucketTask& task : tasks)
    total_calls +=
        (taus.size() + report.columns.size()) * ((task.documents.size() + batch - 1) / batch);
  auto on_call = [&] {
    if (options.progress) options.progress(++calls, total_calls);
  };
  const BatchCalls batch_calls{batch, std::max<size_t>(1, options.in_flight), on_call, nullptr};
  for (const BucketTask& task : tasks) {
    report.buckets.push_back(task.bucket);
    report.documents.push_back(task.documents.size());
    // Queries are short: one window whatever the strategy, so once per τ column.
    std::vector<std::vector<std::vector<float>>> queries;
    for (const std::string& tau : taus) {
      EmbedOptions query = TauOptions(tau, options.fixed_tau, options.tasks.model);
      query.prompt_name = options.tasks.query_prompt_name;
      auto vectors = EmbedInBatches(client, task.queries, query, batch_calls);
      if (!vectors.ok()) return vectors.status();
      queries.push_back(*std::move(vectors));
    }
    std::vector<double> mrr, cosine;
    for (size_t c = 0; c < report.columns.size(); ++c) {
      EmbedOptions embed =
          TauOptions(report.columns[c].tau, options.fixed_tau, options.tasks.model);
      embed.strategy = report.columns[c].strategy;
      auto docs = EmbedInBatches(client, task.documents, embed, batch_calls);
      if (!docs.ok()) return docs.status();
      const std::vector<double> ranks =
          ReciprocalRanks(queries[c % taus.size()], *docs, task.pool_size);
      mrr.push_back(std::accumulate(ranks.begin(), ranks.end(), 0.0) /
                    static_cast<double>(std::max<size_t>(1, ranks.size())));
      cosine.push_back(MeanPairwiseCosine(*docs));
    }
    report.mrr.push_back(std::move(mrr));
    report.cosine.push_back(std::move(cosine));
  }
  return report;
}

std::string FormatEvalTable(const EvalReport& report) {
  std::string out =
      "MRR@10 per length bucket, each query ranked among its pool; columns are strategy/tau (trunc "
      "= truncate, mean = chunk_mean, "
      "wmean = chunk_weighted_mean, max = chunk_max, late = late_chunking)\n";
  absl::StrAppendFormat(&out, "%-10s %5s", "bucket", "docs");
  for (const EvalColumn& c : report.columns)
    absl::StrAppendFormat(&out, " %10s",
                          absl::StrCat(NameOf(kShortNames, c.strategy, "other"), "/", c.tau));
  out += "\n";
  for (size_t b = 0; b < report.buckets.size(); ++b) {
    absl::StrAppendFormat(&out, "%-10s %5d", report.buckets[b], report.documents[b]);
    for (double v : report.mrr[b]) absl::StrAppendFormat(&out, " %10.3f", v);
    out += "\n";
  }
  return out;
}

std::string EvalJson(const EvalReport& report) {
  Json columns = Json::array();
  for (const EvalColumn& c : report.columns)
    columns.push_back({{"strategy", v1::StrategyName(c.strategy)}, {"tau", c.tau}});
  Json rows = Json::array();
  for (size_t b = 0; b < report.buckets.size(); ++b) {
    rows.push_back({{"bucket", report.buckets[b]},
                    {"documents", report.documents[b]},
                    {"mrr_at_10", report.mrr[b]},
                    {"mean_cosine", report.cosine[b]}});
  }
  return Json({{"columns", columns}, {"rows", rows}}).dump(2) + "\n";
}

std::string EvalChartSvg(const EvalReport& report, const std::string& model) {
  std::vector<ChartSeries> series;
  for (size_t c = 0; c < report.columns.size(); ++c) {
    ChartSeries s{ColumnLabel(report.columns[c]), {}};
    for (const auto& row : report.mrr) s.values.push_back(row[c]);
    series.push_back(std::move(s));
  }
  return RenderLineChartSvg("Retrieval by length, strategy and tau: " +
                                (model.empty() ? std::string("default model") : model),
                            "length bucket (tokens)", "MRR@10", report.buckets, series);
}

}  // namespace embedding::client
