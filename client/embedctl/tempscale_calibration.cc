#include "client/embedctl/tempscale_calibration.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/embedctl/collapse_stats.h"
#include "client/embedctl/svg_chart.h"
#include "common/length_buckets.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace embedding::client {
namespace {
using Json = nlohmann::json;
using Vectors = std::vector<std::vector<float>>;

// A bucket's per-query reciprocal ranks with documents at grid index g and queries at q
// (rr[g][q]), and which queries fall in each half.
struct BucketRanks {
  std::vector<std::vector<std::vector<double>>> rr;
  // Each pool's first document at each τ: the collapse curve compares different texts, not a
  // pool's copies of one haystack.
  std::vector<Vectors> pool_heads;
  std::vector<size_t> calibration, held_out;  // queries of even pools, of odd pools
  std::vector<size_t> depth;                  // per query: its index in kFactDepths
};

size_t NearestDepth(float depth) {
  size_t best = 0;
  for (size_t d = 1; d < std::size(kFactDepths); ++d)
    if (std::abs(kFactDepths[d] - depth) < std::abs(kFactDepths[best] - depth)) best = d;
  return best;
}

BucketRanks Rank(const BucketTask& task, const std::vector<Vectors>& documents,
                 const std::vector<Vectors>& queries) {
  BucketRanks r;
  r.rr.resize(documents.size());
  for (size_t g = 0; g < documents.size(); ++g)
    for (size_t q = 0; q < queries.size(); ++q)
      r.rr[g].push_back(ReciprocalRanks(queries[q], documents[g], task.pool_size));
  for (const Vectors& at_tau : documents) {
    Vectors heads;
    for (size_t i = 0; i < at_tau.size(); i += task.pool_size) heads.push_back(at_tau[i]);
    r.pool_heads.push_back(std::move(heads));
  }
  for (size_t i = 0; i < task.documents.size(); ++i) {
    ((i / task.pool_size) % 2 == 0 ? r.calibration : r.held_out).push_back(i);
    r.depth.push_back(NearestDepth(task.depths[i]));
  }
  return r;
}

double CalibrationMrr(const BucketRanks& r, size_t g, size_t q) {
  return MeanOver(r.rr[g][q], r.calibration);
}

Scores ScoresAt(const BucketRanks& r, size_t g, size_t q) {
  Scores s;
  const std::vector<double>& rr = r.rr[g][q];
  s.mrr_calibration = MeanOver(rr, r.calibration);
  s.mrr_held_out = MeanOver(rr, r.held_out);
  s.gain_calibration = ComparePaired(rr, r.rr[0][0], r.calibration);
  s.gain_held_out = ComparePaired(rr, r.rr[0][0], r.held_out);
  s.mean_cosine = MeanPairwiseCosine(r.pool_heads[g]);
  for (size_t d = 0; d < std::size(kFactDepths); ++d) {
    std::vector<size_t> at_depth;
    for (size_t i = 0; i < r.depth.size(); ++i)
      if (r.depth[i] == d) at_depth.push_back(i);
    s.mrr_by_depth.push_back(at_depth.empty() ? NAN : MeanOver(rr, at_depth));
    s.gain_by_depth.push_back(ComparePaired(rr, r.rr[0][0], at_depth));
  }
  return s;
}

// The non-increasing schedule (grid indices, ascending = τ descending; index 0 is τ = 1) with
// the best summed calibration MRR among those where every bucket passes its paired tests:
// at τ = 1 (its queries possibly at bucket 0's τ) no loss against τ = 1, below 1 a gain above
// `min_gain_se` standard errors. Bucket 0's index is also the queries'. Ties keep the larger
// τ. All-ones is always feasible.
std::vector<size_t> FitSchedule(const std::vector<BucketRanks>& buckets, size_t grid,
                                double min_gain_se) {
  const size_t n = buckets.size();
  constexpr double kSlack = 1e-12;
  std::vector<size_t> best_path(n, 0);
  double best_total = -1;
  for (size_t q = 0; q < grid; ++q) {
    // total[b][g]: best sum over buckets 0..b with bucket b at index g; parent for backtracking.
    std::vector<std::vector<double>> total(n, std::vector<double>(grid, -1));
    std::vector<std::vector<size_t>> parent(n, std::vector<size_t>(grid, 0));
    auto allowed = [&](size_t b, size_t g) {
      const BucketRanks& r = buckets[b];
      const PairedGain gain = ComparePaired(r.rr[g][q], r.rr[0][0], r.calibration);
      return g == 0 ? gain.mean + kSlack >= 0 : gain.Significant(min_gain_se);
    };
    if (!allowed(0, q)) continue;
    total[0][q] = CalibrationMrr(buckets[0], q, q);
    for (size_t b = 1; b < n; ++b) {
      for (size_t g = 0; g < grid; ++g) {
        if (!allowed(b, g)) continue;
        const double score = CalibrationMrr(buckets[b], g, q);
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

size_t BestFixed(const std::vector<BucketRanks>& buckets, size_t grid) {
  size_t best = 0;
  double best_mean = -1;
  for (size_t g = 0; g < grid; ++g) {
    double sum = 0;
    for (const BucketRanks& r : buckets) sum += CalibrationMrr(r, g, g);
    if (sum / buckets.size() > best_mean + 1e-12) best_mean = sum / buckets.size(), best = g;
  }
  return best;
}

// A bucket's documents and queries at one τ. A failure names the bucket and τ, and the flag
// to change when a deadline passed.
absl::StatusOr<SavedVectors> EmbedTask(EmbeddingClient& client, const BucketTask& task, float tau,
                                       const CalibrationOptions& options, const BatchCalls& calls) {
  EmbedOptions embed;
  embed.model = options.tasks.model;
  embed.temperature = tau;
  embed.strategy = v1::LONG_TEXT_STRATEGY_TRUNCATE;  // cuts fit the window: one sequence
  EmbedOptions query = embed;
  query.prompt_name = options.tasks.query_prompt_name;
  auto failed = [&](const absl::Status& status) {
    return absl::Status(
        status.code(),
        absl::StrCat("bucket ", task.bucket, ", tau ", tau, ": ", status.message(),
                     status.code() == absl::StatusCode::kDeadlineExceeded
                         ? "; raise --timeout-s (or lower --docs-per-bucket), then rerun with "
                           "--resume to keep the work done"
                         : "; rerun with --resume to keep the work done"));
  };
  auto docs = EmbedInBatches(client, task.documents, embed, calls);
  if (!docs.ok()) return failed(docs.status());
  auto queries = EmbedInBatches(client, task.queries, query, calls);
  if (!queries.ok()) return failed(queries.status());
  return SavedVectors{*std::move(docs), *std::move(queries)};
}

Json GainJson(const PairedGain& g) {
  return {{"queries", g.queries}, {"mean", g.mean}, {"standard_error", g.standard_error}};
}

Json GainsJson(const std::vector<PairedGain>& gains) {
  Json out = Json::array();
  for (const PairedGain& g : gains) out.push_back(GainJson(g));
  return out;
}

Json ScoresJson(const Scores& s, double min_gain_se) {
  return {{"mrr_at_10_calibration", s.mrr_calibration},
          {"mrr_at_10_held_out", s.mrr_held_out},
          {"gain_calibration", GainJson(s.gain_calibration)},
          {"gain_held_out", GainJson(s.gain_held_out)},
          {"significant", s.gain_calibration.Significant(min_gain_se)},
          {"mrr_at_10_by_depth", s.mrr_by_depth},
          {"gain_by_depth", GainsJson(s.gain_by_depth)},
          {"mean_cosine", s.mean_cosine}};
}

// "+0.031 ± 0.012*": a paired gain, starred when significant.
std::string GainText(const PairedGain& g, double min_gain_se) {
  return absl::StrFormat("%+.3f ± %.3f%s", g.mean, g.standard_error,
                         g.Significant(min_gain_se) ? "*" : " ");
}

// Per depth of the fact: τ = 1, then the best fixed τ and AUTO with their paired gains.
std::string DepthTable(const Calibration& c) {
  const double k = c.min_gain_se;
  std::string out;
  absl::StrAppendFormat(&out,
                        "\nMRR@10 by where the fact sits (both halves): tau = 1, then the best "
                        "fixed tau (%.2f) and AUTO with their gains paired against tau = 1\n",
                        c.best_fixed);
  absl::StrAppendFormat(&out, "%-19s", "bucket");
  for (float depth : kFactDepths)
    absl::StrAppendFormat(&out, " | %23s", absl::StrFormat("depth %.2f", depth));
  out += "\n";
  for (const BucketCalibration& b : c.buckets) {
    const std::pair<const char*, const Scores*> rows[] = {
        {"tau=1", &b.at_one}, {"best fixed", &b.at_best_fixed}, {"AUTO", &b.at_schedule}};
    for (const auto& [name, scores] : rows) {
      std::string line = absl::StrFormat("%-8s %-10s", b.bucket, name);
      for (size_t d = 0; d < scores->mrr_by_depth.size(); ++d) {
        if (std::isnan(scores->mrr_by_depth[d])) {
          absl::StrAppendFormat(&line, " | %23s", "-");
        } else {
          absl::StrAppendFormat(&line, " | %5.3f %-17s", scores->mrr_by_depth[d],
                                scores == &b.at_one ? "" : GainText(scores->gain_by_depth[d], k));
        }
      }
      absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line), "\n");
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<float>> CalibrationGrid(std::vector<float> grid) {
  for (float tau : grid) {
    if (!(tau > 0 && tau <= 1))
      return absl::InvalidArgumentError(
          absl::StrCat("--temperatures: ", tau, " is outside (0, 1]"));
  }
  if (std::find(grid.begin(), grid.end(), 1.0f) == grid.end()) grid.push_back(1);
  std::sort(grid.begin(), grid.end(), std::greater<float>());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  return grid;
}

absl::StatusOr<Calibration> RunCalibration(EmbeddingClient& client,
                                           const std::vector<BucketTask>& tasks,
                                           const CalibrationOptions& options) {
  Calibration out;
  ASSIGN_OR_RETURN(out.grid, CalibrationGrid(options.grid));
  if (tasks.empty()) return absl::InvalidArgumentError("--corpus: no bucket to calibrate");
  const size_t batch = std::max<size_t>(1, options.batch);
  size_t total_calls = 0, calls = 0;
  for (const BucketTask& task : tasks)
    total_calls += 2 * out.grid.size() * ((task.documents.size() + batch - 1) / batch);
  auto on_call = [&] {
    if (options.progress) options.progress(++calls, total_calls);
  };
  BatchCalls batch_calls{batch, std::max<size_t>(1, options.in_flight), on_call, nullptr};
  if (options.budget) {
    batch_calls.deadline_for = [&](size_t bytes) { return options.budget->DeadlineFor(bytes); };
  }
  std::vector<BucketRanks> ranks;
  for (const BucketTask& task : tasks) {
    std::vector<Vectors> documents, queries;
    for (float tau : out.grid) {
      const SavedVectors* saved = options.state ? options.state->Find(task.bucket, tau) : nullptr;
      SavedVectors vectors;
      if (saved != nullptr) {
        vectors = *saved;
        calls += 2 * ((task.documents.size() + batch - 1) / batch);
      } else {
        auto embedded = EmbedTask(client, task, tau, options, batch_calls);
        if (!embedded.ok()) return embedded.status();
        vectors = *std::move(embedded);
        if (options.state) RETURN_IF_ERROR(options.state->Save(task.bucket, tau, vectors));
      }
      documents.push_back(std::move(vectors.documents));
      queries.push_back(std::move(vectors.queries));
    }
    ranks.push_back(Rank(task, documents, queries));
  }
  const std::vector<size_t> schedule = FitSchedule(ranks, out.grid.size(), options.min_gain_se);
  const size_t fixed = BestFixed(ranks, out.grid.size());
  out.best_fixed = out.grid[fixed];
  out.kind = options.tasks.kind;
  out.pool_size = options.tasks.pool_size;
  out.query_tokens = options.tasks.query_tokens;
  out.min_gain_se = options.min_gain_se;
  for (const LengthBucket& bucket : AllLengthBuckets()) {
    const uint64_t window = options.tasks.max_tokens > 0 ? options.tasks.max_tokens : UINT64_MAX;
    if (bucket.min_tokens > window) break;
    const bool measured = std::any_of(
        tasks.begin(), tasks.end(), [&](const BucketTask& t) { return t.bucket == bucket.label; });
    if (measured) {
      out.measured_up_to_tokens = std::min(bucket.max_tokens, window);
    } else {
      out.unmeasured.push_back(bucket.label);
    }
    if (bucket.label == options.tasks.max_bucket) break;
  }
  for (size_t b = 0; b < tasks.size(); ++b) {
    BucketCalibration row;
    row.bucket = tasks[b].bucket;
    row.min_tokens = tasks[b].min_tokens;
    row.queries = tasks[b].queries.size();
    row.tau = out.grid[schedule[b]];
    row.at_one = ScoresAt(ranks[b], 0, 0);
    row.at_best_fixed = ScoresAt(ranks[b], fixed, fixed);
    row.at_schedule = ScoresAt(ranks[b], schedule[b], schedule[0]);
    for (size_t g = 0; g < out.grid.size(); ++g) row.at_grid.push_back(ScoresAt(ranks[b], g, g));
    out.buckets.push_back(std::move(row));
  }
  return out;
}

std::string FormatCalibrationTable(const Calibration& c) {
  const double k = c.min_gain_se;
  std::string out = absl::StrFormat(
      "%s task, each query ranked among %d candidates; MRR@10, and gains paired per query "
      "against tau = 1 (mean ± standard error; * above %g standard errors). Best fixed tau "
      "%.2f\n%-10s %7s %5s | calibration: %6s %6s %-17s | held-out: %6s %6s %-17s | mean cosine: "
      "%6s %6s\n",
      RetrievalTaskKindName(c.kind), c.pool_size, k, c.best_fixed, "bucket", "queries", "tau",
      "tau=1", "AUTO", "gain", "tau=1", "AUTO", "gain", "tau=1", "AUTO");
  for (const BucketCalibration& b : c.buckets) {
    absl::StrAppendFormat(
        &out,
        "%-10s %7d %5.2f | calibration: %6.3f %6.3f %-17s | held-out: %6.3f %6.3f %-17s | "
        "mean cosine: %6.3f %6.3f\n",
        b.bucket, b.queries, b.tau, b.at_one.mrr_calibration, b.at_schedule.mrr_calibration,
        GainText(b.at_schedule.gain_calibration, k), b.at_one.mrr_held_out,
        b.at_schedule.mrr_held_out, GainText(b.at_schedule.gain_held_out, k), b.at_one.mean_cosine,
        b.at_schedule.mean_cosine);
  }
  out += DepthTable(c);
  if (!c.unmeasured.empty()) {
    absl::StrAppendFormat(&out,
                          "Not measured (too little text for two pools): %s; past %d tokens the "
                          "schedule keeps its last tau unmeasured\n",
                          absl::StrJoin(c.unmeasured, ", "), c.measured_up_to_tokens);
  }
  out +=
      "\nEach grid tau alone (documents and queries at it): calibration MRR@10 and paired gain, "
      "held-out MRR@10\n";
  absl::StrAppendFormat(&out, "%-10s", "bucket");
  for (float tau : c.grid) absl::StrAppendFormat(&out, " | %31s", absl::StrFormat("tau=%.2f", tau));
  out += "\n";
  for (const BucketCalibration& b : c.buckets) {
    absl::StrAppendFormat(&out, "%-10s", b.bucket);
    for (const Scores& s : b.at_grid) {
      absl::StrAppendFormat(&out, " | %5.3f %-17s %5.3f", s.mrr_calibration,
                            GainText(s.gain_calibration, k), s.mrr_held_out);
    }
    out += "\n";
  }
  return out;
}

std::string CalibrationJson(const Calibration& c) {
  const double k = c.min_gain_se;
  Json buckets = Json::array();
  for (const BucketCalibration& b : c.buckets) {
    buckets.push_back({{"bucket", b.bucket},
                       {"min_tokens", b.min_tokens},
                       {"queries", b.queries},
                       {"tau", b.tau},
                       {"tau_1", ScoresJson(b.at_one, k)},
                       {"best_fixed", ScoresJson(b.at_best_fixed, k)},
                       {"schedule", ScoresJson(b.at_schedule, k)},
                       {"grid", Json::array()}});
    for (size_t g = 0; g < c.grid.size(); ++g) {
      Json scores = ScoresJson(b.at_grid[g], k);
      scores["tau"] = c.grid[g];
      buckets.back()["grid"].push_back(std::move(scores));
    }
  }
  return Json({{"task", RetrievalTaskKindName(c.kind)},
               {"pool_size", c.pool_size},
               {"depths", kFactDepths},
               {"min_gain_se", k},
               {"measured_up_to_tokens", c.measured_up_to_tokens},
               {"unmeasured_buckets", c.unmeasured},
               {"grid", c.grid},
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
  // What the fit saw: past measured_up_to_tokens the last point's τ is an extrapolation.
  return Json({{"schedule", {{"form", "piecewise"}, {"points", points}}},
               {"source", source},
               {"measured_up_to_tokens", c.measured_up_to_tokens},
               {"unmeasured_buckets", c.unmeasured}})
             .dump(2) +
         "\n";
}

}  // namespace embedding::client
