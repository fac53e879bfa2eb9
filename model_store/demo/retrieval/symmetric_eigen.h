// The leading eigenpairs of a large sparse symmetric matrix, by randomized subspace iteration
// (Halko, Martinsson & Tropp 2011, algorithms 4.4 and 5.3) with a Jacobi solver for the small
// projected problem. Deterministic: fixed-order loops, a seeded generator of our own.
#pragma once

#include <cstdint>
#include <vector>

namespace embedding::model_store {

// Compressed sparse rows of an n x n symmetric matrix.
struct SparseSymmetric {
  int64_t n = 0;
  std::vector<int64_t> row_start;  // n + 1 entries
  std::vector<int32_t> column;
  std::vector<double> value;
};

struct EigenPairs {
  std::vector<double> values;   // k, largest first
  std::vector<double> vectors;  // n x k, row-major, orthonormal columns
};

// The `k` algebraically largest eigenpairs, from a subspace of k + oversampling random
// directions refined by `power_iterations` products.
EigenPairs LeadingEigenPairs(const SparseSymmetric& a, int k, int oversampling,
                             int power_iterations, uint64_t seed);

}  // namespace embedding::model_store
