// Cohere's input_type read against one model: which of the model's own prompts, task
// adapters or late-interaction roles serves "search_query", "search_document",
// "classification" or "clustering". A model that has none for a type embeds its texts as they
// are, as a model without prompts would under sentence-transformers.
#pragma once

#include <optional>
#include <string>

#include "model_store/model.h"
#include "server/core/vocabulary.h"

namespace embedding::server {

struct InputTypeMatch {
  std::string task;         // one of the model's task adapters, by its own name; or ""
  std::string prompt_name;  // else one of its prompts, by its own name; or ""
  // A late-interaction model's role: kSearchQuery encodes queries, every other type documents.
  std::optional<model_store::InputRole> role;
};

// The first of the type's names that the model has as a task adapter or else as a prompt
// (letter case ignored), in this order:
//   search_query:    search_query, query, retrieval.query, retrieval-query
//   search_document: search_document, document, passage, retrieval.passage,
//                    retrieval-document
//   classification:  classification
//   clustering:      clustering, separation
// (nomic's and Cohere's own names first, then sentence-transformers' usual "query" and
// "document", E5's "passage", jina-embeddings-v3's tasks and EmbeddingGemma's prompts).
InputTypeMatch MatchInputType(InputType type, const model_store::Model& model);

}  // namespace embedding::server
