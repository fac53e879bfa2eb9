// Internal to model_store: a cross-encoder's or classifier's head (transformers'
// *ForSequenceClassification), read from the model's own checkpoint by its family's
// ClassifierHeadSpec into the layers the encoder applies after pooling.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "model_store/encoder/dense_layers.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/spec/architecture.h"
#include "model_store/spec/classifier_head.h"
#include "model_store/spec/encoder_config.h"

namespace embedding::model_store {

// Every step's [hidden, hidden] layers and the last one's [labels, hidden], in fp32 (the head
// is a few vectors' work, whatever the encoder's dtype). A step marked under_prefix is looked
// up under each of the spec's weight prefixes in turn. DATA_LOSS naming the tensor for a
// missing, mis-shaped or non-finite weight; INVALID_ARGUMENT naming config.json's field for an
// activation it cannot run.
absl::StatusOr<std::vector<DenseLayer>> LoadClassifierHead(const ArchitectureSpec& spec,
                                                           const ClassifierConfig& classifier,
                                                           const EncoderConfig& config,
                                                           const Checkpoint& checkpoint);

}  // namespace embedding::model_store
