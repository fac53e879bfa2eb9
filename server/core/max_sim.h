// Late interaction's score (ColBERT's MaxSim): each query vector's best dot product with any of
// a document's vectors, summed over the query's vectors. What Rerank answers for a
// late-interaction model: the query encoded once, each document's every token (in every
// chunk, each token once) scored against it.
#pragma once

#include <vector>

#include "server/core/embed_result.h"
#include "server/core/score_call.h"

namespace embedding::server {

// Sum over query rows q of max over document rows d of q . d, in double; 0 for a document
// without vectors. Both in the same width.
double MaxSim(const MultiVectorResult& query, const MultiVectorResult& document);

// `result`'s first document is the query, the rest the documents: one ScoredInput per document
// (index from 0), its score their MaxSim, and each chunk's own when `chunks`. Moves the
// vectors out of `result`.
std::vector<ScoredInput> ScoreByMaxSim(EmbedResult* result, bool chunks);

}  // namespace embedding::server
