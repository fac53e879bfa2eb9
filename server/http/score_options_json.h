// The scoring options every HTTP rerank and classify route accepts beside its own fields, in
// the OpenAI route's spelling of Embed's: temperature, temperature_mode ("fixed" | "auto"),
// strategy ("reject", "truncate", "chunk_max", "chunk_mean", "chunk_weighted_mean"),
// truncation_side ("start" | "end"), chunk_tokens, chunk_overlap_tokens, raw_scores,
// return_chunks and instruction (a prompted reranker's, as Qwen3-Reranker's).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "server/core/score_call.h"

namespace embedding::server {

// When `key` is one of the options above, reads `value` into `options` and sets `*taken`;
// otherwise leaves both. INVALID_ARGUMENT naming the field for a value of the wrong type or an
// unknown name.
absl::Status ReadScoreOption(const std::string& key, const nlohmann::json& value,
                             ScoreOptions* options, bool* taken);

// The option names, ", "-separated, for a route's unknown-field refusal.
const char* ScoreOptionNames();

}  // namespace embedding::server
