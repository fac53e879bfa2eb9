// embedctl rerank and classify: a reranker's scores for documents against a query, and a
// classifier's (or reranker's) label scores, as JSON Lines on stdout.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "client/embedding_client.h"

namespace embedding::client {

// One line per result, best first: {index, score, document, token_count, chunk_count,
// truncated[, chunks]}. `instruction`: a prompted reranker's (empty: its default). Returns the
// process exit code (1 with the error on stderr).
int RerankCommand(EmbeddingClient& client, const std::string& model, const std::string& query,
                  const std::vector<std::string>& documents, std::optional<uint32_t> top_n,
                  const std::string& instruction, const v1::ScoreOptions& options);

// One line per input, in order: {index, labels: {label: score}, token_count, chunk_count,
// truncated}; with `text_pair`, each input is scored as the pair (text_pair, input).
int ClassifyCommand(EmbeddingClient& client, const std::string& model,
                    const std::vector<std::string>& inputs, const std::string& text_pair,
                    const std::string& instruction, const v1::ScoreOptions& options);

}  // namespace embedding::client
