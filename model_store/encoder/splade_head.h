// Internal to model_store: SPLADE's sparse output from a masked-LM head (sentence-transformers'
// MLMTransformer + SpladePooling): per token, the head's logits over the vocabulary; per
// sequence, max over its tokens of log(1 + relu(logit)), every token of the sequence included
// (the specials too, as SpladePooling's attention mask has them). Only weights > 0 are kept.
#pragma once

#include <torch/types.h>

#include "absl/status/statusor.h"
#include "model_store/encoder/encoder.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/spec/architecture.h"
#include "model_store/spec/encoder_config.h"

namespace embedding::model_store {

struct SpladeHead {
  torch::Tensor transform_weight, transform_bias;  // [H, H], [H] fp32
  Activation activation = Activation::kGeluErf;    // config.json's hidden_act
  torch::Tensor norm_weight, norm_bias;            // [H]
  double norm_eps = 1e-12;
  torch::Tensor decoder_weight, decoder_bias;  // [V, H], [V]; the word embeddings when tied
};

// The family's MLM head (spec.mlm_head) from `checkpoint`, the decoder tied to the word
// embeddings where the checkpoint leaves it out; fp32. INVALID_ARGUMENT naming the family when
// it has no MLM head here; DATA_LOSS naming a missing, mis-shaped or non-finite tensor.
absl::StatusOr<SpladeHead> LoadSpladeHead(const ArchitectureSpec& spec, const EncoderConfig& config,
                                          const Checkpoint& checkpoint);

// One sequence's states [L, H] (any dtype) to its sparse vector over the vocabulary, ids
// ascending. Rows go through the head in blocks, so memory stays bounded by the block, not by
// L x vocabulary.
SparseVector ApplySpladeHead(const SpladeHead& head, const torch::Tensor& states);

}  // namespace embedding::model_store
