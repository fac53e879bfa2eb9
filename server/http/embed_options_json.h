// The Embed options every HTTP embedding route with a JSON body of its own accepts beside its
// own fields (/v1/embeddings, /v2/embed), spelled alike: temperature, temperature_mode
// ("fixed" | "auto"), strategy, truncation_side ("start" | "end"), chunk_tokens,
// chunk_overlap_tokens, normalize, prompt, prompt_name, task, input_type (Cohere's
// "search_query", "search_document", "classification", "clustering").
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "server/core/embed_call.h"

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

}  // namespace embedding::server
