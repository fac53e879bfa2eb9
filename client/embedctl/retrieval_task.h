// Self-supervised retrieval tasks from an unlabeled corpus, per length bucket, after LongEmbed's
// synthetic tasks. Every query is ranked among a pool of candidates of the same size in every
// bucket, so rows compare:
// - passkey: one haystack of the corpus's own text at a length inside the bucket, copied once
//   per candidate with a different pass key inserted at one depth; the query is the key's
//   sentence. Only a local detail tells the candidates apart: what length collapse destroys.
// - needle: the same with the opening span of another corpus document as the needle; the query
//   is the needle's first half.
// - lexical: different documents cut into the bucket, each query a span copied from its
//   document (a topical match of the whole document is enough).
// Depths cycle over the pools (start, quarter, middle, three quarters, end), and pools alternate
// between the calibration half (even) and the held-out half (odd). Every query has exactly one
// right answer (task_uniqueness.h): a key, needle or span that would break that is redrawn.
// `embedctl calibrate` and `embedctl eval` score models on them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/embedding_client.h"

namespace embedding::client {

enum class RetrievalTaskKind { kPasskey, kNeedle, kLexical };

// "passkey", "needle", "lexical"; INVALID_ARGUMENT naming --task otherwise.
absl::StatusOr<RetrievalTaskKind> ParseRetrievalTaskKind(std::string_view name);
const char* RetrievalTaskKindName(RetrievalTaskKind kind);

// Where a fact sits in its haystack, as a fraction of the haystack's tokens; pool p takes
// kFactDepths[p % 5].
inline constexpr float kFactDepths[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f};

struct RetrievalTaskOptions {
  std::string model;
  RetrievalTaskKind kind = RetrievalTaskKind::kPasskey;
  // Longest document, in content tokens (0: the bucket's own bound). calibrate passes the
  // model's window: a schedule is a function of one sequence's length.
  uint32_t max_tokens = 0;
  // Buckets past this one's label are left out (--max-bucket); empty: none.
  std::string max_bucket;
  // Queries (one per candidate document) per bucket, rounded up to whole pools: 100 per half.
  // A paired gain's standard error falls with the square root of the queries; at 32 per half
  // a bucket's halves differed by more than any effect of τ measured.
  size_t queries_per_bucket = 200;
  size_t pool_size = 8;        // candidates each query is ranked among
  uint32_t query_tokens = 12;  // a lexical query's span; a needle is twice as long
  uint64_t seed = 1;
  // The prompt queries are embedded with (documents get none of their own): asymmetric models
  // are scored as they are used. Empty: none.
  std::string query_prompt_name;
};

struct BucketTask {
  std::string bucket;  // the server's length-bucket label
  uint32_t min_tokens = 0;
  RetrievalTaskKind kind = RetrievalTaskKind::kPasskey;
  size_t pool_size = 0;
  // Pool p holds documents [p * pool_size, (p + 1) * pool_size); queries[i] finds documents[i].
  std::vector<std::string> documents;
  std::vector<std::string> queries;
  // Per document: where its fact (lexical: its query's span) starts, as a fraction of its
  // content tokens.
  std::vector<float> depths;
  // Draws rejected because a query would not have been unique (keys, needles, spans, and
  // haystacks given up on).
  size_t redrawn = 0;
  size_t pools() const { return pool_size == 0 ? 0 : documents.size() / pool_size; }
};

struct UnfilledBucket {
  std::string bucket;
  std::string reason;
};

// Every bucket's task, and what went into them.
struct RetrievalTasks {
  size_t documents = 0;           // distinct documents the tasks drew on
  size_t duplicates_dropped = 0;  // documents whose normalised text an earlier one had
  std::vector<BucketTask> buckets;
  // Buckets within reach (the window, --max-bucket) that could not get two pools, and why.
  std::vector<UnfilledBucket> unfilled;
};

// A text with the byte span of each of its content tokens, as the server's Tokenize gives.
struct TokenizedText {
  std::string text;
  std::vector<std::pair<uint32_t, uint32_t>> byte_spans;
};

// A text file holds one document per line; a directory, one per regular file (sorted by
// name). NOT_FOUND naming the path when it cannot be read; INVALID_ARGUMENT when it is empty.
absl::StatusOr<std::vector<std::string>> ReadCorpus(const std::string& path);

// Drops every document whose normalised text (task_uniqueness.h) an earlier one has; returns
// how many it dropped. Two equal candidates tie whatever the model, so no task may hold them.
size_t DropDuplicateDocuments(std::vector<std::string>* corpus);

// De-duplicates the corpus, tokenizes every document once through the server (so cuts fall on
// the model's token boundaries) and builds each bucket's task (MakeBucketTasks).
// INVALID_ARGUMENT naming --corpus when no bucket gets one.
absl::StatusOr<RetrievalTasks> BuildRetrievalTasks(EmbeddingClient& client,
                                                   std::vector<std::string> corpus,
                                                   const RetrievalTaskOptions& options);

// Each bucket's task from a tokenized corpus; deterministic for a corpus, options and seed. A
// bucket gets at least two pools (one per half) or none, and then a reason: passkey and needle
// need a haystack (the corpus's text end to end) of the bucket's length, lexical two pools of
// documents that long, and every pool queries with one right answer each. A haystack's length
// leaves room for its fact inside the bucket.
RetrievalTasks MakeBucketTasks(const std::vector<TokenizedText>& corpus,
                               const RetrievalTaskOptions& options);

// The tasks themselves, for checking the figures elsewhere: the corpus counts, and per bucket
// the task, pool size, documents, queries, depths, draws redrawn, and per query the index of
// its answer with the proof that it is the only one (its text's count in the answer, and in
// each other candidate of its pool: all zero); then the buckets left unfilled and why.
std::string TasksJson(const RetrievalTasks& tasks);

// What the tasks drew on, for the plan: documents, duplicates dropped, per bucket its pools and
// draws redrawn, and each bucket that could not be filled with its reason.
std::string FormatTaskSummary(const RetrievalTasks& tasks);

// The prompt queries take: `requested` when the model has it (INVALID_ARGUMENT naming
// --prompt-name and listing the model's prompts otherwise, as the server refuses it), else the
// model's "query" prompt when it defines one (Qwen3-Embedding's instruction, e5's "query: "),
// else none.
absl::StatusOr<std::string> QueryPromptName(const v1::ModelInfo& info,
                                            const std::string& requested);

// How EmbedInBatches sends its texts.
struct BatchCalls {
  size_t batch = 16;              // texts per Embed call
  size_t in_flight = 1;           // calls at once, spread round-robin over the client's addresses
  std::function<void()> on_call;  // after each call, one at a time
  // A call's deadline from the bytes of text it carries; unset: the client's.
  std::function<absl::Duration(size_t)> deadline_for;
};

// One vector per text, in order. The first failed call's error (calls not yet sent are not).
absl::StatusOr<std::vector<std::vector<float>>> EmbedInBatches(
    EmbeddingClient& client, const std::vector<std::string>& texts, const EmbedOptions& options,
    const BatchCalls& calls);

// Reciprocal rank at 10 of queries[i] finding documents[i] among its pool's `pool_size`
// documents, by inner product (unit vectors: cosine); below rank 10 it scores 0, and a tie
// ranks the right document last.
std::vector<double> ReciprocalRanks(const std::vector<std::vector<float>>& queries,
                                    const std::vector<std::vector<float>>& documents,
                                    size_t pool_size);

}  // namespace embedding::client
