// A model's batch queue: one thread that cuts batches at a padded-token budget, a sequence
// count, a padding share or a queue delay, and hands each to the encode function (which the
// server runs on its one inference thread). Submissions take turns round-robin
// so a huge document never holds the machine; tasks whose caller is gone are dropped before
// they reach the model. The batcher knows nothing of requests, jobs or protobuf: a task is
// token ids, a temperature, a liveness check and a completion callback, and completions run
// on the executor the owner passes in, never on the batcher thread. A batch the model has no
// memory for (RESOURCE_EXHAUSTED) is split and retried; nothing accepted is lost to it.
// Background submissions (a Batch API job's lines) take only what interactive ones leave:
// they are cut into a batch only while no interactive task is queued, and their passes yield
// after every layer to the interactive passes queued meanwhile, which run there, on the same
// thread, before the next layer.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model_store/encoder/encoder.h"
#include "server/core/priority.h"
#include "server/core/worker_pool.h"

namespace embedding::server {

struct BatcherOptions {
  // Padded tokens per forward pass: sequences x longest sequence. 0 (--max_batch_tokens's
  // default) is for the registry to size per model and device (batch_budget.h); a Batcher
  // takes a count.
  int64_t max_batch_tokens = 2048;
  int64_t max_batch_sequences = 64;
  // Largest share of a batch's padded tokens that may be padding.
  double max_padding_share = 0.2;
  // How long a partial batch waits to fill. Zero: sequences queue up on their own while the
  // previous forward runs, so a wait only delays an idle server (see server_options.cc).
  absl::Duration max_queue_delay = absl::ZeroDuration();
};

// What the model produced for one task.
struct SequenceOutput {
  std::vector<float> pooled;
  std::vector<float> hidden_states;  // row-major [tokens x dim]; empty unless asked for
  float high_frequency_ratio = 0;
  // bge-m3's heads, per token (special tokens included), when the task asked: one lexical
  // weight each, and row-major [tokens x multi_vector_dim] unit vectors.
  std::vector<float> token_weights;
  std::vector<float> token_vectors;
  // A SPLADE model's sparse output, when the task asked: one vector over the vocabulary.
  model_store::SparseVector vocabulary_sparse;
  // The forward pass it ran in: numbered, so a caller with several tasks in one pass can
  // count that pass once.
  uint64_t batch_id = 0;
  absl::Time batch_start;
  double batch_seconds = 0;
};

struct BatchTask {
  std::vector<int32_t> ids;  // special tokens included
  std::vector<int32_t> token_types;  // per id (a pair's); empty: type 0 throughout
  // Leading ids other tasks may share (a pair's query part): a causal model computes such a
  // prefix once per batch (model_store::EncodeBatch::prefix_lengths). 0: none.
  int32_t shared_prefix = 0;
  int32_t adapter = -1;  // the model's task adapter (model_store::EncodeBatch::adapters); -1: none
  // Leading ids every row attends (a ColBERT query's text before its expansion:
  // model_store::EncodeBatch::attended_lengths). 0: all.
  int32_t attended = 0;
  float temperature = 1.0f;
  // Of banded attention layers (model_store::EncodeBatch); unset: `temperature`.
  std::optional<float> local_temperature;
  bool want_hidden_states = false;
  model_store::TokenOutputs token_outputs;
  // OK while the caller still wants the result; otherwise why not (cancelled, deadline
  // passed), and the task is dropped without reaching the model.
  std::function<absl::Status()> liveness;
  // Runs exactly once, on the completion executor: with the output, the model's error (after
  // out-of-memory retries), the drop reason, or UNAVAILABLE when the batcher shuts down.
  std::function<void(absl::StatusOr<SequenceOutput>)> done;
};

// What one forward pass looked like, for metrics.
struct BatchStats {
  int64_t sequences = 0;
  int64_t real_tokens = 0;
  int64_t padded_tokens = 0;
  double seconds = 0;
  bool out_of_memory = false;  // the model ran out of memory: the batch is retried in halves
};

class Batcher {
 public:
  using EncodeFn =
      std::function<absl::StatusOr<model_store::EncodeResult>(const model_store::EncodeBatch&)>;
  using BatchObserver = std::function<void(const BatchStats&)>;

  // `encode` runs the model (the real encoder, or a fake in tests) with `pooling`;
  // `completions` runs task callbacks and must outlive the batcher. `yield_to_others`, at a
  // background pass's yield point, runs other batchers' interactive passes waiting for the
  // same thread (the inference pool's urgent work).
  Batcher(EncodeFn encode, model_store::PoolingMode pooling, BatcherOptions options,
          WorkerPool* completions, BatchObserver observer = nullptr,
          std::function<void()> yield_to_others = nullptr);
  // Stops the thread after the batch in progress; every task still queued completes with
  // UNAVAILABLE on the destroying thread.
  ~Batcher();

  // Queues `tasks` as one submission: they are served in order, taking turns with other
  // submissions of its priority. Thread-safe; never blocks on the model.
  void Submit(std::vector<BatchTask> tasks, Priority priority = Priority::kInteractive);

  // Tasks queued and not yet cut into a batch.
  int64_t queued_tasks() const;
  // What it cuts batches by (TEI's /info reports the default model's).
  const BatcherOptions& options() const { return options_; }

 private:
  struct Submission {
    std::deque<BatchTask> tasks;
    absl::Time enqueued;
    Priority priority = Priority::kInteractive;
  };
  using Dropped = std::vector<std::pair<BatchTask, absl::Status>>;

  void Loop();
  // Moves tasks whose caller is gone into `dropped`. Requires mu_.
  void DropDeadLocked(Dropped* dropped);
  // Whether an interactive task is queued. Requires mu_.
  bool InteractiveQueuedLocked() const;
  // Picks the next batch from the submissions of `priority`; moves dead tasks into `dropped`.
  // Requires mu_.
  std::vector<BatchTask> CutBatchLocked(Priority priority, Dropped* dropped);
  // Hands dropped tasks their reasons on the completion executor.
  void CompleteDropped(std::shared_ptr<Dropped> dropped);
  void Run(std::vector<BatchTask> batch, Priority priority);
  // A background pass's yield point: runs the interactive batches queued now, here.
  void YieldToInteractive();

  const EncodeFn encode_;
  const model_store::PoolingMode pooling_;
  const BatcherOptions options_;
  WorkerPool* const completions_;
  const BatchObserver observer_;
  const std::function<void()> yield_to_others_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::list<Submission> queue_;  // round-robin order: the front anchors the next batch
  int64_t queued_ = 0;           // tasks
  int64_t queued_tokens_ = 0;    // their tokens, unpadded
  std::atomic<uint64_t> batches_{0};  // Run also runs on the forward thread, at a yield point
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace embedding::server
