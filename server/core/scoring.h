// From a cross-encoder's or classifier's merged logits to what Rerank and Classify answer:
// the model's score function (sigmoid, softmax, or none), each chunk's scores, and the ranking.
#pragma once

#include <optional>
#include <vector>

#include "model_store/spec/classifier_head.h"
#include "server/core/embed_result.h"
#include "server/core/score_call.h"

namespace embedding::server {

// `logits` through `function` (sigmoid per label, softmax over the labels, identity), or the
// logits unchanged when `raw`. Softmax is computed stably (max subtracted, in double).
std::vector<float> ScoresOf(const std::vector<float>& logits,
                            model_store::ScoreFunction function, bool raw);

// One ScoredInput per document of `result`, in order, its vectors (the merged logits) scored;
// with each chunk's scores and spans when `chunks`. Moves the vectors out of `result`.
std::vector<ScoredInput> ScoreDocuments(EmbedResult* result, model_store::ScoreFunction function,
                                        bool raw, bool chunks);

// Orders `results` by descending first score, ties by ascending index, and keeps the first
// `top_n` (all when unset).
void RankResults(std::vector<ScoredInput>* results, std::optional<uint32_t> top_n);

}  // namespace embedding::server
