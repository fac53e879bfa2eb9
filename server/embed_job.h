// One admitted Embed request on its way through the pipeline: tokenised and planned on a
// preparer thread, its sequences encoded by the batcher, merged when the last one returns.
// Completes exactly once: with the result, or with the first error, cancellation or
// deadline expiry.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model_store/model.h"
#include "server/admission.h"
#include "server/chunk_planner.h"
#include "server/embed_params.h"

namespace embedding::server {

class EmbedJob;

// One sequence for the model: a chunk or a late-chunking window of one document.
struct SequenceTask {
  std::shared_ptr<EmbedJob> job;
  uint32_t document = 0;
  uint32_t sequence = 0;
  std::vector<int32_t> ids;  // special tokens included
  float temperature = 1.0f;
  bool want_hidden_states = false;
};

struct Span32 {
  uint32_t begin = 0;
  uint32_t end = 0;
};

struct ChunkResult {
  std::vector<float> vector;
  TokenRange tokens;
  Span32 chars;  // code points of the input
  Span32 bytes;  // UTF-8 bytes of the input
};

struct DocumentResult {
  std::vector<float> vector;  // as returned: merged, normalised, truncated
  // Unit-norm, all dimensions: what the collapse metrics observe.
  std::vector<float> collapse_vector;
  std::vector<float> high_frequency_ratios;  // one per encoded sequence
  uint32_t token_count = 0;
  uint32_t chunk_count = 0;
  bool truncated = false;
  float temperature = 1.0f;
  std::string length_bucket;
  std::vector<ChunkResult> chunks;  // CHUNK_ALL and LATE_CHUNKING only
};

struct EmbedResult {
  std::vector<DocumentResult> documents;
  uint64_t tokens = 0;
  uint64_t sequences = 0;
  uint64_t sequence_tokens = 0;
  double queue_seconds = 0;
  double tokenize_seconds = 0;
  double inference_seconds = 0;
  double total_seconds = 0;
};

struct JobLimits {
  uint32_t max_tokens_per_document = 131072;
};

class EmbedJob : public std::enable_shared_from_this<EmbedJob> {
 public:
  using DoneCallback = std::function<void(absl::StatusOr<EmbedResult>)>;

  // `model` and `admission` must outlive the job. `done` runs exactly once, on whichever
  // thread completes the job. The job holds one admitted request slot and releases it then.
  EmbedJob(const model_store::Model& model, EmbedParams params, std::vector<std::string> inputs,
           absl::Time deadline, JobLimits limits, Admission* admission, DoneCallback done);
  ~EmbedJob();

  // Tokenises and plans every document and reserves queue space. Returns the sequences to
  // encode; on error (bad document, queue full) completes the job and returns none.
  std::vector<SequenceTask> Prepare();

  // Why the job's work should be dropped (cancelled, deadline passed, already failed), or OK.
  absl::Status DropReason(absl::Time now) const;
  // Batcher: the job's sequences are in a batch that starts now / took `seconds`.
  void OnBatch(absl::Time start, double seconds);
  void OnSequenceDone(uint32_t document, uint32_t sequence, std::vector<float> pooled,
                      std::vector<float> hidden_states, float high_frequency_ratio);
  // Completes the job with `status` unless it already completed.
  void Fail(const absl::Status& status);
  // The client went away (or its deadline passed): completes the job now, returning its
  // request slot and queue space; the batcher drops its remaining sequences.
  void Cancel();

  bool done() const { return done_.load(); }

 private:
  struct Document {
    std::string text;  // prompt + input
    model_store::TokenizedText tokens;
    ChunkPlan plan;
    std::vector<std::vector<float>> pooled;  // per sequence
    std::vector<std::vector<float>> hidden;  // per sequence, late chunking only
    std::vector<float> hf_ratio;
  };

  void Complete(absl::StatusOr<EmbedResult> result);
  DocumentResult MergeDocument(const Document& doc) const;
  std::vector<float> LateChunkVector(const Document& doc, const TokenRange& chunk) const;

  const model_store::Model& model_;
  const EmbedParams params_;
  const absl::Time deadline_;
  const JobLimits limits_;
  Admission* const admission_;
  DoneCallback done_callback_;

  std::vector<Document> documents_;
  uint32_t prompt_bytes_ = 0;
  std::atomic<int64_t> pending_sequences_{0};
  std::atomic<int64_t> reserved_tokens_{0};
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{false};

  std::mutex mu_;  // timings below; document results are written per (doc, seq) slot
  absl::Time created_;
  absl::Time first_batch_ = absl::InfiniteFuture();
  double tokenize_seconds_ = 0;
  double inference_seconds_ = 0;
};

}  // namespace embedding::server
