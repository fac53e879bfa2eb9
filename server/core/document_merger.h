// The last step of the request path for one document: its encoded sequences become the
// document vector (and, for CHUNK_ALL and late chunking, chunk vectors with their spans).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model_store/formats/tempscale_schedule.h"
#include "model_store/text/tokenizer.h"
#include "server/core/chunk_planner.h"
#include "server/core/embed_params.h"
#include "server/core/embed_result.h"
#include "server/core/token_output_merger.h"

namespace embedding::server {

// One document on its way through the model: its text, tokens, plan and what has arrived.
// Memory is bounded by the chunk count, never by token states: late chunking folds each
// window's states into per-chunk sums as the window arrives and drops them.
struct EncodedDocument {
  std::string text;           // prompt + input
  uint32_t prompt_bytes = 0;  // spans are reported relative to the input, without the prompt
  model_store::TokenizedText tokens;
  ChunkPlan plan;
  std::vector<std::vector<float>> pooled;       // per sequence; empty for late chunking
  std::vector<std::vector<double>> chunk_sums;  // late chunking: per chunk, summed states
  std::vector<uint32_t> chunk_rows;             // late chunking: rows in each sum
  std::vector<float> hf_ratio;                  // per sequence
  std::vector<float> sequence_tau;              // per sequence: the tau it is encoded at
  std::vector<float> sequence_local_tau;        // per sequence, banded layers; empty: none
  TokenOutputState token_outputs;               // sparse and multi-vector outputs, when asked
  std::vector<float> token_states;              // the one window's hidden states, when asked
};

// Each planned sequence's tau: the request's, or under AUTO the schedule's at the sequence's
// own content-token count.
std::vector<float> SequenceTemperatures(const ChunkPlan& plan, const EmbedParams& params,
                                        const model_store::TempScaleSchedule& schedule);

// The tau of each planned sequence's banded attention layers, whose rows see at most
// `local_keys` keys: the request's, or under AUTO the schedule's at min(length, local_keys).
// Empty when `local_keys` is 0 (every layer global).
std::vector<float> LocalSequenceTemperatures(const ChunkPlan& plan, const EmbedParams& params,
                                             const model_store::TempScaleSchedule& schedule,
                                             int64_t local_keys);

// Sizes the per-sequence and per-chunk slots once the plan is known.
void PrepareSlots(EncodedDocument* doc, bool late_chunking, size_t dim);

// Late chunking: adds window `window`'s token states (row-major [tokens x dim], special
// tokens included, `prefix_tokens` of them first) to the sums of the chunks whose tokens
// take their states from this window.
void AddLateChunkWindow(EncodedDocument* doc, size_t window, const std::vector<float>& states,
                        size_t dim, size_t prefix_tokens);

// What the model does to a vector it pooled, for one pooled here from token states (late
// chunking): its Dense modules (model_store::Encoder::ProjectPooled), in place.
using PooledProjection = std::function<void(std::vector<float>*)>;

// The document's result once every sequence has arrived. `dim` is the model's hidden size;
// `project` (may be empty: none) applies to late chunks' mean states.
DocumentResult MergeDocument(const EncodedDocument& doc, const EmbedParams& params, size_t dim,
                             const PooledProjection& project = nullptr);

}  // namespace embedding::server
