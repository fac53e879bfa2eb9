#include "client/embedctl/collapse_stats.h"

namespace embedding::client {

double MeanPairwiseCosine(const std::vector<std::vector<float>>& unit_vectors) {
  const size_t n = unit_vectors.size();
  if (n < 2) return 0.0;
  std::vector<double> sum(unit_vectors[0].size(), 0.0);
  for (const auto& v : unit_vectors)
    for (size_t d = 0; d < v.size(); ++d) sum[d] += v[d];
  double norm2 = 0;
  for (double s : sum) norm2 += s * s;
  return (norm2 - static_cast<double>(n)) / (static_cast<double>(n) * (n - 1));
}

}  // namespace embedding::client
