// bge-m3's scores on what Embed returns, so a caller can rank without writing the formulas
// (FlagEmbedding's BGEM3 model defines them):
//   lexical: sum over the token ids both maps hold of w_q(t) * w_d(t);
//   ColBERT: mean over the query's vectors of the best inner product with a document vector;
//   hybrid:  weighted mean of dense, lexical and ColBERT over the outputs both carry.
#pragma once

#include <vector>

#include "embedding/v1/embedding.pb.h"

namespace embedding::client {

// The vectors of `mv` as floats, whatever its encoding (float32, float16, int8 with scales).
// Empty when the message is inconsistent (a data size that does not match count x dimensions).
std::vector<std::vector<float>> MultiVectorRows(const v1::MultiVector& mv);

double LexicalScore(const v1::SparseEmbedding& query, const v1::SparseEmbedding& document);
// 0 when either side has no vectors.
double ColbertScore(const v1::MultiVector& query, const v1::MultiVector& document);
double DenseScore(const v1::DocumentEmbedding& query, const v1::DocumentEmbedding& document);

// FlagEmbedding's defaults.
struct HybridWeights {
  double dense = 0.4;
  double sparse = 0.2;
  double multi_vector = 0.4;
};
// Sum of weight x score over the outputs both documents carry, divided by those weights' sum;
// 0 when they share none.
double HybridScore(const v1::DocumentEmbedding& query, const v1::DocumentEmbedding& document,
                   const HybridWeights& weights = {});

}  // namespace embedding::client
