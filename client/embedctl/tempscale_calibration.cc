#include "client/embedctl/tempscale_calibration.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/embedctl/collapse_stats.h"
#include "client/embedctl/svg_chart.h"
#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {
using Json = nlohmann::json;
using Vectors = std::vector<std::vector<float>>;

// A bucket's vectors at every grid τ: documents and queries.
struct BucketVectors {
  std::vector<Vectors> documents;  // [grid index]
  std::vector<Vectors> queries;
};

Vectors Half(const Vectors& all, bool held_out) {
  Vectors half;
  for (size_t i = held_out ? 1 : 0; i < all.size(); i += 2) half.push_back(all[i]);
  return half;
}

double Mrr(const BucketVectors& v, size_t doc_tau, size_t query_tau, bool held_out) {
  return MeanReciprocalRankAt10(Half(v.queries[query_tau], held_out),
                                Half(v.documents[doc_tau], held_out));
}

Scores ScoresAt(const BucketVectors& v, size_t doc_tau, size_t query_tau) {
  return {Mrr(v, doc_tau, query_tau, false), Mrr(v, doc_tau, query_tau, true),
          MeanPairwiseCosine(v.documents[doc_tau])};
}

// The non-increasing schedule (grid indices, ascending = τ descending; index 0 is τ = 1) with
// the best summed calibration MRR among those where every bucket scores at least τ = 1's, and
// a τ below 1 at least `min_gain` more. Bucket 0's index is also the queries'. Ties keep the
// larger τ. All-ones is always feasible.
std::vector<size_t> FitSchedule(const std::vector<BucketVectors>& buckets, size_t grid,
                                double min_gain) {
  const size_t n = buckets.size();
  std::vector<double> baseline(n);
  for (size_t b = 0; b < n; ++b) baseline[b] = Mrr(buckets[b], 0, 0, false);
  constexpr double kSlack = 1e-12;
  std::vector<size_t> best_path(n, 0);
  double best_total = -1;
  for (size_t q = 0; q < grid; ++q) {
    // total[b][g]: best sum over buckets 0..b with bucket b at index g; parent for backtracking.
    std::vector<std::vector<double>> total(n, std::vector<double>(grid, -1));
    std::vector<std::vector<size_t>> parent(n, std::vector<size_t>(grid, 0));
    auto allowed = [&](size_t b, size_t g, double score) {
      return g == 0 ? score + kSlack >= baseline[b] : score + kSlack >= baseline[b] + min_gain;
    };
    const double first = Mrr(buckets[0], q, q, false);
    if (!allowed(0, q, first)) continue;
    total[0][q] = first;
    for (size_t b = 1; b < n; ++b) {
      for (size_t g = 0; g < grid; ++g) {
        const double score = Mrr(buckets[b], g, q, false);
        if (!allowed(b, g, score)) continue;
        for (size_t prev = 0; prev <= g; ++prev) {
          if (total[b - 1][prev] < 0) continue;
          if (total[b - 1][prev] + score > total[b][g] + kSlack) {
            total[b][g] = total[b - 1][prev] + score;
            parent[b][g] = prev;
          }
        }
      }
    }
    size_t end = 0;
    for (size_t g = 1; g < grid; ++g)
      if (total[n - 1][g] > total[n - 1][end] + kSlack) end = g;
    if (total[n - 1][end] < 0 || total[n - 1][end] <= best_total + kSlack) continue;
    best_total = total[n - 1][end];
    for (size_t b = n; b-- > 0;) {
      best_path[b] = end;
      end = parent[b][end];
    }
  }
  return best_path;
}

size_t BestFixed(const std::vector<BucketVectors>& buckets, size_t grid) {
  size_t best = 0;
  double best_mean = -1;
  for (size_t g = 0; g < grid; ++g) {
    double sum = 0;
    for (const BucketVectors& v : buckets) sum += Mrr(v, g, g, false);
    if (sum / buckets.size() > best_mean + 1e-12) best_mean = sum / buckets.size(), best = g;
  }
  return best;
}

Json ScoresJson(const Scores& s) {
  return {{"mrr_at_10_calibration", s.mrr_calibration},
          {"mrr_at_10_held_out", s.mrr_held_out},
          {"mean_cosine", s.mean_cosine}};
}

}  // namespace

absl::StatusOr<Calibration> RunCalibration(EmbeddingClient& client,
                                           const std::vector<std::string>& corpus,
                                           const CalibrationOptions& options) {
  Calibration out;
  out.grid = options.grid;
  for (float tau : out.grid) {
    if (!(tau > 0 && tau <= 1))
      return absl::InvalidArgumentError(
          absl::StrCat("--temperatures: ", tau, " is outside (0, 1]"));
  }
  if (std::find(out.grid.begin(), out.grid.end(), 1.0f) == out.grid.end()) out.grid.push_back(1);
  std::sort(out.grid.begin(), out.grid.end(), std::greater<float>());
  out.grid.erase(std::unique(out.grid.begin(), out.grid.end()), out.grid.end());

  auto tasks = BuildRetrievalTasks(client, corpus, options.tasks);
  if (!tasks.ok()) return tasks.status();
  if (tasks->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--corpus: no length bucket has ", options.tasks.min_documents,
                     " documents long enough; add longer or more documents"));
  }
  const size_t batch = std::max<size_t>(1, options.batch);
  size_t total_calls = 0, calls = 0;
  for (const BucketTask& task : *tasks)
    total_calls += 2 * out.grid.size() * ((task.documents.size() + batch - 1) / batch);
  auto on_call = [&] {
    if (options.progress) options.progress(++calls, total_calls);
  };
  std::vector<BucketVectors> vectors(tasks->size());
  for (size_t b = 0; b < tasks->size(); ++b) {
    for (float tau : out.grid) {
      EmbedOptions embed;
      embed.model = options.tasks.model;
      embed.temperature = tau;
      embed.strategy = v1::LONG_TEXT_STRATEGY_TRUNCATE;  // cuts fit the window: one sequence
      auto docs = EmbedInBatches(client, (*tasks)[b].documents, embed, batch, on_call);
      if (!docs.ok()) return docs.status();
      EmbedOptions query = embed;
      query.prompt_name = options.tasks.query_prompt_name;
      auto queries = EmbedInBatches(client, (*tasks)[b].queries, query, batch, on_call);
      if (!queries.ok()) return queries.status();
      vectors[b].documents.push_back(*std::move(docs));
      vectors[b].queries.push_back(*std::move(queries));
    }
  }
  const std::vector<size_t> schedule = FitSchedule(vectors, out.grid.size(), options.min_gain);
  const size_t fixed = BestFixed(vectors, out.grid.size());
  out.best_fixed = out.grid[fixed];
  out.query_tokens = options.tasks.query_tokens;
  for (size_t b = 0; b < tasks->size(); ++b) {
    BucketCalibration row;
    row.bucket = (*tasks)[b].bucket;
    row.min_tokens = (*tasks)[b].min_tokens;
    row.documents = (*tasks)[b].documents.size();
    row.tau = out.grid[schedule[b]];
    row.at_one = ScoresAt(vectors[b], 0, 0);
    row.at_best_fixed = ScoresAt(vectors[b], fixed, fixed);
    row.at_schedule = ScoresAt(vectors[b], schedule[b], schedule[0]);
    for (size_t g = 0; g < out.grid.size(); ++g) row.at_grid.push_back(ScoresAt(vectors[b], g, g));
    out.buckets.push_back(std::move(row));
  }
  return out;
}

std::string FormatCalibrationTable(const Calibration& c) {
  std::string out = absl::StrFormat(
      "MRR@10 of a %s-token span finding its document; best fixed tau %.2f\n"
      "%-10s %5s %6s | calibration: %6s %6s %6s | held-out: %6s %6s %6s | mean cosine: %6s "
      "%6s %6s\n",
      absl::StrCat(c.query_tokens), c.best_fixed, "bucket", "docs", "tau", "tau=1", "fixed", "AUTO",
      "tau=1", "fixed", "AUTO", "tau=1", "fixed", "AUTO");
  for (const BucketCalibration& b : c.buckets) {
    absl::StrAppendFormat(
        &out,
        "%-10s %5d %6.2f | calibration: %6.3f %6.3f %6.3f | held-out: %6.3f %6.3f %6.3f | "
        "mean cosine: %6.3f %6.3f %6.3f\n",
        b.bucket, b.documents, b.tau, b.at_one.mrr_calibration, b.at_best_fixed.mrr_calibration,
        b.at_schedule.mrr_calibration, b.at_one.mrr_held_out, b.at_best_fixed.mrr_held_out,
        b.at_schedule.mrr_held_out, b.at_one.mean_cosine, b.at_best_fixed.mean_cosine,
        b.at_schedule.mean_cosine);
  }
  out +=
      "\nEach grid tau alone (documents and queries at it): MRR@10 calibration / held-out, mean "
      "cosine\n";
  absl::StrAppendFormat(&out, "%-10s", "bucket");
  for (float tau : c.grid) absl::StrAppendFormat(&out, " | %19s", absl::StrFormat("tau=%.2f", tau));
  out += "\n";
  for (const BucketCalibration& b : c.buckets) {
    absl::StrAppendFormat(&out, "%-10s", b.bucket);
    for (const Scores& s : b.at_grid)
      absl::StrAppendFormat(&out, " | %5.3f / %5.3f %5.3f", s.mrr_calibration, s.mrr_held_out,
                            s.mean_cosine);
    out += "\n";
  }
  return out;
}

std::string CalibrationJson(const Calibration& c) {
  Json buckets = Json::array();
  for (const BucketCalibration& b : c.buckets) {
    buckets.push_back({{"bucket", b.bucket},
                       {"min_tokens", b.min_tokens},
                       {"documents", b.documents},
                       {"tau", b.tau},
                       {"tau_1", ScoresJson(b.at_one)},
                       {"best_fixed", ScoresJson(b.at_best_fixed)},
                       {"schedule", ScoresJson(b.at_schedule)},
                       {"grid", Json::array()}});
    for (size_t g = 0; g < c.grid.size(); ++g) {
      Json scores = ScoresJson(b.at_grid[g]);
      scores["tau"] = c.grid[g];
      buckets.back()["grid"].push_back(std::move(scores));
    }
  }
  return Json({{"grid", c.grid},
               {"best_fixed_tau", c.best_fixed},
               {"query_tokens", c.query_tokens},
               {"buckets", buckets}})
             .dump(2) +
         "\n";
}

std::string CalibrationChartSvg(const Calibration& c, const std::string& model) {
  std::vector<std::string> labels;
  std::vector<ChartSeries> mrr(6), cosine(3);
  const std::string fixed = absl::StrFormat("tau=%.2f", c.best_fixed);
  const char* names[] = {"tau=1", "", "AUTO"};
  for (int i = 0; i < 3; ++i) {
    const std::string name = i == 1 ? fixed : names[i];
    mrr[i].label = name + " (calib.)";
    mrr[3 + i].label = name + " (held-out)";
    cosine[i].label = name;
  }
  for (const BucketCalibration& b : c.buckets) {
    labels.push_back(b.bucket);
    const Scores* s[] = {&b.at_one, &b.at_best_fixed, &b.at_schedule};
    for (int i = 0; i < 3; ++i) {
      mrr[i].values.push_back(s[i]->mrr_calibration);
      mrr[3 + i].values.push_back(s[i]->mrr_held_out);
      cosine[i].values.push_back(s[i]->mean_cosine);
    }
  }
  const std::string name = model.empty() ? "default model" : model;
  return StackChartsSvg({RenderLineChartSvg("Retrieval by length: " + name,
                                            "length bucket (tokens)", "MRR@10", labels, mrr),
                         RenderLineChartSvg("Collapse by length: " + name, "length bucket (tokens)",
                                            "mean pairwise cosine", labels, cosine)});
}

std::string ScheduleFileJson(const Calibration& c, const std::string& source) {
  Json points = Json::array();
  for (const BucketCalibration& b : c.buckets) {
    if (!points.empty() && points.back()["tau"].get<float>() == b.tau) continue;
    points.push_back({{"min_tokens", points.empty() ? 0u : b.min_tokens}, {"tau", b.tau}});
  }
  return Json({{"schedule", {{"form", "piecewise"}, {"points", points}}}, {"source", source}})
             .dump(2) +
         "\n";
}

}  // namespace embedding::client
