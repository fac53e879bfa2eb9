#include "model_store/demo/retrieval/ppmi_vectors.h"

#include <algorithm>
#include <cmath>

#include "model_store/demo/retrieval/symmetric_eigen.h"

namespace embedding::model_store {
namespace {

// Every ordered pair (a, b) of distinct tokens at most `window` apart, as a*V+b, sorted: a
// count is then a run of equal keys, and the rows come out in CSR order.
std::vector<uint64_t> SortedPairs(const std::vector<std::vector<int32_t>>& documents,
                                  int vocab_size, int window) {
  std::vector<uint64_t> keys;
  size_t expected = 0;
  for (const auto& doc : documents) expected += doc.size() * 2 * window;
  keys.reserve(expected);
  const auto v = static_cast<uint64_t>(vocab_size);
  for (const auto& doc : documents) {
    for (size_t i = 0; i < doc.size(); ++i) {
      const size_t end = std::min(doc.size(), i + 1 + static_cast<size_t>(window));
      for (size_t j = i + 1; j < end; ++j) {
        if (doc[i] == doc[j]) continue;
        keys.push_back(doc[i] * v + doc[j]);
        keys.push_back(doc[j] * v + doc[i]);
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

WordVectors BuildPpmiVectors(const std::vector<std::vector<int32_t>>& documents, int vocab_size,
                             const PpmiOptions& options) {
  WordVectors out;
  out.dims = options.dims;
  out.counts.assign(vocab_size, 0);
  for (const auto& doc : documents)
    for (int32_t id : doc) ++out.counts[id];

  const std::vector<uint64_t> keys = SortedPairs(documents, vocab_size, options.window);
  // Pair counts, row sums and the smoothed context normaliser Z = sum_b r_b^alpha.
  std::vector<uint64_t> pair_key;
  std::vector<double> pair_count;
  std::vector<double> row_sum(vocab_size, 0.0);
  for (size_t i = 0; i < keys.size();) {
    size_t j = i;
    while (j < keys.size() && keys[j] == keys[i]) ++j;
    pair_key.push_back(keys[i]);
    pair_count.push_back(static_cast<double>(j - i));
    row_sum[keys[i] / vocab_size] += static_cast<double>(j - i);
    i = j;
  }
  double total = 0, z = 0;
  std::vector<double> smoothed(vocab_size);
  for (int a = 0; a < vocab_size; ++a) {
    total += row_sum[a];
    smoothed[a] = std::pow(row_sum[a], options.smoothing);
    z += smoothed[a];
  }
  // PPMI(a, b) = max(0, log(n_ab N_alpha / (N P_alpha(a) P_alpha(b)))), smoothed on both sides
  // so the matrix stays symmetric.
  SparseSymmetric m;
  m.n = vocab_size;
  m.row_start.assign(vocab_size + 1, 0);
  for (size_t e = 0; e < pair_key.size(); ++e) {
    const auto a = static_cast<int32_t>(pair_key[e] / vocab_size);
    const auto b = static_cast<int32_t>(pair_key[e] % vocab_size);
    const double pmi = std::log(pair_count[e] * z * z / (total * smoothed[a] * smoothed[b]));
    if (pmi <= 0) continue;
    m.column.push_back(b);
    m.value.push_back(pmi);
    ++m.row_start[a + 1];
  }
  for (int a = 0; a < vocab_size; ++a) m.row_start[a + 1] += m.row_start[a];

  const EigenPairs eig = LeadingEigenPairs(m, options.dims, options.oversampling,
                                           options.power_iterations, options.seed);
  // Symmetric weighting U sqrt(lambda), as the PPMI-SVD literature recommends.
  out.values.assign(static_cast<size_t>(vocab_size) * options.dims, 0.0);
  for (int64_t a = 0; a < vocab_size; ++a)
    for (int c = 0; c < options.dims; ++c)
      out.values[a * options.dims + c] =
          eig.vectors[a * options.dims + c] * std::sqrt(std::max(eig.values[c], 0.0));
  return out;
}

}  // namespace embedding::model_store
