// A late-interaction (ColBERT) model's encoding rules, resolved against its tokenizer: how a
// query and a document become a sequence, which rows the model attends, and which token
// vectors a document keeps. As PyLate's ColBERT.preprocess / encode and ColBERT's
// QueryTokenizer / DocTokenizer / Checkpoint write them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/formats/late_interaction_config.h"
#include "model_store/text/tokenizer.h"

namespace embedding::model_store {

enum class InputRole { kDocument, kQuery };

// One sequence as the encoder takes it.
struct RoleSequence {
  std::vector<int32_t> ids;
  // Keys every row attends (EncodeBatch::attended_lengths): the text's tokens when a query's
  // expansion is not attended; 0 for all.
  int32_t attended = 0;
};

class LateInteraction {
 public:
  // INVALID_ARGUMENT naming the file and field for a marker the vocabulary lacks, a length
  // shorter than the specials and one token, or query expansion without a mask token.
  static absl::StatusOr<LateInteraction> Resolve(const LateInteractionConfig& config,
                                                 const std::string& model_dir,
                                                 const Tokenizer& tokenizer);

  const std::string& layout() const { return config_.layout; }
  // The special tokens before a text of `role`: the post-processor's first, the marker, the rest.
  const std::vector<int32_t>& prefix(InputRole role) const {
    return role == InputRole::kQuery ? query_prefix_ : document_prefix_;
  }
  const std::vector<int32_t>& suffix() const { return suffix_; }
  // Content tokens a query keeps, and a document's window holds, in plain use.
  int64_t query_content_tokens() const;
  int64_t document_content_tokens() const;
  // The sequence for `content` (already cut to fit): a query's expanded with the mask token up
  // to query_length (attended or not, as the files say).
  RoleSequence Sequence(InputRole role, const std::vector<int32_t>& content) const;
  // Whether a document's vector for this token id is dropped after encoding (the skiplist).
  bool Skipped(int32_t id) const;
  const LateInteractionConfig& config() const { return config_; }

 private:
  LateInteractionConfig config_;
  std::vector<int32_t> query_prefix_, document_prefix_, suffix_;
  int32_t expansion_id_ = -1;
  std::vector<int32_t> skiplist_ids_;  // sorted
};

}  // namespace embedding::model_store
