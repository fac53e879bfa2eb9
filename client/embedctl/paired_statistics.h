// Paired comparisons of two configurations scored on the same queries: the mean per-query
// difference and its standard error, so that a τ's gain over τ = 1 is judged against the noise
// of the queries it was measured on (the queries' own spread cancels in the pairing).
#pragma once

#include <cstddef>
#include <vector>

namespace embedding::client {

struct PairedGain {
  size_t queries = 0;
  double mean = 0;            // mean of candidate[i] - baseline[i]
  double standard_error = 0;  // sample standard deviation of the differences / sqrt(queries)
  // The gain exceeds `multiple` standard errors (and zero): unlikely to be noise.
  bool Significant(double multiple) const {
    return queries > 1 && mean > 0 && mean > multiple * standard_error;
  }
};

// Over the queries in `which` (indices into both score vectors).
PairedGain ComparePaired(const std::vector<double>& candidate, const std::vector<double>& baseline,
                         const std::vector<size_t>& which);

// The mean of `scores` over the queries in `which`; 0 when there are none.
double MeanOver(const std::vector<double>& scores, const std::vector<size_t>& which);

}  // namespace embedding::client
