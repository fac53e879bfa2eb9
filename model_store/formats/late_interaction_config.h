// Internal to model_store: a late-interaction (ColBERT) checkpoint's own settings, from the two
// layouts the Hub holds. PyLate writes sentence-transformers files (modules.json with its Dense
// projection, its fields in config_sentence_transformers.json); Stanford ColBERT writes a BERT
// checkpoint with the projection `linear.weight` beside it and `artifact.metadata`. Each
// default is the published code's (PyLate's ColBERT.__init__, ColBERT's ColBERTConfig).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace embedding::model_store {

class Checkpoint;

struct LateInteractionConfig {
  // Which layout and the file that said so, for logs and refusals.
  std::string layout;
  // The marker token put after the first special token, or "" for none.
  std::string query_prefix = "[Q] ";
  std::string document_prefix = "[D] ";
  // Tokens a query is cut (and expanded) to and a document is cut to in plain use, the
  // specials and the marker included.
  int64_t query_length = 32;
  int64_t document_length = 180;
  // A query padded with the tokenizer's mask token up to query_length; the padding attended
  // by the text's tokens or not (it always attends the text).
  bool do_query_expansion = true;
  bool attend_to_expansion_tokens = false;
  // Words (vocabulary tokens) whose vectors a document drops after encoding: string.punctuation
  // unless the files say otherwise.
  std::vector<std::string> skiplist_words;
  // Stanford's layout: its projection is `linear.weight` in the checkpoint (no bias); PyLate's
  // is the Dense modules of modules.json.
  bool projection_in_checkpoint = false;
};

// The directory's late-interaction settings, or nullopt for any other model. PyLate's layout
// is marked by a `pylate.` module in modules.json or any of its fields in
// config_sentence_transformers.json; Stanford's by artifact.metadata, config.json's
// architectures naming HF_ColBERT, or a top-level `linear.weight` tensor in `checkpoint`.
// DATA_LOSS naming the file and field for a malformed or out-of-range value.
absl::StatusOr<std::optional<LateInteractionConfig>> ReadLateInteractionConfig(
    const std::string& model_dir, const Checkpoint& checkpoint);

}  // namespace embedding::model_store
