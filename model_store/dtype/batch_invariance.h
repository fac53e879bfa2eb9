// Same text, same vector, measured on the device and dtype a model was loaded in: the CPU's
// kernels are bit-identical alone and batched by design, while a GPU's matrix libraries pick
// kernels by shape. What a model reports as its bound comes from this measurement.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/encoder/encoder.h"

namespace embedding::model_store {

// The first sequences of GuardProbe (5 to 98 content tokens), each encoded alone and then all
// in one batch, every other one at tau 0.7 (tau varies per sequence inside a batch): the worst
// |alone - batched| over their pooled, L2-normalised vectors' components. 0 when bit-identical.
// `encode` is a model's Encoder::Encode.
using EncodeFn = std::function<absl::StatusOr<EncodeResult>(const EncodeBatch&)>;
absl::StatusOr<double> MeasureBatchInvariance(const EncodeFn& encode,
                                              const std::vector<std::vector<int32_t>>& probe,
                                              PoolingMode pooling);

}  // namespace embedding::model_store
