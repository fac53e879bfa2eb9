// Cohere's API v2 embed (POST /v2/embed), both ways, as the official cohere-ai clients send and
// read it:
//   {model, texts | inputs: [{content: [{type: "text", text}]}], input_type, embedding_types,
//    truncate (NONE | START | END, default END), max_tokens, output_dimension, priority}
//   -> {id, embeddings: {float, int8, uint8, binary, ubinary, base64}, texts,
//       meta: {api_version: {version: "2"}, billed_units: {input_tokens}, warnings},
//       response_type: "embeddings_by_type"}
// plus the Embed options of embed_options_json.h. The compact types, each from the float
// vector (after output_dimension and normalisation):
//   int8:    round(v / s), s = max |v| / 127 per vector (0 for a zero vector), in [-127, 127];
//            v is s * byte within s / 2, and "scales" in the answer gives each vector's s;
//   uint8:   the int8 byte + 128, in [1, 255] (v = s * (byte - 128));
//   ubinary: sign bits, 1 for v > 0, first value in the most significant bit, padded to a byte
//            (numpy's packbits, sentence-transformers' quantize_embeddings);
//   binary:  the ubinary byte - 128, as sentence-transformers defines it;
//   base64:  the float32 values' little-endian bytes, base64.
// Errors are OpenAI's error object, as on /v1/rerank and /v2/rerank. Pure.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/core/core_options.h"
#include "server/http/api_call.h"

namespace embedding::server {

// INVALID_ARGUMENT "field: reason" for a body of the wrong shape: texts or inputs missing, both
// sent, or past --max-inputs-per-request; images or an image input (this server embeds text);
// an unknown or repeated embedding type, truncate or input_type name; truncate beside a
// chunking strategy; an unknown field. Ranges (max_tokens, output_dimension) are the core's.
absl::StatusOr<ParsedEmbed> ParseCohereEmbed(std::string_view body, const RequestLimits& limits);

// OpenAI's error object with `param` as the message names it ("texts[2]", "inputs[0]").
std::string CohereErrorBody(const absl::Status& status);

}  // namespace embedding::server
