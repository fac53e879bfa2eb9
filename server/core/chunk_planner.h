// Splits a tokenised document into the sequences the model will see, per strategy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/span.h"
#include "server/core/embed_params.h"

namespace embedding::server {

struct ChunkPlan {
  // What the caller returns a vector for.
  std::vector<Span> chunks;
  // What goes through the model: equal to `chunks`, except for late chunking, where these
  // are the (overlapping) windows and chunks are pooled from their token states.
  std::vector<Span> sequences;
  // Late chunking: for each content token, the window whose states it takes (the window in
  // which it sits most centrally, so every token gets the most context on both sides).
  std::vector<uint32_t> token_window;
  bool truncated = false;
};

// A refusal of a text past the window carries this payload, so that each door adds how its own
// callers ask for long text: gRPC's strategy enum, the OpenAI route's strategy names, TEI's
// `truncate` (the core knows none of these spellings).
inline constexpr char kPastWindowPayload[] = "embedding.server/past-window";

// Plans a document of `tokens` content tokens for a model whose window holds `window`
// content tokens. `params.chunk_tokens` and `overlap_tokens` must already be validated
// (chunk <= window, overlap < chunk). An empty document is one empty chunk ([CLS] [SEP]).
// INVALID_ARGUMENT naming `field`, with kPastWindowPayload, when REJECT meets a document
// longer than the window.
absl::StatusOr<ChunkPlan> PlanChunks(uint32_t tokens, uint32_t window, const EmbedParams& params,
                                     const std::string& field);

// Fixed-size ranges of `size` tokens advancing by size - overlap, the last one ending at
// `tokens` (it may be shorter). One empty range for an empty document.
std::vector<Span> SplitRanges(uint32_t tokens, uint32_t size, uint32_t overlap);

}  // namespace embedding::server
