// Turns an EmbedCall's options into EmbedParams for one model, checking every field. Cheap
// enough for a door's handler thread: no tokenisation (UTF-8 is checked when tokenising).
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "model_store/model.h"
#include "server/core/core_options.h"
#include "server/core/embed_call.h"
#include "server/core/embed_params.h"

namespace embedding::server {

// INVALID_ARGUMENT naming the field and its allowed range: no inputs, too many inputs, bytes or
// token ids, temperature NaN/infinite/out of range, unknown enum values, chunk_tokens above the
// window, overlap >= chunk, dimensions 0 or above the hidden size, prompt and prompt_name
// together, an unknown prompt_name, an output asked twice or one the model has no head for
// ("outputs[i]"), multi_vector_encoding or max_vectors without MULTI_VECTOR, max_vectors 0,
// or token states under a strategy that encodes more than one window.
absl::StatusOr<EmbedParams> ValidateEmbedCall(const EmbedCall& call,
                                              const model_store::Model& model,
                                              const RequestLimits& limits);

// What a model can give: DENSE always, SPARSE and MULTI_VECTOR when it has bge-m3's heads.
std::vector<v1::EmbeddingOutput> OfferedOutputs(const model_store::Model& model);

// `count` inputs is between 1 and --max-inputs-per-request; INVALID_ARGUMENT otherwise.
absl::Status ValidateInputCount(size_t count, const RequestLimits& limits);

// The text a request makes, every input with `prompt_bytes` prepended to each, is at most
// --max-request-bytes; INVALID_ARGUMENT naming inputs (and prompt when it counts) otherwise.
absl::Status ValidateTextBytes(const TextInputs& inputs, size_t prompt_bytes,
                               const RequestLimits& limits);

}  // namespace embedding::server
