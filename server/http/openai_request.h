// The body of an OpenAI-style POST /v1/embeddings, read into the core's EmbedCall. Pure: no
// model, no I/O, so it is fuzzed (tests/fuzz/request_fuzz.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/core_options.h"
#include "server/core/embed_call.h"

namespace embedding::server {

struct OpenAiEmbeddingsRequest {
  EmbedCall call;       // texts or token ids; no deadline (the endpoint sets it)
  bool base64 = false;  // encoding_format "base64": little-endian float32, base64
};

// JSON nested deeper than this is refused before it is built.
inline constexpr int kMaxJsonDepth = 16;

// Reads `body`. INVALID_ARGUMENT "PARAM: reason" (PARAM is the field: "input[3]",
// "temperature", or "body" for JSON that does not parse, nests too deep or is not an object)
// for malformed JSON, wrong types, unknown fields, and more inputs or token ids than `limits`
// allow, all checked before anything is allocated per input. Semantics (ranges, the model)
// are left to the core (ValidateEmbedCall), as for gRPC.
//
// Fields: model, input (a string, strings, token ids, or lists of token ids), encoding_format
// (float | base64), dimensions, user; the extensions temperature, strategy (a strategy name),
// truncation_side (start | end), chunk_tokens, chunk_overlap_tokens, normalize, prompt_name.
absl::StatusOr<OpenAiEmbeddingsRequest> ParseOpenAiEmbeddingsRequest(std::string_view body,
                                                                     const RequestLimits& limits);

}  // namespace embedding::server
