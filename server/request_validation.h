// Turns an EmbedRequest into EmbedParams for one model, checking every field. Cheap enough
// for a gRPC handler thread: no tokenisation (UTF-8 is checked when tokenising).
#pragma once

#include "absl/status/statusor.h"
#include "embedding/v1/embedding.pb.h"
#include "model_store/model.h"
#include "server/embed_params.h"
#include "server/server_options.h"

namespace embedding::server {

// INVALID_ARGUMENT naming the field and its allowed range: no inputs, too many inputs or
// bytes, temperature NaN/infinite/out of range, unknown enum values, chunk_tokens above the
// window, overlap >= chunk, dimensions 0 or above the hidden size, prompt and prompt_name
// together, or an unknown prompt_name.
absl::StatusOr<EmbedParams> ValidateEmbedRequest(const v1::EmbedRequest& request,
                                                 const model_store::Model& model,
                                                 const RequestLimits& limits);

// `inputs` holds between 1 and --max-inputs-per-request entries; INVALID_ARGUMENT otherwise.
absl::Status ValidateInputCount(int count, const RequestLimits& limits);

// The text a request makes, every input with `prompt_bytes` prepended to each, is at most
// --max-request-bytes; INVALID_ARGUMENT naming inputs (and prompt when it counts) otherwise.
absl::Status ValidateTextBytes(const google::protobuf::RepeatedPtrField<std::string>& inputs,
                               size_t prompt_bytes, const RequestLimits& limits);

}  // namespace embedding::server
