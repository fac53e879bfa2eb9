// The OpenAI API's wire format, both ways: the body of a POST /v1/embeddings read into the
// core's EmbedCall, and the JSON this server answers on /v1/embeddings and /v1/models, with
// its error object, built from the core's answers. Pure: no model, no I/O, so the request side
// is fuzzed (tests/fuzz/request_fuzz.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/core_options.h"
#include "server/core/embed_call.h"
#include "server/core/model_catalog.h"
#include "server/http/api_call.h"

namespace embedding::server {

struct OpenAiEmbeddingsRequest {
  EmbedCall call;       // texts or token ids; no deadline (the endpoint sets it)
  bool base64 = false;  // encoding_format "base64": little-endian float32, base64
};

// Reads `body`. INVALID_ARGUMENT "PARAM: reason" (PARAM is the field: "input[3]",
// "temperature", or "body" for JSON that does not parse, nests too deep or is not an object)
// for malformed JSON, wrong types, unknown fields, and more inputs or token ids than `limits`
// allow, all checked before anything is allocated per input. Semantics (ranges, the model)
// are left to the core (ValidateEmbedCall), as for gRPC.
//
// Fields: model, input (a string, strings, token ids, or lists of token ids), encoding_format
// (float | base64), dimensions, user; the extensions temperature, strategy (a strategy name),
// truncation_side (start | end), chunk_tokens, chunk_overlap_tokens, normalize, prompt,
// prompt_name, task (a task adapter, as Jina's API names it), outputs (dense | sparse |
// multi_vector), multi_vector_encoding (float32 | float16 | int8), max_vectors.
absl::StatusOr<OpenAiEmbeddingsRequest> ParseOpenAiEmbeddingsRequest(std::string_view body,
                                                                     const RequestLimits& limits);

// The request as the API listener's embed handler takes it: the call, and its answer written
// by OpenAiEmbeddingsBody in the encoding the request chose.
absl::StatusOr<ParsedEmbed> ParseOpenAiEmbed(std::string_view body, const RequestLimits& limits);

// {object: "list", data: [{object: "embedding", index, embedding, details}], model, usage}.
// `embedding` is floats, or with `base64` the little-endian float32 bytes in base64. `details`
// (ignored by OpenAI clients) carries what gRPC's DocumentEmbedding adds: token_count,
// chunk_count, truncated, temperature, length_bucket, high_frequency_ratio, sparse and
// multi_vector when asked (token_outputs_json.h), and for CHUNK_ALL and late chunking the
// chunks with their embedding and token, char and byte spans. `embedding` is [] when dense
// output was not asked for.
std::string OpenAiEmbeddingsBody(const EmbedAnswer& answer, bool base64);

// {object: "list", data: [{id, object: "model", created, owned_by}]}, current versions.
std::string OpenAiModelsBody(const std::vector<std::shared_ptr<const ServedModel>>& models);

// {error: {message, type, param, code}}. `param` is the field the message starts with
// ("temperature: ..."; gRPC's "inputs[2]" becomes "input[2]"), or null.
std::string OpenAiErrorBody(const absl::Status& status);
// The same error object for a route that names its fields as the core does (Cohere's
// /v2/embed: `param` "texts[0]" as the message says it); `openai_input` renames as above.
std::string ErrorObjectBody(const absl::Status& status, bool openai_input);

}  // namespace embedding::server
