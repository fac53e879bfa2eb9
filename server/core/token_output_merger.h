// bge-m3's per-token outputs on their way through the request path: each encoded sequence's
// lexical weights and unit vectors fold into its document as they arrive; at merge they become
// the document's (and its chunks') sparse map and multi-vectors.
//   Sparse: per vocabulary id the max weight over its occurrences (special and unknown ids
//   dropped, only weights > 0); a document's chunks merge by the same max.
//   Multi-vector: every content token once in document order (a token two chunks share keeps
//   the earlier chunk's vector; under late chunking the window it takes its states from), then
//   the end token's vector of the last sequence. A late-interaction (ColBERT) model's start
//   with the first sequence's special prefix ([CLS] and the marker), and a document's drop the
//   text's tokens of the model's skiplist (after encoding, as PyLate and ColBERT do).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "common/span.h"
#include "model_store/model.h"
#include "server/core/chunk_planner.h"
#include "server/core/embed_params.h"
#include "server/core/embed_result.h"

namespace embedding::server {

// What has arrived for one document. Non-late strategies keep each sequence's outputs (a
// sequence is a chunk); late chunking keeps each content token's outputs from its window.
struct TokenOutputState {
  std::vector<std::map<int32_t, float>> sequence_sparse;  // per sequence: id -> max weight
  std::vector<std::vector<float>> sequence_vectors;       // per sequence: rows after the prefix
  std::vector<float> token_weights;                       // late: per content token
  std::vector<float> token_vectors;                       // late: [tokens x dim]
  std::vector<float> end_vectors;                         // late: the last window's suffix rows
  std::vector<float> prefix_vectors;  // a ColBERT model's: the first sequence's prefix rows
};

// A late-interaction model's rows (see above); a null `model`: bge-m3's rules alone.
struct LateRows {
  const model_store::LateInteraction* model = nullptr;
  bool query = false;  // a query keeps every row, its expansion's included
};

// The ids a sparse map never holds: the special tokens, padding and the unknown token.
std::set<int32_t> SparseDroppedIds(const model_store::Model& model);

// Sizes the state for a plan of `tokens` content tokens.
void PrepareTokenOutputs(TokenOutputState* state, const ChunkPlan& plan, size_t tokens, bool late,
                         const EmbedParams& params, size_t dim);

// Folds sequence `s`'s outputs (rows: `prefix` special tokens, its content, the suffix) in.
// `ids` are the document's content token ids. `keep_prefix`: the first sequence's prefix rows
// are kept (a late-interaction model's).
void FoldTokenOutputs(TokenOutputState* state, const ChunkPlan& plan,
                      const std::vector<int32_t>& ids, size_t s, bool late, size_t prefix,
                      bool keep_prefix, const std::set<int32_t>& dropped,
                      const std::vector<float>& weights, const std::vector<float>& vectors,
                      size_t dim);

// A SPLADE model's sparse vector for sequence `s` (a chunk: SPLADE has no late chunking). Its
// ids are the vocabulary's, every one kept, specials included, as SpladePooling keeps them.
void FoldVocabularySparse(TokenOutputState* state, size_t s,
                          const model_store::SparseVector& sparse);

// The document's outputs, and each chunk's when the strategy returns chunks; max_vectors
// and sparse_top_k applied.
void MergeTokenOutputs(const TokenOutputState& state, const ChunkPlan& plan,
                       const std::vector<int32_t>& ids, bool late, const std::set<int32_t>& dropped,
                       const LateRows& late_rows, const EmbedParams& params, size_t dim,
                       DocumentResult* doc);

// At most `max_vectors` vectors: runs of neighbours averaged and re-normalised, their spans
// joined. Unchanged when it already has that few (or max_vectors is 0).
MultiVectorResult PoolMultiVectors(MultiVectorResult in, uint32_t max_vectors);

}  // namespace embedding::server
