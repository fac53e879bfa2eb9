// --dtype=auto: the fastest compute dtype whose pooled vectors stay within its accuracy guard
// of fp32 on this CPU, measured at load time on the model being loaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/encoder.h"

namespace embedding::model_store {

// Least pooled cosine to fp32 a dtype must keep: 0.999 for bf16, 0.99 for int8 (1 for fp32).
double AccuracyGuard(ComputeDType dtype);

// Worst pooled cosine between `candidate` and `reference` (the same model) over a fixed probe
// batch of pseudo-random token ids (7, 100 and a full window of up to 512 tokens) at tau 1 and
// at tau 0.5, pooled with `pooling`. INTERNAL if either encoder fails.
absl::StatusOr<double> GuardCosine(const Encoder& reference, const Encoder& candidate,
                                   PoolingMode pooling);

// What auto measured for one dtype.
struct DTypeTrial {
  ComputeDType dtype = ComputeDType::kFloat32;
  // Why the dtype cannot run here (no native bf16, no oneDNN); empty when it ran.
  std::string unavailable;
  double min_cosine = 0;
  // One full window (up to 512 tokens) per forward, median of three after a warm-up.
  double tokens_per_second = 0;
  bool passed = false;  // ran and min_cosine >= AccuracyGuard(dtype)
};

struct DTypeChoice {
  std::unique_ptr<Encoder> encoder;  // built with the chosen dtype
  std::vector<DTypeTrial> trials;    // fp32, bf16, int8 in that order
};

// Builds fp32, bf16 and int8 encoders one after another (at most three alive at once), guards
// each against fp32 and keeps the fastest that passes; fp32 always passes. `options.dtype` is
// ignored. Errors are fp32's (the others only count as unavailable).
absl::StatusOr<DTypeChoice> ChooseComputeDType(const EncoderConfig& config,
                                               const ArchitectureSpec& spec,
                                               const Checkpoint& checkpoint,
                                               const EncoderOptions& options, PoolingMode pooling);

}  // namespace embedding::model_store
