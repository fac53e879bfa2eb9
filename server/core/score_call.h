// A Rerank or Classify call as the core takes it from every door, and what it answers: the
// second stage of retrieval over a cross-encoder or classifier. Long documents are scored
// chunk by chunk (the query in every chunk) and the chunk scores merged. Plain structs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/span.h"
#include "server/core/embed_call.h"
#include "server/core/embed_params.h"
#include "server/core/embed_result.h"

namespace embedding::server {

struct ServedModel;

// Options shared by Rerank and Classify, in the core's words. The strategy is one of REJECT,
// TRUNCATE (the side in truncation_side), CHUNK_MAX (Rerank's default: a document is as
// relevant as its best passage), CHUNK_MEAN or CHUNK_WEIGHTED_MEAN; merges run on the logits,
// before the score function.
struct ScoreOptions {
  std::string model;  // "" for the default model
  std::optional<float> temperature;
  TemperatureMode temperature_mode = TemperatureMode::kFixed;
  std::optional<Strategy> strategy;
  TruncationSide truncation_side = TruncationSide::kKeepStart;
  std::optional<uint32_t> chunk_tokens;  // document tokens per chunk, beside the query
  std::optional<uint32_t> chunk_overlap_tokens;
  bool raw_scores = false;     // the logits, not the model's score function of them
  bool return_chunks = false;  // each chunk's score and span
  // What a prompted reranker is asked (Qwen3-Reranker's "<Instruct>"); empty: its default.
  // Refused for a model whose prompt takes none.
  std::string instruction;
};

struct RerankCall {
  ScoreOptions options;
  std::string query;
  TextInputs documents;
  std::optional<uint32_t> top_n;  // unset: every document
  absl::Time deadline = absl::InfiniteFuture();
};

// Classify: each input alone, or as a pair with its `pair_firsts` entry before it (TEI's
// /predict takes [[a, b], ...]); empty: single texts.
struct ClassifyCall {
  ScoreOptions options;
  TextInputs inputs;
  std::vector<std::string> pair_firsts;
  absl::Time deadline = absl::InfiniteFuture();
};

struct ChunkScore {
  Span tokens, chars, bytes;  // of the document, as Embed's chunks
  std::vector<float> scores;  // one per label
  float temperature = 1.0f;
};

struct ScoredInput {
  uint32_t index = 0;         // in the call's documents or inputs
  std::vector<float> scores;  // one per label (a reranker's one relevance score)
  uint32_t token_count = 0;   // of the document alone
  uint32_t chunk_count = 0;
  bool truncated = false;
  std::string length_bucket;
  std::vector<ChunkScore> chunks;  // when asked
};

struct ScoreAnswer {
  std::shared_ptr<const ServedModel> model;
  const char* method = "";  // "Rerank" or "Classify"
  EmbedParams params;
  bool raw_scores = false;
  // Rerank: by descending score, ties by index, the first top_n. Classify: in input order.
  std::vector<ScoredInput> results;
  EmbedResult usage;  // the forward passes' counts and timings (its documents are moved out)
};

}  // namespace embedding::server
