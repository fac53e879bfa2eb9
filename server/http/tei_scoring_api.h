// Text Embeddings Inference's scoring routes, both ways, for the API listener:
//   /rerank      {query, texts, raw_scores, return_text, truncate, truncation_direction}
//                -> [{index, score, text?}] by descending score
//   /predict     {inputs: text | [first, second] | [text or pair, ...], raw_scores, truncate,
//                truncation_direction} -> [{score, label}] by descending score (a list of
//                those for a batch)
//   /similarity  {inputs: {source_sentence, sentences}, truncate, truncation_direction,
//                prompt_name} -> [cosine of each sentence to the source] (an embedder's)
// Beyond TEI, which truncates every pair to the window, a long text is scored chunk by chunk
// (chunk_max) unless `truncate` is true; score_options_json.h's options are read too. Fields TEI
// does not define are ignored, as TEI ignores them. Pure: no model, no I/O.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "server/core/core_options.h"
#include "server/http/api_call.h"

namespace embedding::server {

absl::StatusOr<ParsedScore> ParseTeiRerank(std::string_view body, const RequestLimits& limits);
absl::StatusOr<ParsedScore> ParseTeiPredict(std::string_view body, const RequestLimits& limits);
absl::StatusOr<ParsedEmbed> ParseTeiSimilarity(std::string_view body, const RequestLimits& limits);

}  // namespace embedding::server
