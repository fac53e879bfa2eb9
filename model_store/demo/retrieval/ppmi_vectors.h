// Word vectors from co-occurrence counts: positive pointwise mutual information (PPMI) over a
// token stream, reduced to `dims` by a randomized eigendecomposition (Levy & Goldberg 2014,
// Halko et al. 2011). Plain loops in a fixed order: the same input gives the same bits on every
// machine and thread count, which a BLAS would not promise.
#pragma once

#include <cstdint>
#include <vector>

namespace embedding::model_store {

struct PpmiOptions {
  int window = 5;           // tokens on each side that count as context
  double smoothing = 0.75;  // context-distribution smoothing exponent (0.75 as in word2vec)
  int dims = 128;
  int oversampling = 16;  // extra random directions for the subspace iteration
  int power_iterations = 2;
  uint64_t seed = 20241031;
};

struct WordVectors {
  int dims = 0;
  std::vector<double> values;   // vocab_size x dims, row-major; rows of unseen tokens are 0
  std::vector<int64_t> counts;  // occurrences of each token in the corpus
};

// `documents` hold token ids in [0, vocab_size); windows never cross a document's end.
WordVectors BuildPpmiVectors(const std::vector<std::vector<int32_t>>& documents, int vocab_size,
                             const PpmiOptions& options);

}  // namespace embedding::model_store
