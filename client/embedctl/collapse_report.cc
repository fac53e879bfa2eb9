#include "client/embedctl/collapse_report.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/embedctl/collapse_stats.h"
#include "client/embedctl/svg_chart.h"
#include "common/length_buckets.h"
#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {

// The token count a document cut for `bucket` aims for: well inside it (48 for "0-63", half
// again its lower bound for the others: 96 for "64-127", 12288 for "8192+").
uint32_t BucketTarget(const LengthBucket& bucket) {
  return static_cast<uint32_t>(bucket.min_tokens > 0 ? bucket.min_tokens * 3 / 2
                                                     : (bucket.max_tokens + 1) * 3 / 4);
}

int BucketRank(const std::string& label) {
  const auto& buckets = AllLengthBuckets();
  for (size_t i = 0; i < buckets.size(); ++i)
    if (buckets[i].label == label) return static_cast<int>(i);
  return static_cast<int>(buckets.size());
}

// Each document cut to every bucket target it is long enough for.
absl::StatusOr<std::vector<std::string>> CutToBuckets(EmbeddingClient& client,
                                                      const std::vector<std::string>& corpus,
                                                      const std::string& model) {
  std::vector<std::string> out;
  for (const auto& doc : corpus) {
    v1::TokenizeRequest request;
    request.set_model(model);
    request.add_inputs(doc);
    request.set_add_special_tokens(false);
    auto tokens = client.Tokenize(request);
    if (!tokens.ok()) return tokens.status();
    const auto& list = tokens->inputs(0).tokens();
    for (const auto& bucket : AllLengthBuckets()) {
      const uint32_t target = BucketTarget(bucket);
      if (static_cast<uint32_t>(list.size()) < target) break;
      out.push_back(doc.substr(0, list[target - 1].byte_span().end()));
    }
  }
  return out;
}

}  // namespace

const CollapseCell* CollapseReport::Find(const std::string& bucket, float temperature,
                                         const std::string& mode) const {
  for (const auto& cell : cells)
    if (cell.mode == mode && cell.bucket == bucket && cell.temperature == temperature) return &cell;
  return nullptr;
}

absl::StatusOr<CollapseReport> RunCollapseReport(EmbeddingClient& client,
                                                 const std::vector<std::string>& corpus,
                                                 const CollapseReportOptions& options) {
  if (corpus.empty()) return absl::InvalidArgumentError("corpus: no documents");
  std::vector<std::string> documents = corpus;
  if (options.cut_to_buckets) {
    auto cut = CutToBuckets(client, corpus, options.model);
    if (!cut.ok()) return cut.status();
    documents = *std::move(cut);
  }
  CollapseReport report;
  report.temperatures = options.temperatures;
  if (std::find(report.temperatures.begin(), report.temperatures.end(), 1.0f) ==
      report.temperatures.end()) {
    report.temperatures.push_back(1.0f);
  }
  std::sort(report.temperatures.begin(), report.temperatures.end());

  // Each mode: its name and the chunk length it asks for (none: the model's window).
  std::vector<std::pair<std::string, uint32_t>> modes = {{"native", 0}};
  if (options.compare_chunk_tokens > 0) {
    modes.emplace_back(absl::StrCat("chunks of ", options.compare_chunk_tokens),
                       options.compare_chunk_tokens);
  }
  const size_t batch = static_cast<size_t>(std::max(1, options.batch_size));
  const size_t batches_per_tau = (documents.size() + batch - 1) / batch;
  const size_t total = batches_per_tau * report.temperatures.size() * modes.size();
  size_t done = 0;
  // (mode, bucket, tau) -> vectors and high-frequency ratios.
  std::map<std::tuple<std::string, std::string, float>,
           std::pair<std::vector<std::vector<float>>, double>>
      groups;
  for (const auto& [mode, chunk_tokens] : modes) {
    report.modes.push_back(mode);
    for (float tau : report.temperatures) {
      for (size_t start = 0; start < documents.size(); start += batch) {
        EmbedOptions embed;
        embed.model = options.model;
        embed.temperature = tau;
        embed.strategy = options.strategy;
        if (chunk_tokens > 0) {
          embed.strategy = v1::LONG_TEXT_STRATEGY_CHUNK_MEAN;
          embed.chunk_tokens = chunk_tokens;
        }
        const std::vector<std::string> slice(
            documents.begin() + start,
            documents.begin() + std::min(documents.size(), start + batch));
        auto response = client.Embed(MakeEmbedRequest(slice, embed));
        if (!response.ok()) return response.status();
        for (const auto& doc : response->documents()) {
          auto& group = groups[{mode, doc.length_bucket(), tau}];
          group.first.emplace_back(doc.vector().begin(), doc.vector().end());
          group.second += doc.high_frequency_ratio();
        }
        if (options.progress) options.progress(++done, total);
      }
    }
  }

  for (const auto& [key, group] : groups) {
    const std::string& bucket = std::get<1>(key);
    if (std::find(report.buckets.begin(), report.buckets.end(), bucket) == report.buckets.end())
      report.buckets.push_back(bucket);
  }
  std::sort(
      report.buckets.begin(), report.buckets.end(),
      [](const std::string& a, const std::string& b) { return BucketRank(a) < BucketRank(b); });
  for (const auto& mode : report.modes) {
    for (const auto& bucket : report.buckets) {
      for (float tau : report.temperatures) {
        auto it = groups.find({mode, bucket, tau});
        if (it == groups.end()) continue;
        CollapseCell cell;
        cell.mode = mode;
        cell.bucket = bucket;
        cell.temperature = tau;
        cell.count = it->second.first.size();
        cell.mean_cosine = MeanPairwiseCosine(it->second.first);
        cell.mean_hf_ratio = it->second.second / static_cast<double>(cell.count);
        report.cells.push_back(cell);
      }
    }
  }
  for (const auto& bucket : report.buckets) {
    const CollapseCell* cell = report.Find(bucket, 1.0f);
    if (cell != nullptr && cell->count >= 2) {
      report.reference_bucket = bucket;
      report.reference_cosine = cell->mean_cosine;
      break;
    }
  }
  if (!report.reference_bucket.empty()) {
    for (const auto& bucket : report.buckets) {
      double best = INFINITY;
      for (float tau : report.temperatures) {
        const CollapseCell* cell = report.Find(bucket, tau);
        if (cell == nullptr || cell->count < 2) continue;
        const double distance = std::abs(cell->mean_cosine - report.reference_cosine);
        if (distance < best) {
          best = distance;
          report.recommended[bucket] = tau;
        }
      }
    }
  }
  return report;
}

std::string FormatCollapseTable(const CollapseReport& report) {
  std::string out = absl::StrFormat("%-16s %-10s %6s %12s %10s %7s\n", "mode", "bucket", "tau",
                                    "mean_cosine", "hf_ratio", "count");
  for (const auto& cell : report.cells) {
    absl::StrAppendFormat(&out, "%-16s %-10s %6.2f %12.4f %10.4f %7d\n", cell.mode, cell.bucket,
                          cell.temperature, cell.mean_cosine, cell.mean_hf_ratio, cell.count);
  }
  if (report.reference_bucket.empty()) {
    out += "\nno recommendation: no bucket has two documents at tau = 1\n";
    return out;
  }
  absl::StrAppendFormat(&out, "\nreference: bucket %s at tau = 1, mean cosine %.4f\n",
                        report.reference_bucket, report.reference_cosine);
  out += "recommended tau per bucket (mean cosine closest to the reference):\n";
  for (const auto& bucket : report.buckets) {
    auto it = report.recommended.find(bucket);
    if (it != report.recommended.end())
      absl::StrAppendFormat(&out, "  %-10s tau = %.2f\n", bucket, it->second);
  }
  return out;
}

std::string CollapseReportJson(const CollapseReport& report) {
  nlohmann::json json;
  json["temperatures"] = report.temperatures;
  json["buckets"] = report.buckets;
  json["cells"] = nlohmann::json::array();
  for (const auto& cell : report.cells) {
    json["cells"].push_back({{"mode", cell.mode},
                             {"length_bucket", cell.bucket},
                             {"temperature", cell.temperature},
                             {"mean_cosine", cell.mean_cosine},
                             {"mean_high_frequency_ratio", cell.mean_hf_ratio},
                             {"count", cell.count}});
  }
  json["reference"] = {{"length_bucket", report.reference_bucket},
                       {"mean_cosine", report.reference_cosine}};
  json["recommended_temperature"] = report.recommended;
  return json.dump(2) + "\n";
}

std::string CollapseChartSvg(const CollapseReport& report, const std::string& model) {
  std::vector<ChartSeries> series;
  for (const auto& mode : report.modes) {
    for (float tau : report.temperatures) {
      ChartSeries s;
      s.label = absl::StrFormat("tau = %.2f", tau);
      if (report.modes.size() > 1) absl::StrAppend(&s.label, ", ", mode);
      for (const auto& bucket : report.buckets) {
        const CollapseCell* cell = report.Find(bucket, tau, mode);
        s.values.push_back(cell && cell->count >= 2 ? cell->mean_cosine : NAN);
      }
      series.push_back(std::move(s));
    }
  }
  return RenderLineChartSvg(absl::StrCat("Length collapse: mean pairwise cosine by length",
                                         model.empty() ? "" : absl::StrCat(" (", model, ")")),
                            "document length (tokens)", "mean pairwise cosine", report.buckets,
                            series);
}

}  // namespace embedding::client
