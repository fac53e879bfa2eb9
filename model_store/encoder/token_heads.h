// Internal to model_store: bge-m3's token-level heads, read from files beside the checkpoint.
//   sparse_linear:  Linear(hidden -> 1), a lexical weight ReLU(w . h_t + b) per token;
//   colbert_linear: Linear(hidden -> D), one vector per token (normalised by the caller).
#pragma once

#include <torch/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace embedding::model_store {

struct TokenHeads {
  torch::Tensor sparse_weight;   // [1, hidden] fp32; undefined without the sparse head
  torch::Tensor sparse_bias;     // [1]
  torch::Tensor colbert_weight;  // [D, hidden] fp32; undefined without the multi-vector head
  torch::Tensor colbert_bias;    // [D]

  bool has_sparse() const { return sparse_weight.defined(); }
  int64_t multi_vector_dim() const { return colbert_weight.defined() ? colbert_weight.size(0) : 0; }
};

// Reads `<head>.safetensors` or, failing that, `<head>.pt` (torch.save's zip format, read by
// an allow-list reader that executes nothing: formats/torch_save_file.h) for each head; a head with
// neither file is absent. Each file must hold exactly `weight` and `bias`, finite, shaped for
// `hidden_size`. DATA_LOSS naming the file and the tensor otherwise.
absl::StatusOr<TokenHeads> LoadTokenHeads(const std::string& model_dir, int64_t hidden_size);

}  // namespace embedding::model_store
