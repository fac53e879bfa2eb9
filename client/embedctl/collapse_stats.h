// Collapse statistics over a set of unit vectors: the quantities the server's collapse metrics
// export, computed client-side for offline reports.
#pragma once

#include <cstddef>
#include <vector>

namespace embedding::client {

// Mean pairwise cosine of unit vectors: (||sum||^2 - n) / (n (n - 1)); 0 below two vectors.
double MeanPairwiseCosine(const std::vector<std::vector<float>>& unit_vectors);

}  // namespace embedding::client
