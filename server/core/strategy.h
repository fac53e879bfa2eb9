// The long-text strategies and what each one does, in one table: how a document is planned
// into sequences, how chunk vectors merge into the document vector, whether the model must
// return token states, and whether the answer carries chunks. The planner, the job, the
// merger and the vector math read these traits; none of them compares strategy values.
#pragma once

#include "server/core/vocabulary.h"

namespace embedding::server {

// How a document becomes the sequences the model sees.
enum class PlanRule {
  kReject,      // one sequence; longer than the window is INVALID_ARGUMENT
  kTruncate,    // one sequence: the first (or last) window of tokens
  kChunks,      // one sequence per chunk
  kLateWindows  // overlapping full windows; chunks pooled from their token states
};

// How chunk vectors become the document vector.
enum class MergeRule { kMean, kTokenWeightedMean, kMax };

struct StrategyTraits {
  PlanRule plan = PlanRule::kChunks;
  MergeRule merge = MergeRule::kMean;
  bool needs_token_states = false;  // the encoder returns hidden states, not pooled vectors
  bool returns_chunks = false;      // the answer carries each chunk's vector and spans
};

// The traits of `strategy`.
const StrategyTraits& TraitsOf(Strategy strategy);

}  // namespace embedding::server
