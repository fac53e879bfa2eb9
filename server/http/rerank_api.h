// The rerank shape Cohere defined and Jina and vLLM serve (POST /v1/rerank and /v2/rerank),
// which LangChain's and LlamaIndex's rerankers post, both ways:
//   {model, query, documents: [text | {text}], top_n, return_documents (default true)}
//   -> {model, results: [{index, relevance_score, document: {text}}], usage: {total_tokens},
//       meta: {billed_units: {search_units: 1}}}
// with results by descending score, the first top_n. The score options of
// score_options_json.h are read too (return_chunks adds each result's "chunks"); other fields
// (Cohere's rank_fields, max_tokens_per_doc ...) are ignored, as those servers ignore what
// they do not use. Errors are OpenAI's error object, as vLLM answers them. Pure.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "server/core/core_options.h"
#include "server/http/api_call.h"

namespace embedding::server {

// INVALID_ARGUMENT naming the field for a body of the wrong shape: query missing or not a
// string, documents not a non-empty list of texts or {text} objects (or more than
// --max-inputs-per-request), top_n not a positive integer.
absl::StatusOr<ParsedScore> ParseRerankRequest(std::string_view body, const RequestLimits& limits);

}  // namespace embedding::server
