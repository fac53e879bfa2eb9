// Hugging Face text-embeddings-inference's HTTP wire format, both ways, so a TEI client changes
// only its URL: request bodies of /embed (and POST /), /embed_sparse, /embed_all and /tokenize
// read into the core's calls, and TEI's answers and error object built from the core's. Pure:
// no model, no I/O.
//   /embed         {inputs, truncate, truncation_direction, normalize, prompt_name, dimensions}
//                  -> [[float]]
//   /embed_sparse  {inputs, truncate, truncation_direction, prompt_name} -> [[{index, value}]]
//   /embed_all     {inputs, truncate, truncation_direction, prompt_name} -> [[[float]]]
//   /tokenize      {inputs, add_special_tokens} -> [[{id, text, special, start, stop}]]
//   errors         {"error": message, "error_type": "Validation" | "Overloaded" | ...}
// `inputs` is a string or an array of strings. Every TEI route also takes TempScale's
// "temperature" and "temperature_mode" (as /v1/embeddings spells them), and the embed routes
// "task" (a task adapter): documented extensions in /openapi.json. Other fields TEI does not
// define are ignored, as TEI ignores them (its clients send newer versions' fields), and named
// to the caller for the ignored-field metric. TEI serves one model: these routes serve the
// default model.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/core_options.h"
#include "server/core/embedder.h"
#include "nlohmann/json.hpp"
#include "server/http/api_call.h"

namespace embedding::server {

enum class TeiRoute { kEmbed, kEmbedSparse, kEmbedAll };

// INVALID_ARGUMENT "field: reason" for a body that is not such an object, and for more inputs
// than --max-inputs-per-request. truncate false is strategy REJECT (a text longer than the
// window is refused, as TEI does); true is TRUNCATE, keeping the start unless
// truncation_direction is "Left".
// Fields neither TEI nor this server defines for the route are appended to `*ignored` when
// it is given.
absl::StatusOr<EmbedCall> ParseTeiEmbedRequest(std::string_view body, TeiRoute route,
                                               const RequestLimits& limits,
                                               std::vector<std::string>* ignored = nullptr);

// This server's extensions on TEI's embed routes: temperature, temperature_mode and task.
// Reads `key` into `options` and returns true when it is one; INVALID_ARGUMENT naming it for
// a bad value.
absl::StatusOr<bool> ReadTeiExtension(const std::string& key, const nlohmann::json& value,
                                      EmbedRequestOptions* options);
absl::StatusOr<TokenizeCall> ParseTeiTokenizeRequest(std::string_view body,
                                                     const RequestLimits& limits);

// `field` of a TEI body: a string or a non-empty array of strings, at most
// --max-inputs-per-request. INVALID_ARGUMENT naming the field (or its element).
absl::StatusOr<TextInputs> ReadTeiTexts(const nlohmann::json& body, const char* field,
                                        const RequestLimits& limits);

// TEI's `truncate` (absent: unset) and `truncation_direction` ("Right" keeps the start, "Left"
// the end, in any case).
struct TeiTruncation {
  std::optional<bool> truncate;
  TruncationSide side = TruncationSide::kKeepStart;
};
absl::StatusOr<TeiTruncation> ReadTeiTruncation(const nlohmann::json& body);

// The parser the API listener's embed handler uses for `route`: ParseTeiEmbedRequest, with
// TeiEmbedBody as the answer.
EmbedParser TeiEmbedParser(TeiRoute route);

std::string TeiEmbedBody(const EmbedAnswer& answer, TeiRoute route);
std::string TeiTokenizeBody(const TokenizeAnswer& answer);
// What GET /info says of the server itself (TEI always sends these; strict clients need them).
struct TeiServerInfo {
  int64_t max_batch_requests = 0;  // --max-batch-sequences
  int tokenization_workers = 0;    // --tokenizer-threads
};

// GET /info, in TEI's fields: model_id (the Hub repository, else the served name), model_sha
// (the Hub commit, else the model's content hash: its version), model_dtype, model_type
// {embedding: {pooling}}, max_input_length, the request and batch bounds (max_batch_tokens:
// the model's batcher's, as sized for its device), tokenization_workers, and version: this
// server's.
std::string TeiInfoBody(const ServedModel& model, const RequestLimits& limits,
                        const TeiServerInfo& server);

// TEI's statuses: 413 for a request the core refuses (Validation), 422 for a body that does
// not parse (`body_error`), 401, 404, 429 (Overloaded), 503 (Unhealthy), 504, 424 (Backend).
int TeiHttpStatus(const absl::Status& status, bool body_error);
std::string TeiErrorBody(const absl::Status& status);

}  // namespace embedding::server
