// One admitted Embed request on its way through the request path, after validation:
//   Start → Prepare (tokenise and plan, on a worker) → Batcher::Submit (one task per
//   sequence) → OnSequenceDone (on a worker, per result) → MergeDocument → done.
// The job owns its request slot (AdmissionPermit) and its queue space (TokenReservation):
// the slot is returned when the job completes, each sequence's tokens when the batcher
// finishes or drops it, and whatever is left when the job is destroyed.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model_store/model.h"
#include "server/core/admission.h"
#include "server/core/batcher.h"
#include "server/core/document_merger.h"
#include "server/core/embed_call.h"
#include "server/core/embed_params.h"
#include "server/core/embed_result.h"
#include "server/core/worker_pool.h"

namespace embedding::server {

// A cross-encoder's pairs: the first text of each input's pair (one shared by every input,
// as a rerank's query, or one per input); no texts: single texts. Every sequence is then the
// pair template over this text and a chunk of the input, and the chunks shrink to fit. A model
// with a score prompt (Qwen3-Reranker) reads the first text inside its prompt, with
// `instruction` (empty: the prompt's default).
struct PairFirsts {
  std::vector<std::string> texts;
  // How refusals name a pair's first text: "query", or "text_pairs" (then "text_pairs[i]").
  std::string field = "query";
  std::string instruction;
};

class EmbedJob : public std::enable_shared_from_this<EmbedJob> {
 public:
  using DoneCallback = std::function<void(absl::StatusOr<EmbedResult>)>;

  // Everything validation and admission produced.
  struct Request {
    const model_store::Model* model = nullptr;
    Batcher* batcher = nullptr;
    // Holds the model version (and its batcher) for as long as the job exists: a job answered
    // early by a cancellation may still be tokenising on a worker, and must not outlive the
    // model it reads.
    std::shared_ptr<const void> keep_alive;
    EmbedParams params;
    // Texts, or content token ids used instead of tokenising (checked against the vocabulary).
    EmbedInputs inputs;
    // How refusals name the inputs: "inputs", or a rerank's "documents" (then "documents[i]").
    std::string inputs_field = "inputs";
    PairFirsts pairs;
    // A late-interaction rerank: input 0 is the query, encoded as one (and its vectors are
    // scored, not returned), the rest are documents.
    bool leading_query = false;
    absl::Time deadline = absl::InfiniteFuture();
    Priority priority = Priority::kInteractive;
    uint32_t max_tokens_per_document = 0;
    int64_t max_response_bytes = std::numeric_limits<int64_t>::max();
    AdmissionPermit permit;
  };

  // Schedules preparation on `pool` and returns the job, for Cancel. `done` runs exactly
  // once: with the result, the first error, or the cancellation. The model, batcher and pool
  // must outlive every job (the server drains its pool before stopping its batchers).
  static std::shared_ptr<EmbedJob> Start(Request request, WorkerPool* pool, DoneCallback done);

  // The client went away or its deadline passed: completes the job now (the slot comes
  // back at once); the batcher drops its queued sequences, returning their tokens.
  void Cancel();

  ~EmbedJob();

 private:
  EmbedJob(Request request, DoneCallback done);

  // Tokenises and plans every document, reserves queue space and submits the sequences.
  void Prepare();
  // Input `i` given as token ids (moved out of the request): INVALID_ARGUMENT naming
  // `field`[t] for an id outside [0, vocab_size).
  absl::StatusOr<model_store::TokenizedText> GivenTokens(size_t i, const std::string& field,
                                                         int64_t vocab_size);
  // The document's tokens: its text tokenised, or its given ids checked. Under TRUNCATE a
  // text is tokenised only as far as the kept `window` needs; `*cut` says tokens were left.
  absl::StatusOr<model_store::TokenizedText> DocumentTokens(size_t i, const std::string& field,
                                                            uint32_t window, bool* cut);
  // How refusals name document `d`'s first text.
  std::string FirstField(size_t d) const;
  // Document `d`'s first text as content ids.
  const std::vector<int32_t>& FirstIds(size_t d) const;
  // Tokenises the pairs' first texts into first_ids_.
  absl::Status TokenizePairFirsts();
  // Document `d`'s planning under pairs: the content tokens a sequence has left beside its
  // first text, and its params with chunks no larger. INVALID_ARGUMENT naming the first text
  // when it leaves no room, or chunk_overlap_tokens when it no longer fits the chunk.
  absl::StatusOr<EmbedParams> PairParams(size_t d, uint32_t* window) const;
  // How refusals name input `d`: "inputs[d]", or under a leading query "query" and then
  // "documents[d - 1]".
  std::string InputField(size_t d) const;
  // Input `d`'s role: a late-interaction model's query or document.
  model_store::InputRole RoleOf(size_t d) const;
  // A query's planning for a late-interaction model: one window of its query length (`window`
  // content tokens), cut as its code cuts it (TRUNCATE, unless the call asked REJECT).
  EmbedParams QueryParams(uint32_t* window) const;
  // Tokens one sequence of document `d` with `content` tokens adds beside them: the special
  // tokens (a late-interaction query's expansion too), and under pairs the first text.
  int64_t SequenceOverhead(size_t d, size_t content) const;
  // Sequence `s` of document `d` as the model reads it.
  BatchTask SequenceTask(size_t d, size_t s) const;
  // INVALID_ARGUMENT naming `outputs` when what the planned documents would return exceeds
  // --max-response-bytes.
  absl::Status CheckResponseSize() const;
  // OK while the job wants results; otherwise why not.
  absl::Status Liveness() const;
  void OnSequenceDone(size_t document, size_t sequence, absl::StatusOr<SequenceOutput> output);
  EmbedResult Merge() const;
  // Completes the job with `result` unless it already completed.
  void Complete(absl::StatusOr<EmbedResult> result);

  Request request_;
  const absl::Time created_;
  std::vector<EncodedDocument> documents_;  // each (document, sequence) slot written once
  const std::set<int32_t> sparse_dropped_ids_;
  // The pairs' first texts as content ids, one per entry of request_.pairs.texts.
  std::vector<std::vector<int32_t>> first_ids_;
  const size_t multi_vector_dim_;

  mutable std::mutex mu_;  // guards everything below
  bool done_ = false;
  bool cancelled_ = false;
  DoneCallback done_callback_;
  TokenReservation reserved_tokens_;
  int64_t pending_sequences_ = 0;
  std::set<uint64_t> batches_seen_;
  absl::Time first_batch_ = absl::InfiniteFuture();
  double tokenize_seconds_ = 0;
  double inference_seconds_ = 0;
};

}  // namespace embedding::server
