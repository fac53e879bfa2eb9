// What a calibration run will send and how long it should take, from one timed probe call, and
// each call's deadline scaled by what the call carries: a 64-document call at 8,000 tokens each
// takes hundreds of times longer than one of short queries, and one fixed deadline fits both
// badly.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/embedctl/calibration_state.h"
#include "client/embedctl/retrieval_task.h"
#include "client/embedding_client.h"

namespace embedding::client {

struct CallBudget {
  double tokens_per_second = 0;  // the probe's
  double bytes_per_token = 0;    // the probe document's
  absl::Duration floor;          // --timeout-s: no call gets less
  // What the probe embedded; no documents when there was nothing left to embed.
  std::string probe_bucket;
  size_t probe_documents = 0;
  uint64_t probe_tokens = 0;  // special tokens included, as the server counts them

  // The deadline of a call carrying `bytes` of text: the floor, or four times the probe's pace
  // (room for a busy server) when that is longer.
  absl::Duration DeadlineFor(size_t bytes) const;
  double SecondsFor(size_t bytes) const;
};

// The probe's bound in tokens: a call of the longest bucket's documents as the run sends them
// (batched: one document alone runs at about half the pace on a base-sized model), as many as
// fit in this many tokens, so that a bucket of 8k-token documents is probed with one (a
// minute's work for a real model on 2 cores); one document longer than this is probed alone.
inline constexpr uint32_t kProbeTokens = 4096;

// Embeds the first documents of the longest bucket with work left (a (bucket, τ) that `state`
// lacks; null: every bucket has) at τ = 1, truncated to one window, in one call, and times it:
// as many as fit in kProbeTokens by the server's Tokenize count, at most `batch`, at least one.
// With no work left it embeds nothing and the budget has no pace. The server's error, naming
// the probe, when it fails.
absl::StatusOr<CallBudget> ProbeCallBudget(EmbeddingClient& client,
                                           const std::vector<BucketTask>& tasks,
                                           const std::vector<float>& grid,
                                           const CalibrationState* state, const std::string& model,
                                           size_t batch, absl::Duration floor);

// Per bucket: documents and queries, about how many tokens each τ sends, and the estimated
// time; then the grid and the total, less what `state` already holds.
std::string FormatCalibrationPlan(const std::vector<BucketTask>& tasks,
                                  const std::vector<float>& grid, const CallBudget& budget,
                                  const CalibrationState* state);

}  // namespace embedding::client
