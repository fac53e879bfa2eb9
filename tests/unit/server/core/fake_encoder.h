// A stand-in for the model in server-core tests: pooled vector [length, temperature, first
// id, 0...] of `dim` floats, hidden states on request, and a record of every batch it ran (its
// sequences and their shared prefix lengths).
#pragma once

#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "model_store/encoder/encoder.h"

namespace embedding::testing {

class FakeEncoder {
 public:
  explicit FakeEncoder(int64_t dim, absl::Duration per_batch = absl::ZeroDuration())
      : dim_(dim), per_batch_(per_batch) {}

  model_store::EncodeResult Encode(const model_store::EncodeBatch& batch) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      batches_.push_back(batch.sequences);
      prefix_lengths_.push_back(batch.prefix_lengths);
      thread_ = std::this_thread::get_id();
    }
    absl::SleepFor(per_batch_);
    model_store::EncodeResult result;
    result.dim = dim_;
    for (size_t i = 0; i < batch.sequences.size(); ++i) {
      const auto& ids = batch.sequences[i];
      std::vector<float> pooled(dim_, 0.0f);
      pooled[0] = static_cast<float>(ids.size());
      if (dim_ > 1) pooled[1] = batch.temperatures[i];
      if (dim_ > 2 && !ids.empty()) pooled[2] = static_cast<float>(ids[0]);
      result.pooled.push_back(pooled);
      result.hidden_states.push_back(batch.return_hidden_states
                                         ? std::vector<float>(ids.size() * dim_, 1.0f)
                                         : std::vector<float>());
      result.high_frequency_ratio.push_back(0.5f);
    }
    return result;
  }

  std::vector<std::vector<std::vector<int32_t>>> batches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }
  std::vector<std::vector<int32_t>> prefix_lengths() const {
    std::lock_guard<std::mutex> lock(mu_);
    return prefix_lengths_;
  }
  std::thread::id thread() const {
    std::lock_guard<std::mutex> lock(mu_);
    return thread_;
  }

 private:
  const int64_t dim_;
  const absl::Duration per_batch_;
  mutable std::mutex mu_;
  std::vector<std::vector<std::vector<int32_t>>> batches_;
  std::vector<std::vector<int32_t>> prefix_lengths_;
  std::thread::id thread_;
};

}  // namespace embedding::testing
