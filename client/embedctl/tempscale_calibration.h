// `embedctl calibrate`: fits a model's AUTO TempScale schedule for retrieval on the user's own
// corpus. Per length bucket (up to the model's window) it scores a grid of τ on the
// self-supervised tasks of retrieval_task.h (MRR@10, calibration half), then picks the
// non-increasing schedule that maximises the summed score subject to scoring at least τ = 1
// in every bucket (τ = 1 everywhere is always allowed, so the fit is never worse than τ = 1
// on the calibration half). A τ below 1 must beat τ = 1 by `min_gain` in its bucket: a few
// dozen queries rank noisily, and a gain inside that noise is not worth changing the model. Queries
// are short, so they take the first bucket's τ, as AUTO gives them when served. The held-out half
// reports what the fit is worth on unseen text.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/embedctl/retrieval_task.h"
#include "client/embedding_client.h"

namespace embedding::client {

struct CalibrationOptions {
  std::vector<float> grid;  // candidate τ in (0, 1]; 1 is added when missing
  RetrievalTaskOptions tasks;
  double min_gain = 0.01;  // MRR@10 a τ < 1 must add over τ = 1 in its bucket
  size_t batch = 16;
  std::function<void(size_t, size_t)> progress;  // (calls done, calls in all)
};

// Scores on one half of a bucket's task under one configuration.
struct Scores {
  double mrr_calibration = 0;
  double mrr_held_out = 0;
  double mean_cosine = 0;  // between the bucket's documents: the collapse curve
};

struct BucketCalibration {
  std::string bucket;
  uint32_t min_tokens = 0;
  size_t documents = 0;  // both halves
  float tau = 1;         // the fitted schedule's
  Scores at_one, at_best_fixed, at_schedule;
  std::vector<Scores> at_grid;  // documents and queries at each grid τ, in grid order
};

struct Calibration {
  std::vector<float> grid;  // descending
  float best_fixed = 1;     // the single τ with the best mean calibration score
  uint32_t query_tokens = 0;
  std::vector<BucketCalibration> buckets;
};

// INVALID_ARGUMENT for a bad grid or a corpus with no bucket of enough documents; the
// server's error otherwise.
absl::StatusOr<Calibration> RunCalibration(EmbeddingClient& client,
                                           const std::vector<std::string>& corpus,
                                           const CalibrationOptions& options);

std::string FormatCalibrationTable(const Calibration& calibration);
std::string CalibrationJson(const Calibration& calibration);
// Two panels: MRR@10 per bucket (τ = 1, best fixed, schedule; calibration and held-out), and
// the mean pairwise cosine per bucket for the same three.
std::string CalibrationChartSvg(const Calibration& calibration, const std::string& model);
// The model directory's tempscale.json; `source` says how it was made.
std::string ScheduleFileJson(const Calibration& calibration, const std::string& source);

}  // namespace embedding::client
