// The Embed options every HTTP embedding route with a JSON body of its own accepts beside its
// own fields (/v1/embeddings, /v2/embed), spelled alike: temperature, temperature_mode
// ("fixed" | "auto"), strategy, truncation_side ("start" | "end"), chunk_tokens,
// chunk_overlap_tokens, normalize, prompt, prompt_name, task, input_type (Cohere's
// "search_query", "search_document", "classification", "clustering"). The first six are the
// long-text options the score routes spell alike (ReadLongTextOption).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "common/status_macros.h"
#include "server/core/embed_call.h"
#include "server/http/json_body.h"

namespace embedding::server {

// When `key` is one of the options above, reads `value` into `options` and sets `*taken`;
// otherwise leaves both. INVALID_ARGUMENT naming the field for a value of the wrong type or an
// unknown name.
absl::Status ReadEmbedOption(const std::string& key, const nlohmann::json& value,
                             EmbedRequestOptions* options, bool* taken);

// The option names, ", "-separated, for a route's unknown-field refusal.
const char* EmbedOptionNames();

// "start" keeps the start, "end" the end; INVALID_ARGUMENT naming truncation_side otherwise.
absl::StatusOr<TruncationSide> ReadTruncationSide(const nlohmann::json& value);

// The long-text options the embed and the score routes share (temperature, temperature_mode,
// strategy, truncation_side, chunk_tokens, chunk_overlap_tokens), read as ReadEmbedOption
// reads them into any options struct with those members (EmbedRequestOptions, ScoreOptions).
template <typename Options>
absl::Status ReadLongTextOption(const std::string& key, const nlohmann::json& value,
                                Options* options, bool* taken) {
  *taken = true;
  if (key == "temperature" || key == "temperature_mode") {
    return ReadTemperatureField(key, value, &options->temperature, &options->temperature_mode)
        .status();
  } else if (key == "strategy") {
    ASSIGN_OR_RETURN(std::string name, ReadJsonString(value, "strategy"));
    ASSIGN_OR_RETURN(options->strategy, ParseStrategyName(name, "strategy"));
  } else if (key == "truncation_side") {
    ASSIGN_OR_RETURN(options->truncation_side, ReadTruncationSide(value));
  } else if (key == "chunk_tokens") {
    ASSIGN_OR_RETURN(options->chunk_tokens, ReadJsonCount(value, "chunk_tokens"));
  } else if (key == "chunk_overlap_tokens") {
    ASSIGN_OR_RETURN(options->chunk_overlap_tokens, ReadJsonCount(value, "chunk_overlap_tokens"));
  } else {
    *taken = false;
  }
  return absl::OkStatus();
}

}  // namespace embedding::server
