// The OpenAI-shaped JSON this server answers on /v1/embeddings and /v1/models, and its error
// object, built from the core's answers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/core/embed_call.h"
#include "server/core/model_registry.h"

namespace embedding::server {

// {object: "list", data: [{object: "embedding", index, embedding, details}], model, usage}.
// `embedding` is floats, or with `base64` the little-endian float32 bytes in base64. `details`
// (ignored by OpenAI clients) carries what gRPC's DocumentEmbedding adds: token_count,
// chunk_count, truncated, temperature, length_bucket, high_frequency_ratio, and for CHUNK_ALL
// and late chunking the chunks with their embedding and token, char and byte spans.
std::string OpenAiEmbeddingsBody(const EmbedAnswer& answer, bool base64);

// {object: "list", data: [{id, object: "model", created, owned_by}]}, current versions.
std::string OpenAiModelsBody(const std::vector<std::shared_ptr<const ServedModel>>& models);

// The HTTP status for `status`'s code: 400, 401, 404, 429, 503, 504, or 500 (which DATA_LOSS
// and UNKNOWN, only a corrupt model or a bug, share with INTERNAL).
int OpenAiHttpStatus(const absl::Status& status);

// {error: {message, type, param, code}}. `param` is the field the message starts with
// ("temperature: ..."; gRPC's "inputs[2]" becomes "input[2]"), or null.
std::string OpenAiErrorBody(const absl::Status& status);

}  // namespace embedding::server
