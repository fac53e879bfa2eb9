#include "model_store/dtype/dtype_choice.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "model_store/dtype/guard_probe.h"

namespace embedding::model_store {
namespace {

// Capped at 512 tokens so that an 8,192-token model does not spend seconds of its start-up on
// the guard.
int64_t ProbeWindow(const Encoder& encoder) {
  return std::min<int64_t>(encoder.max_sequence_length(), 512);
}

absl::StatusOr<double> WindowTokensPerSecond(const Encoder& encoder,
                                             const std::vector<int32_t>& window) {
  EncodeBatch batch;
  batch.sequences.push_back(window);
  batch.temperatures.push_back(1.0f);
  std::vector<double> seconds;
  for (int run = 0; run < 4; ++run) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(encoder.Encode(batch).status());
    if (run > 0) {  // the first run warms oneDNN's kernel caches
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::sort(seconds.begin(), seconds.end());
  return static_cast<double>(window.size()) / seconds[seconds.size() / 2];
}

}  // namespace

double AccuracyGuard(ComputeDType dtype) {
  switch (dtype) {
    case ComputeDType::kBFloat16:
    case ComputeDType::kFloat16:
      return 0.999;
    case ComputeDType::kInt8:
      return 0.99;
    default:
      return 1.0;
  }
}

absl::StatusOr<GuardReference> GuardReference::Encode(const Encoder& reference,
                                                      std::vector<std::vector<int32_t>> probe,
                                                      PoolingMode pooling) {
  GuardReference guard;
  for (float tau : {1.0f, 0.5f}) {
    EncodeBatch batch;
    batch.sequences = probe;
    batch.temperatures.assign(probe.size(), tau);
    batch.pooling = pooling;
    batch.normalize = true;
    ASSIGN_OR_RETURN(EncodeResult want, reference.Encode(batch));
    guard.batches_.push_back(std::move(batch));
    guard.want_.push_back(std::move(want));
  }
  return guard;
}

absl::StatusOr<double> GuardReference::WorstCosine(const Encoder& candidate) const {
  double worst = 1.0;
  for (size_t i = 0; i < batches_.size(); ++i) {
    ASSIGN_OR_RETURN(EncodeResult got, candidate.Encode(batches_[i]));
    const EncodeResult& want = want_[i];
    for (size_t b = 0; b < want.pooled.size(); ++b) {
      double dot = 0;  // both are unit vectors
      for (size_t d = 0; d < want.pooled[b].size(); ++d)
        dot += static_cast<double>(want.pooled[b][d]) * got.pooled[b][d];
      worst = std::min(worst, dot);
    }
  }
  return worst;
}

absl::StatusOr<DTypeChoice> ChooseComputeDType(const EncoderConfig& config,
                                               const ArchitectureSpec& spec,
                                               const Checkpoint& checkpoint,
                                               const EncoderOptions& options, PoolingMode pooling,
                                               const Tokenizer& tokenizer,
                                               const ForwardRunner& run_forward) {
  EncoderOptions fp32_options = options;
  fp32_options.dtype = ComputeDType::kFloat32;
  ASSIGN_OR_RETURN(std::unique_ptr<Encoder> reference,
                   Encoder::Create(config, spec, checkpoint, fp32_options));
  ASSIGN_OR_RETURN(auto probe, GuardProbe(tokenizer, ProbeWindow(*reference)));
  const std::vector<int32_t> window = probe.back();
  ASSIGN_OR_RETURN(GuardReference guard, OnForwardThread(run_forward, [&] {
                     return GuardReference::Encode(*reference, std::move(probe), pooling);
                   }));
  DTypeChoice choice;
  DTypeTrial fp32{ComputeDType::kFloat32, "", 1.0, 0, true};
  ASSIGN_OR_RETURN(fp32.tokens_per_second, OnForwardThread(run_forward, [&] {
                     return WindowTokensPerSecond(*reference, window);
                   }));
  choice.trials.push_back(fp32);
  size_t best = 0;
  std::unique_ptr<Encoder> best_candidate;  // null while fp32 is the best
  for (ComputeDType dtype : {ComputeDType::kBFloat16, ComputeDType::kInt8}) {
    EncoderOptions candidate_options = options;
    candidate_options.dtype = dtype;
    DTypeTrial trial{dtype};
    auto candidate = Encoder::Create(config, spec, checkpoint, candidate_options);
    if (!candidate.ok()) {
      trial.unavailable = std::string(candidate.status().message());
      choice.trials.push_back(trial);
      continue;
    }
    ASSIGN_OR_RETURN(trial.min_cosine,
                     OnForwardThread(run_forward, [&] { return guard.WorstCosine(**candidate); }));
    trial.passed = trial.min_cosine >= AccuracyGuard(dtype);
    if (trial.passed) {
      ASSIGN_OR_RETURN(trial.tokens_per_second, OnForwardThread(run_forward, [&] {
                         return WindowTokensPerSecond(**candidate, window);
                       }));
    }
    choice.trials.push_back(trial);
    if (trial.passed && trial.tokens_per_second > choice.trials[best].tokens_per_second) {
      best = choice.trials.size() - 1;
      best_candidate = std::move(*candidate);
    }
  }
  choice.encoder = best_candidate ? std::move(best_candidate) : std::move(reference);
  return choice;
}

}  // namespace embedding::model_store
