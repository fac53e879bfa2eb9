// Internal to model_store: each linear layer in the kernel that is fastest for its compute
// dtype on this CPU, and the one call the encoder makes to apply it. Included only by
// encoder*.cc.
#pragma once

#include <torch/types.h>

#include "absl/status/status.h"
#include "model_store/encoder/encoder_weights.h"

namespace embedding::model_store {

enum class LinearKernel {
  kDefault,  // torch's own path (bf16 already goes through oneDNN)
  kOneDnn,   // fp32 on oneDNN's matmul, weights packed at load (fp32_matmul.h)
  kInt8,     // dynamic int8 (int8_matmul.h): weights per output channel, activations per call
};

// Converts every linear layer of `w` (which must hold fp32 weights for kOneDnn and kInt8) to
// `kernel`, and fills each layer's qkv_heads with `kv_heads` slices of its qkv (grouped by
// key/value head), one per group.
absl::Status PrepareLinearLayers(LinearKernel kernel, int64_t kv_heads, EncoderWeights* w);

// x [tokens, in] -> [tokens, out], in x's dtype, through whatever PrepareLinearLayers chose.
torch::Tensor ApplyLinear(const torch::Tensor& x, const LinearWeights& w);

}  // namespace embedding::model_store
