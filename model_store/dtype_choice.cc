#include "model_store/dtype_choice.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace embedding::model_store {
namespace {

// A full window, capped at 512 tokens so that an 8,192-token model does not spend seconds of
// its start-up here.
int64_t ProbeWindow(const Encoder& encoder) {
  return std::min<int64_t>(encoder.max_sequence_length(), 512);
}

std::vector<int32_t> ProbeSequence(int64_t length, int64_t vocab_size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(vocab_size - 1));
  std::vector<int32_t> ids(length);
  for (auto& v : ids) v = id(rng);
  return ids;
}

EncodeBatch ProbeBatch(const Encoder& encoder, float tau, PoolingMode pooling) {
  EncodeBatch batch;
  const int64_t window = ProbeWindow(encoder);
  uint32_t seed = 1;
  for (int64_t length : {std::min<int64_t>(7, window), std::min<int64_t>(100, window), window}) {
    batch.sequences.push_back(ProbeSequence(length, encoder.config().vocab_size, seed++));
    batch.temperatures.push_back(tau);
  }
  batch.pooling = pooling;
  batch.normalize = true;
  return batch;
}

absl::StatusOr<double> WindowTokensPerSecond(const Encoder& encoder) {
  EncodeBatch batch;
  batch.sequences.push_back(ProbeSequence(ProbeWindow(encoder), encoder.config().vocab_size, 99));
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
  return static_cast<double>(batch.sequences[0].size()) / seconds[seconds.size() / 2];
}

}  // namespace

double AccuracyGuard(ComputeDType dtype) {
  switch (dtype) {
    case ComputeDType::kBFloat16:
      return 0.999;
    case ComputeDType::kInt8:
      return 0.99;
    default:
      return 1.0;
  }
}

absl::StatusOr<double> GuardCosine(const Encoder& reference, const Encoder& candidate,
                                   PoolingMode pooling) {
  double worst = 1.0;
  for (float tau : {1.0f, 0.5f}) {
    const EncodeBatch batch = ProbeBatch(reference, tau, pooling);
    ASSIGN_OR_RETURN(EncodeResult want, reference.Encode(batch));
    ASSIGN_OR_RETURN(EncodeResult got, candidate.Encode(batch));
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
                                               const EncoderOptions& options,
                                               PoolingMode pooling) {
  EncoderOptions fp32_options = options;
  fp32_options.dtype = ComputeDType::kFloat32;
  ASSIGN_OR_RETURN(std::unique_ptr<Encoder> reference,
                   Encoder::Create(config, spec, checkpoint, fp32_options));
  DTypeChoice choice;
  DTypeTrial fp32{ComputeDType::kFloat32, "", 1.0, 0, true};
  ASSIGN_OR_RETURN(fp32.tokens_per_second, WindowTokensPerSecond(*reference));
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
    ASSIGN_OR_RETURN(trial.min_cosine, GuardCosine(*reference, **candidate, pooling));
    trial.passed = trial.min_cosine >= AccuracyGuard(dtype);
    if (trial.passed) {
      ASSIGN_OR_RETURN(trial.tokens_per_second, WindowTokensPerSecond(**candidate));
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
