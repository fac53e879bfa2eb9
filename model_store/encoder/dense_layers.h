// Internal to model_store: sentence-transformers' Dense modules (`2_Dense/` ...), applied in
// order to each pooled vector before any normalisation: activation(W x + b). EmbeddingGemma,
// LaBSE, distiluse and the T5 encoders need them; a model served without them is wrong.
#pragma once

#include <torch/types.h>

#include <vector>

#include "absl/status/statusor.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/formats/sentence_transformers_config.h"

namespace embedding::model_store {

// activation(W x + b), then a LayerNorm where `norm_weight` is defined (ModernBERT's
// classifier head).
struct DenseLayer {
  torch::Tensor weight;    // [out, in] fp32
  torch::Tensor bias;      // [out] fp32; undefined without a bias
  std::string activation;  // as DenseModuleConfig names it: Tanh, ReLU, GELU, GELUTanh, SiLU, ...
  torch::Tensor norm_weight, norm_bias;  // [out] fp32; undefined without a norm (or its bias)
  double norm_eps = 1e-5;
};

// `name` in `checkpoint`, shaped `shape`, finite, as contiguous fp32. DATA_LOSS naming
// `where`, the tensor and (for a wrong shape) `shape_source`, the config that implies it.
absl::StatusOr<torch::Tensor> ReadFp32Tensor(const Checkpoint& checkpoint, const std::string& where,
                                             const std::string& name, std::vector<int64_t> shape,
                                             const std::string& shape_source);

// Reads each module's `linear.weight` (and `linear.bias`) from its folder's model.safetensors
// or pytorch_model.bin (the reader that runs no pickle code). The first must take
// `hidden_size` inputs and each the previous one's outputs. DATA_LOSS naming the file and
// tensor for a missing, mis-shaped or non-finite weight.
absl::StatusOr<std::vector<DenseLayer>> LoadDenseLayers(
    const std::vector<DenseModuleConfig>& modules, int64_t hidden_size);

// `pooled` [N, hidden] fp32 through every layer: [N, the last layer's out_features]. Each row
// alone, so a vector does not depend on the rows beside it.
torch::Tensor ApplyDenseLayers(const std::vector<DenseLayer>& layers, torch::Tensor pooled);

// The same for one sequence's token states [L, hidden] in one product per layer: a sequence's
// rows are the same in any batch, so its vectors are too (a ColBERT projection).
torch::Tensor ProjectTokens(const std::vector<DenseLayer>& layers, torch::Tensor tokens);

}  // namespace embedding::model_store
