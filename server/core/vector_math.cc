#include "server/core/vector_math.h"

#include <algorithm>
#include <cmath>

namespace embedding::server {

void L2Normalize(std::vector<float>* v) {
  double sum = 0;
  for (float x : *v) sum += static_cast<double>(x) * x;
  if (sum <= 0) return;
  const double inv = 1.0 / std::sqrt(sum);
  for (float& x : *v) x = static_cast<float>(x * inv);
}

std::vector<float> MergeChunkVectors(MergeRule rule, const std::vector<std::vector<float>>& chunks,
                                     const std::vector<uint32_t>& weights) {
  if (chunks.size() == 1) return chunks[0];
  const size_t dim = chunks[0].size();
  if (rule == MergeRule::kMax) {
    std::vector<float> out = chunks[0];
    for (const auto& c : chunks)
      for (size_t d = 0; d < dim; ++d) out[d] = std::max(out[d], c[d]);
    return out;
  }
  std::vector<double> sum(dim, 0.0);
  double total = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const double w = rule == MergeRule::kTokenWeightedMean ? weights[i] : 1.0;
    total += w;
    for (size_t d = 0; d < dim; ++d) sum[d] += w * chunks[i][d];
  }
  if (total <= 0) total = 1;  // only empty chunks: weights are all zero
  std::vector<float> out(dim);
  for (size_t d = 0; d < dim; ++d) out[d] = static_cast<float>(sum[d] / total);
  return out;
}

std::vector<float> TruncateDimensions(const std::vector<float>& v, uint32_t dimensions,
                                      bool normalize) {
  if (dimensions == 0 || dimensions >= v.size()) return v;
  std::vector<float> out(v.begin(), v.begin() + dimensions);
  if (normalize) L2Normalize(&out);
  return out;
}

}  // namespace embedding::server
