// Internal to model_store: token-level heads. bge-m3's, read from files beside the checkpoint:
//   sparse_linear:  Linear(hidden -> 1), a lexical weight ReLU(w . h_t + b) per token;
//   colbert_linear: Linear(hidden -> D), one vector per token (normalised by the caller);
// or a late-interaction (ColBERT) model's projection: its Dense modules (PyLate) or
// `linear.weight` (Stanford), one vector per token, normalised likewise.
#pragma once

#include <torch/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "model_store/encoder/dense_layers.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/formats/late_interaction_config.h"

namespace embedding::model_store {

struct TokenHeads {
  torch::Tensor sparse_weight;   // [1, hidden] fp32; undefined without the sparse head
  torch::Tensor sparse_bias;     // [1]
  torch::Tensor colbert_weight;  // [D, hidden] fp32; undefined without the multi-vector head
  torch::Tensor colbert_bias;    // [D]
  std::vector<DenseLayer> late_projection;  // a ColBERT model's; empty otherwise

  bool has_sparse() const { return sparse_weight.defined(); }
  int64_t multi_vector_dim() const {
    if (!late_projection.empty()) return late_projection.back().weight.size(0);
    return colbert_weight.defined() ? colbert_weight.size(0) : 0;
  }
};

// Reads `<head>.safetensors` or, failing that, `<head>.pt` (torch.save's zip format, read by
// an allow-list reader that executes nothing: formats/torch_save_file.h) for each head; a head with
// neither file is absent. Each file must hold exactly `weight` and `bias`, finite, shaped for
// `hidden_size`. DATA_LOSS naming the file and the tensor otherwise.
absl::StatusOr<TokenHeads> LoadTokenHeads(const std::string& model_dir, int64_t hidden_size);

// The token projection: PyLate's Dense modules (`dense`, read from modules.json), or Stanford's
// `linear.weight` [D, hidden] from `checkpoint`, without a bias. INVALID_ARGUMENT naming the
// layout when there is none (PyLate would add an untrained one); DATA_LOSS for a bad tensor.
absl::StatusOr<std::vector<DenseLayer>> LoadLateProjection(const LateInteractionConfig& config,
                                                           std::vector<DenseLayer> dense,
                                                           int64_t hidden_size,
                                                           const Checkpoint& checkpoint);

}  // namespace embedding::model_store
