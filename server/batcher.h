// The one thread that owns a model's queue: it cuts batches at a padded-token budget, a
// sequence count, a padding share or a queue delay, groups similar lengths, interleaves jobs
// round-robin so a
// huge document never holds the machine, and drops work whose caller cancelled or whose
// deadline passed before it reaches the model.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model_store/encoder.h"
#include "server/embed_job.h"

namespace embedding::server {

struct BatcherOptions {
  // Padded tokens per forward pass: sequences x longest sequence.
  int64_t max_batch_tokens = 2048;
  int64_t max_batch_sequences = 64;
  // Largest share of a batch's padded tokens that may be padding.
  double max_padding_share = 0.2;
  absl::Duration max_queue_delay = absl::Milliseconds(2);
};

// What one forward pass looked like, for metrics.
struct BatchStats {
  int64_t sequences = 0;
  int64_t real_tokens = 0;
  int64_t padded_tokens = 0;
  double seconds = 0;
};

class Batcher {
 public:
  using EncodeFn =
      std::function<absl::StatusOr<model_store::EncodeResult>(const model_store::EncodeBatch&)>;
  using BatchObserver = std::function<void(const BatchStats&)>;

  // `encode` runs the model (the real encoder, or a fake in tests); `pooling` is passed on.
  Batcher(EncodeFn encode, model_store::PoolingMode pooling, BatcherOptions options,
          BatchObserver observer = nullptr);
  // Stops the thread; queued work fails with UNAVAILABLE.
  ~Batcher();

  // Queues one job's sequences (all of them, in order). Thread-safe; never blocks on the model.
  void Submit(std::vector<SequenceTask> tasks);

 private:
  struct JobQueue {
    std::deque<SequenceTask> tasks;
    absl::Time enqueued;
  };

  void Loop();
  // Picks the next batch under the lock; drops dead work into `dropped`.
  std::vector<SequenceTask> CutBatch(std::vector<SequenceTask>* dropped);
  void Run(std::vector<SequenceTask> batch);

  const EncodeFn encode_;
  const model_store::PoolingMode pooling_;
  const BatcherOptions options_;
  const BatchObserver observer_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::list<JobQueue> jobs_;   // round-robin order: the front job anchors the next batch
  int64_t queued_ = 0;         // sequences
  int64_t queued_tokens_ = 0;  // their tokens, unpadded
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace embedding::server
