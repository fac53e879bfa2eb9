// Internal to model_store: what Encode returns, from the final hidden states: pooled vectors
// and each sequence's collapse statistic. Included only by encoder.cc.
#pragma once

#include <torch/types.h>

#include <vector>

#include "model_store/encoder/dense_layers.h"
#include "model_store/encoder/encoder.h"
#include "model_store/encoder/splade_head.h"
#include "model_store/encoder/token_heads.h"

namespace embedding::model_store {

// `x`: the packed final hidden states [>= offsets.back(), H], any dtype. Pools each sequence
// as `batch` asks (normalising if asked), measures its high-frequency ratio, copies the
// hidden states out when requested, and applies `heads` (may be null when no sequence asks)
// for the token outputs each sequence asks, or `splade` (may be null) for a sequence's sparse
// output where the model has it. `dense` (may be null) projects the pooled vectors
// before normalisation. All in fp32.
EncodeResult PoolAndMeasure(const torch::Tensor& x, const std::vector<int64_t>& offsets,
                            const EncodeBatch& batch, const TokenHeads* heads,
                            const SpladeHead* splade, const std::vector<DenseLayer>* dense);

}  // namespace embedding::model_store
