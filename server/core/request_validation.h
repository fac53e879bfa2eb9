// Turns an EmbedCall's options into EmbedParams for one model, checking every field. Cheap
// enough for a door's handler thread: no tokenisation (UTF-8 is checked when tokenising).
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "model_store/model.h"
#include "server/core/core_options.h"
#include "server/core/embed_call.h"
#include "server/core/embed_params.h"
#include "server/core/score_call.h"

namespace embedding::server {

// INVALID_ARGUMENT naming the field and its allowed range: no inputs, too many inputs, bytes or
// token ids, temperature NaN/infinite/out of range, chunk_tokens above the
// window, overlap >= chunk, dimensions 0 or above the hidden size, prompt and prompt_name
// together, an unknown prompt_name, an output asked twice or one the model has no head for
// ("outputs[i]"), multi_vector_encoding or max_vectors without MULTI_VECTOR, max_vectors 0,
// or token states under a strategy that encodes more than one window.
absl::StatusOr<EmbedParams> ValidateEmbedCall(const EmbedCall& call,
                                              const model_store::Model& model,
                                              const RequestLimits& limits);

// A Rerank's or Classify's options, checked as an Embed call's (`call` carries them and the
// inputs) and then as a score's: INVALID_ARGUMENT naming strategy for one that does not score
// (CHUNK_ALL, LATE_CHUNKING). The params never normalise; they return chunks when asked.
absl::StatusOr<EmbedParams> ValidateScoreCall(const EmbedCall& call, const ScoreOptions& options,
                                              const model_store::Model& model,
                                              const RequestLimits& limits);

// The first texts of pairs (a rerank's query, or one per input) are each at most MaxInputBytes
// and, with the inputs, at most --max-request-bytes; INVALID_ARGUMENT naming `field`
// (field[i] for several) otherwise.
absl::Status ValidatePairFirsts(const std::vector<std::string>& firsts, const std::string& field,
                                const TextInputs& inputs, const RequestLimits& limits);

// What a model can give: dense always, sparse and multi-vector when it has bge-m3's heads.
std::vector<Output> OfferedOutputs(const model_store::Model& model);

// `count` inputs is between 1 and --max-inputs-per-request; INVALID_ARGUMENT otherwise.
// `field` names the list in the refusal ("documents" for a rerank).
absl::Status ValidateInputCount(size_t count, const RequestLimits& limits,
                                absl::string_view field = "inputs");

// Bytes of text one input may hold: kMaxBytesPerToken for each token
// --max-tokens-per-document allows. Tokenizing costs about 28 bytes of memory per byte of text
// (each character's code point and offsets, then the words split from them) before a single
// token can be counted, and a text past the token limit is refused only after that: 448 MiB for
// a 16 MiB text. 16 bytes per token is four times English prose's 4 and twice what code or
// CJK text reaches, so only texts that could not be served are refused early.
inline constexpr int64_t kMaxBytesPerToken = 16;
int64_t MaxInputBytes(const RequestLimits& limits);

// Each input, with `prompt_bytes` prepended, is at most MaxInputBytes, and all of them
// together at most --max-request-bytes; INVALID_ARGUMENT naming the input (inputs[i]) or
// inputs (and prompt when it counts) otherwise.
absl::Status ValidateTextBytes(const TextInputs& inputs, size_t prompt_bytes,
                               const RequestLimits& limits, absl::string_view field = "inputs");

// A Tokenize call answers at most --max-tokens-per-document tokens in all, so all its inputs
// together are bounded like one text (MaxInputBytes); INVALID_ARGUMENT naming inputs otherwise.
absl::Status ValidateTokenizeBytes(const TextInputs& inputs, const RequestLimits& limits);

}  // namespace embedding::server
