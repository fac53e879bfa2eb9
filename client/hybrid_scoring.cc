#include "client/hybrid_scoring.h"

#include <fp16.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace embedding::client {

std::vector<std::vector<float>> MultiVectorRows(const v1::MultiVector& mv) {
  const size_t count = mv.count(), dim = mv.dimensions();
  std::vector<std::vector<float>> rows(count, std::vector<float>(dim));
  const std::string& data = mv.data();
  switch (mv.encoding()) {
    case v1::VECTOR_ENCODING_FLOAT16:
      if (data.size() != 2 * count * dim) return {};
      for (size_t i = 0; i < count * dim; ++i) {
        const auto lo = static_cast<uint8_t>(data[2 * i]),
                   hi = static_cast<uint8_t>(data[2 * i + 1]);
        rows[i / dim][i % dim] = fp16_ieee_to_fp32_value(static_cast<uint16_t>(lo | hi << 8));
      }
      return rows;
    case v1::VECTOR_ENCODING_INT8:
      if (data.size() != count * dim || static_cast<size_t>(mv.scales_size()) != count) return {};
      for (size_t i = 0; i < count * dim; ++i)
        rows[i / dim][i % dim] =
            static_cast<int8_t>(data[i]) * mv.scales(static_cast<int>(i / dim));
      return rows;
    default:
      if (static_cast<size_t>(mv.values_size()) != count * dim) return {};
      for (size_t i = 0; i < count * dim; ++i)
        rows[i / dim][i % dim] = mv.values(static_cast<int>(i));
      return rows;
  }
}

double LexicalScore(const v1::SparseEmbedding& query, const v1::SparseEmbedding& document) {
  std::unordered_map<uint32_t, float> weights;
  for (int i = 0; i < document.token_ids_size() && i < document.weights_size(); ++i)
    weights[document.token_ids(i)] = document.weights(i);
  double score = 0;
  for (int i = 0; i < query.token_ids_size() && i < query.weights_size(); ++i) {
    auto it = weights.find(query.token_ids(i));
    if (it != weights.end()) score += static_cast<double>(query.weights(i)) * it->second;
  }
  return score;
}

double ColbertScore(const v1::MultiVector& query, const v1::MultiVector& document) {
  const auto q = MultiVectorRows(query), d = MultiVectorRows(document);
  if (q.empty() || d.empty()) return 0;
  double total = 0;
  for (const auto& qv : q) {
    double best = -std::numeric_limits<double>::infinity();
    for (const auto& dv : d) {
      double dot = 0;
      for (size_t k = 0; k < std::min(qv.size(), dv.size()); ++k) dot += double{qv[k]} * dv[k];
      best = std::max(best, dot);
    }
    total += best;
  }
  return total / static_cast<double>(q.size());
}

double DenseScore(const v1::DocumentEmbedding& query, const v1::DocumentEmbedding& document) {
  double dot = 0;
  for (int k = 0; k < std::min(query.vector_size(), document.vector_size()); ++k)
    dot += double{query.vector(k)} * document.vector(k);
  return dot;
}

double HybridScore(const v1::DocumentEmbedding& query, const v1::DocumentEmbedding& document,
                   const HybridWeights& weights) {
  double sum = 0, total = 0;
  if (query.vector_size() > 0 && document.vector_size() > 0) {
    sum += weights.dense * DenseScore(query, document);
    total += weights.dense;
  }
  if (query.has_sparse() && document.has_sparse()) {
    sum += weights.sparse * LexicalScore(query.sparse(), document.sparse());
    total += weights.sparse;
  }
  if (query.has_multi_vector() && document.has_multi_vector()) {
    sum += weights.multi_vector * ColbertScore(query.multi_vector(), document.multi_vector());
    total += weights.multi_vector;
  }
  return total > 0 ? sum / total : 0;
}

}  // namespace embedding::client
