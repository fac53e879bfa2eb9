#include "model_store/dtype/batch_invariance.h"

#include <algorithm>
#include <cmath>

#include "common/status_macros.h"

namespace embedding::model_store {
namespace {

// Four sequences of different lengths keep the measurement to a few short forward passes:
// what varies between alone and batched is the row count each kernel sees.
constexpr size_t kSequences = 4;

EncodeBatch Batch(std::vector<std::vector<int32_t>> sequences, std::vector<float> temperatures,
                  PoolingMode pooling) {
  EncodeBatch batch;
  batch.sequences = std::move(sequences);
  batch.temperatures = std::move(temperatures);
  batch.pooling = pooling;
  batch.normalize = true;
  return batch;
}

}  // namespace

absl::StatusOr<double> MeasureBatchInvariance(const EncodeFn& encode,
                                              const std::vector<std::vector<int32_t>>& probe,
                                              PoolingMode pooling) {
  const size_t count = std::min(kSequences, probe.size());
  std::vector<std::vector<int32_t>> sequences(probe.begin(), probe.begin() + count);
  std::vector<float> temperatures(count);
  for (size_t i = 0; i < count; ++i) temperatures[i] = i % 2 == 0 ? 1.0f : 0.7f;
  ASSIGN_OR_RETURN(EncodeResult together, encode(Batch(sequences, temperatures, pooling)));
  double worst = 0;
  for (size_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(EncodeResult alone, encode(Batch({sequences[i]}, {temperatures[i]}, pooling)));
    const std::vector<float>& a = alone.pooled[0];
    const std::vector<float>& b = together.pooled[i];
    for (size_t d = 0; d < a.size() && d < b.size(); ++d)
      worst = std::max(worst, std::fabs(static_cast<double>(a[d]) - b[d]));
  }
  return worst;
}

}  // namespace embedding::model_store
