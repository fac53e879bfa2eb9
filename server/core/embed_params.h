// A validated Embed request's options, in the server's terms: what the request path after
// validation (planning, batching, merging) needs, whichever endpoint the request came from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_store/late_interaction.h"
#include "server/core/strategy.h"

namespace embedding::server {

struct EmbedParams {
  // Set both with SetStrategy. `traits` is what the strategy does, resolved once: the planner,
  // the job and the mergers read them and never look the strategy up again.
  Strategy strategy = Strategy::kChunkMean;
  StrategyTraits traits = TraitsOf(Strategy::kChunkMean);
  void SetStrategy(Strategy s) {
    strategy = s;
    traits = TraitsOf(s);
  }
  // TRUNCATE keeps the last window instead of the first.
  bool keep_end = false;
  // Content tokens per chunk and shared between neighbours; chunk_tokens <= window.
  uint32_t chunk_tokens = 0;
  uint32_t overlap_tokens = 0;
  // REJECT's and TRUNCATE's window in content tokens when below the model's; 0: the model's.
  uint32_t max_tokens = 0;
  bool normalize = true;
  // 0 keeps every dimension.
  uint32_t dimensions = 0;
  float temperature = 1.0f;
  // AUTO: each sequence's tau comes from the model's schedule at its length (`temperature` is
  // then unused).
  bool auto_temperature = false;
  // Prepended to every input before tokenisation.
  std::string prompt;
  // The model's prompt or task that the request's input_type chose; "": none matched.
  std::string input_type_match;
  // The task adapter every sequence runs with (an index into the model's adapters), -1: none.
  int32_t adapter = -1;
  // Which outputs; one forward pass gives all three.
  bool dense = true;
  bool sparse = false;
  bool multi_vector = false;
  VectorEncoding multi_vector_encoding = VectorEncoding::kFloat32;
  // Multi-vectors per document (and per chunk) at most; 0: one per token.
  uint32_t max_vectors = 0;
  // A document's multi-vectors pooled to about 1 / pool_factor of them (token_pooling.h,
  // before max_vectors); 1: none.
  uint32_t pool_factor = 1;
  // Sparse entries per document (and per chunk) at most, the largest weights kept; 0: all.
  uint32_t sparse_top_k = 0;
  // Every token's final hidden state (one window: REJECT or TRUNCATE).
  bool token_states = false;
  // A late-interaction (ColBERT) model's inputs: queries (one window of the model's
  // query_length, expanded) or documents.
  model_store::InputRole role = model_store::InputRole::kDocument;
};

}  // namespace embedding::server
