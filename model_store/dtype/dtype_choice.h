// --dtype=auto: the fastest compute dtype whose pooled vectors stay within its accuracy guard
// of fp32 on this CPU, measured at load time on the model being loaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/encoder/encoder.h"
#include "model_store/text/tokenizer.h"

namespace embedding::model_store {

// Least pooled cosine to fp32 a dtype must keep: 0.999 for bf16, 0.99 for int8 (1 for fp32).
double AccuracyGuard(ComputeDType dtype);

// The fp32 side of a guard, encoded once: `probe` (see guard_probe.h) at tau 1 and at tau 0.5.
class GuardReference {
 public:
  // INTERNAL if the reference fails to encode the probe.
  static absl::StatusOr<GuardReference> Encode(const Encoder& reference,
                                               std::vector<std::vector<int32_t>> probe,
                                               PoolingMode pooling);

  // Worst pooled cosine between `candidate` (the same model) and the reference over the probe.
  absl::StatusOr<double> WorstCosine(const Encoder& candidate) const;

 private:
  std::vector<EncodeBatch> batches_;
  std::vector<EncodeResult> want_;
};

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
  std::string source;                // "measured now", or the cache file (Model::Load)
};

// Builds fp32, bf16 and int8 encoders one after another (at most three alive at once), guards
// each against fp32 on GuardProbe(tokenizer) and keeps the fastest that passes; fp32 always
// passes. `options.dtype` is ignored. Errors are fp32's (the others only count as unavailable).
// The trials' forward passes run through `run_forward`, the encoders are built on the caller.
absl::StatusOr<DTypeChoice> ChooseComputeDType(const EncoderConfig& config,
                                               const ArchitectureSpec& spec,
                                               const Checkpoint& checkpoint,
                                               const EncoderOptions& options, PoolingMode pooling,
                                               const Tokenizer& tokenizer,
                                               const ForwardRunner& run_forward = nullptr);

}  // namespace embedding::model_store
