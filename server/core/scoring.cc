#include "server/core/scoring.h"

#include <algorithm>
#include <cmath>

namespace embedding::server {

std::vector<float> ScoresOf(const std::vector<float>& logits,
                            model_store::ScoreFunction function, bool raw) {
  if (raw || function == model_store::ScoreFunction::kIdentity || logits.empty()) return logits;
  std::vector<float> scores(logits.size());
  if (function == model_store::ScoreFunction::kSigmoid) {
    for (size_t i = 0; i < logits.size(); ++i)
      scores[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(logits[i]))));
    return scores;
  }
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float logit : logits) sum += std::exp(logit - top);
  for (size_t i = 0; i < logits.size(); ++i)
    scores[i] = static_cast<float>(std::exp(logits[i] - top) / sum);
  return scores;
}

std::vector<ScoredInput> ScoreDocuments(EmbedResult* result, model_store::ScoreFunction function,
                                        bool raw, bool chunks) {
  std::vector<ScoredInput> scored;
  scored.reserve(result->documents.size());
  for (size_t i = 0; i < result->documents.size(); ++i) {
    DocumentResult& doc = result->documents[i];
    ScoredInput input;
    input.index = static_cast<uint32_t>(i);
    input.scores = ScoresOf(doc.vector, function, raw);
    input.token_count = doc.token_count;
    input.chunk_count = doc.chunk_count;
    input.truncated = doc.truncated;
    input.length_bucket = doc.length_bucket;
    if (chunks) {
      for (const ChunkResult& chunk : doc.chunks) {
        input.chunks.push_back({chunk.tokens, chunk.chars, chunk.bytes,
                                ScoresOf(chunk.vector, function, raw), chunk.temperature});
      }
    }
    doc.vector.clear();
    doc.chunks.clear();
    scored.push_back(std::move(input));
  }
  return scored;
}

void RankResults(std::vector<ScoredInput>* results, std::optional<uint32_t> top_n) {
  std::stable_sort(results->begin(), results->end(),
                   [](const ScoredInput& a, const ScoredInput& b) {
                     const float sa = a.scores.empty() ? 0 : a.scores[0];
                     const float sb = b.scores.empty() ? 0 : b.scores[0];
                     return sa > sb;  // stable: equal scores keep ascending index
                   });
  if (top_n.has_value() && *top_n < results->size()) results->resize(*top_n);
}

}  // namespace embedding::server
