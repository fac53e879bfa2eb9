// The last step of the request path for one document: its encoded sequences become the
// document vector (and, for CHUNK_ALL and late chunking, chunk vectors with their spans).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_store/tokenizer.h"
#include "server/chunk_planner.h"
#include "server/embed_params.h"
#include "server/embed_result.h"

namespace embedding::server {

// One document after the model: its text, tokens, plan and per-sequence outputs.
struct EncodedDocument {
  std::string text;           // prompt + input
  uint32_t prompt_bytes = 0;  // spans are reported relative to the input, without the prompt
  model_store::TokenizedText tokens;
  ChunkPlan plan;
  std::vector<std::vector<float>> pooled;  // per sequence
  std::vector<std::vector<float>> hidden;  // per sequence, late chunking only
  std::vector<float> hf_ratio;             // per sequence
};

// `dim` is the model's hidden size; `prefix_tokens` the special tokens before the content
// of every sequence (late chunking skips them when pooling token states).
DocumentResult MergeDocument(const EncodedDocument& doc, const EmbedParams& params, size_t dim,
                             size_t prefix_tokens);

}  // namespace embedding::server
