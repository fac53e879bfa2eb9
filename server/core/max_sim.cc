#include "server/core/max_sim.h"

#include <algorithm>
#include <limits>

namespace embedding::server {

double MaxSim(const MultiVectorResult& query, const MultiVectorResult& document) {
  const size_t dim = query.dim;
  if (document.count() == 0 || document.dim != dim) return 0;
  double total = 0;
  for (size_t q = 0; q < query.count(); ++q) {
    const float* qv = query.values.data() + q * dim;
    double best = -std::numeric_limits<double>::infinity();
    for (size_t d = 0; d < document.count(); ++d) {
      const float* dv = document.values.data() + d * dim;
      double dot = 0;
      for (size_t k = 0; k < dim; ++k) dot += static_cast<double>(qv[k]) * dv[k];
      best = std::max(best, dot);
    }
    total += best;
  }
  return total;
}

std::vector<ScoredInput> ScoreByMaxSim(EmbedResult* result, bool chunks) {
  std::vector<ScoredInput> scored;
  if (result->documents.empty()) return scored;
  const MultiVectorResult query = std::move(result->documents[0].multi_vector);
  for (size_t i = 1; i < result->documents.size(); ++i) {
    DocumentResult& doc = result->documents[i];
    ScoredInput input;
    input.index = static_cast<uint32_t>(i - 1);
    input.scores = {static_cast<float>(MaxSim(query, doc.multi_vector))};
    input.token_count = doc.token_count;
    input.chunk_count = doc.chunk_count;
    input.truncated = doc.truncated;
    input.length_bucket = doc.length_bucket;
    if (chunks) {
      for (const ChunkResult& chunk : doc.chunks) {
        input.chunks.push_back({chunk.tokens,
                                chunk.chars,
                                chunk.bytes,
                                {static_cast<float>(MaxSim(query, chunk.multi_vector))},
                                chunk.temperature});
      }
    }
    doc = DocumentResult();
    scored.push_back(std::move(input));
  }
  return scored;
}

}  // namespace embedding::server
