// Self-supervised retrieval tasks from an unlabeled corpus, per length bucket, in the shape of
// LongEmbed's needle and passkey tasks: every document is cut to a length inside the bucket,
// its query is a short span drawn from anywhere in it, and the bucket's other documents are the
// distractors. `embedctl calibrate` and `embedctl eval` score models on them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/embedding_client.h"

namespace embedding::client {

struct RetrievalTaskOptions {
  std::string model;
  // Longest cut, in content tokens (0: the bucket's own bound). calibrate passes the model's
  // window: a schedule is a function of one sequence's length.
  uint32_t max_tokens = 0;
  size_t max_documents = 64;  // per bucket, taken in corpus order
  size_t min_documents = 8;   // a bucket with fewer is left out
  uint32_t query_tokens = 12;
  uint64_t seed = 1;
  // The prompt queries are embedded with (documents get none of their own): asymmetric models
  // are scored as they are used. Empty: none.
  std::string query_prompt_name;
};

struct BucketTask {
  std::string bucket;  // the server's length-bucket label
  uint32_t min_tokens = 0;
  std::vector<std::string> documents;
  std::vector<std::string> queries;  // queries[i] is a span of documents[i]
};

// A text file holds one document per line; a directory, one per regular file (sorted by
// name). NOT_FOUND naming the path when it cannot be read; INVALID_ARGUMENT when it is empty.
absl::StatusOr<std::vector<std::string>> ReadCorpus(const std::string& path);

// Tokenizes every document once through the server (so cuts fall on the model's token
// boundaries) and builds each bucket's task. Deterministic for a corpus, model and seed.
absl::StatusOr<std::vector<BucketTask>> BuildRetrievalTasks(EmbeddingClient& client,
                                                            const std::vector<std::string>& corpus,
                                                            const RetrievalTaskOptions& options);

// The prompt queries take: `requested` when the model has it (INVALID_ARGUMENT naming
// --prompt-name and listing the model's prompts otherwise, as the server refuses it), else the
// model's "query" prompt when it defines one (Qwen3-Embedding's instruction, e5's "query: "),
// else none.
absl::StatusOr<std::string> QueryPromptName(const v1::ModelInfo& info,
                                            const std::string& requested);

// Every other document with its query: the calibration half (even positions) or the held-out
// half (odd positions).
BucketTask SplitHalf(const BucketTask& task, bool held_out);

// One vector per text, `batch` texts per Embed call; `on_call` runs after each call.
absl::StatusOr<std::vector<std::vector<float>>> EmbedInBatches(
    EmbeddingClient& client, const std::vector<std::string>& texts, const EmbedOptions& options,
    size_t batch, const std::function<void()>& on_call = nullptr);

// Mean reciprocal rank at 10 of queries[i] finding documents[i] by inner product (unit
// vectors: cosine); a right document ranked below 10 scores 0, a tie ranks it last.
double MeanReciprocalRankAt10(const std::vector<std::vector<float>>& queries,
                              const std::vector<std::vector<float>>& documents);

}  // namespace embedding::client
