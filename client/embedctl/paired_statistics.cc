#include "client/embedctl/paired_statistics.h"

#include <cmath>

namespace embedding::client {

PairedGain ComparePaired(const std::vector<double>& candidate, const std::vector<double>& baseline,
                         const std::vector<size_t>& which) {
  PairedGain gain;
  gain.queries = which.size();
  if (which.empty()) return gain;
  for (size_t i : which) gain.mean += candidate[i] - baseline[i];
  gain.mean /= static_cast<double>(which.size());
  if (which.size() < 2) return gain;
  double squares = 0;
  for (size_t i : which) {
    const double d = candidate[i] - baseline[i] - gain.mean;
    squares += d * d;
  }
  gain.standard_error = std::sqrt(squares / static_cast<double>(which.size() - 1) /
                                  static_cast<double>(which.size()));
  return gain;
}

double MeanOver(const std::vector<double>& scores, const std::vector<size_t>& which) {
  if (which.empty()) return 0;
  double sum = 0;
  for (size_t i : which) sum += scores[i];
  return sum / static_cast<double>(which.size());
}

}  // namespace embedding::client
