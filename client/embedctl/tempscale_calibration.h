// `embedctl calibrate`: fits a model's AUTO TempScale schedule for retrieval on the user's own
// corpus. Per length bucket (up to the model's window) it scores a grid of τ on the tasks of
// retrieval_task.h (passkey by default), every query at every τ, then picks the non-increasing
// schedule that maximises the summed calibration-half MRR@10 subject to two tests per bucket,
// each on the queries paired with themselves at τ = 1: a bucket at τ = 1 loses nothing, and a
// τ below 1 gains more than `min_gain_se` standard errors of its paired gain (τ = 1
// everywhere always passes, so the fit is never worse than τ = 1 on the calibration half).
// Queries are short, so they take the first bucket's τ, as AUTO gives them when served. The
// held-out half's paired gains report what the fit is worth on unseen pools.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/embedctl/calibration_plan.h"
#include "client/embedctl/calibration_state.h"
#include "client/embedctl/paired_statistics.h"
#include "client/embedctl/retrieval_task.h"
#include "client/embedding_client.h"

namespace embedding::client {

struct CalibrationOptions {
  std::vector<float> grid;  // candidate τ in (0, 1]; 1 is added when missing
  RetrievalTaskOptions tasks;
  // Standard errors of its paired calibration gain a τ < 1 must exceed in its bucket. 2: about
  // a 2.5% chance per bucket and τ that noise alone passes (a one-sided normal test).
  double min_gain_se = 2;
  size_t batch = 16;
  size_t in_flight = 1;  // calls at once (one per replica spreads a run over a deployment)
  std::function<void(size_t, size_t)> progress;  // (calls done, calls in all)
  // Each call's deadline by what it carries (ProbeCallBudget); default: the client's.
  std::optional<CallBudget> budget;
  // Where each (bucket, τ)'s vectors go as they complete, and come from when already there
  // (--resume); null: nowhere. Not owned.
  CalibrationState* state = nullptr;
};

// One configuration (documents at one τ, queries at one τ) on one bucket.
struct Scores {
  double mrr_calibration = 0;
  double mrr_held_out = 0;
  // Per query against τ = 1 on the same queries, in each half.
  PairedGain gain_calibration, gain_held_out;
  double mean_cosine = 0;  // between the bucket's documents: the collapse curve
  // Over both halves, per depth of kFactDepths (a lexical span's start: the nearest depth);
  // NaN (JSON null, "-" in the table) for a depth without queries: fewer than five pools.
  std::vector<double> mrr_by_depth;
  std::vector<PairedGain> gain_by_depth;  // against τ = 1 on the same queries, both halves
};

struct BucketCalibration {
  std::string bucket;
  uint32_t min_tokens = 0;
  size_t queries = 0;  // both halves, one per document
  float tau = 1;       // the fitted schedule's
  Scores at_one, at_best_fixed, at_schedule;
  std::vector<Scores> at_grid;  // documents and queries at each grid τ, in grid order
};

struct Calibration {
  std::vector<float> grid;  // descending
  float best_fixed = 1;     // the single τ with the best mean calibration score
  RetrievalTaskKind kind = RetrievalTaskKind::kPasskey;
  size_t pool_size = 0;
  uint32_t query_tokens = 0;
  double min_gain_se = 0;
  std::vector<BucketCalibration> buckets;
  // Buckets within the window (and --max-bucket) without a task: too little text for two
  // pools. Past `measured_up_to_tokens` the schedule's last τ holds unmeasured.
  std::vector<std::string> unmeasured;
  uint64_t measured_up_to_tokens = 0;
};

// The grid as calibrate runs it: descending, without repeats, with 1 added when missing.
// INVALID_ARGUMENT naming --temperatures for a τ outside (0, 1].
absl::StatusOr<std::vector<float>> CalibrationGrid(std::vector<float> grid);

// On the tasks of BuildRetrievalTasks. INVALID_ARGUMENT for a bad grid or no tasks (naming
// --temperatures, --corpus); otherwise the server's error, naming the bucket and τ that
// failed (and --timeout-s when a deadline passed: the work saved so far resumes with --resume).
absl::StatusOr<Calibration> RunCalibration(EmbeddingClient& client,
                                           const std::vector<BucketTask>& tasks,
                                           const CalibrationOptions& options);

std::string FormatCalibrationTable(const Calibration& calibration);
std::string CalibrationJson(const Calibration& calibration);
// Two panels: MRR@10 per bucket (τ = 1, best fixed, schedule; calibration and held-out), and
// the mean pairwise cosine per bucket for the same three.
std::string CalibrationChartSvg(const Calibration& calibration, const std::string& model);
// The model directory's tempscale.json; `source` says how it was made.
std::string ScheduleFileJson(const Calibration& calibration, const std::string& source);

}  // namespace embedding::client
