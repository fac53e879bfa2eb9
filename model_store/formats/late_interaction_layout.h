// Internal to model_store: recognises a late-interaction (ColBERT) checkpoint from its files,
// so it is refused rather than served as a single-vector embedder. Both layouts the Hub holds
// would otherwise load: PyLate's projection is a Dense module (its pooled [CLS] projected), and
// Stanford ColBERT's `linear.weight` lies beside an ordinary BERT checkpoint.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace embedding::model_store {

class Checkpoint;

// INVALID_ARGUMENT naming the file and what in it marks the layout: a `pylate.` module in
// modules.json; PyLate's fields in config_sentence_transformers.json (query_prefix,
// document_prefix, query_length, document_length, do_query_expansion,
// attend_to_expansion_tokens, skiplist_words); Stanford ColBERT's artifact.metadata. Reads
// only those two small JSON files' names and fields; OK otherwise.
absl::Status CheckNotLateInteractionFiles(const std::string& model_dir);

// INVALID_ARGUMENT when the checkpoint holds Stanford ColBERT's top-level projection
// `linear.weight` (HF_ColBERT's `self.linear`), which no family here reads.
absl::Status CheckNotLateInteractionWeights(const std::string& model_dir,
                                            const Checkpoint& checkpoint);

}  // namespace embedding::model_store
