// Internal to model_store: each linear layer in the kernel that is fastest for its compute
// dtype on this CPU, and the one call the encoder makes to apply it. Included only by
// encoder*.cc.
#pragma once

#include <torch/types.h>

#include <functional>

#include "absl/status/status.h"
#include "model_store/encoder/encoder_weights.h"

namespace embedding::model_store {

enum class LinearKernel {
  kDefault,   // torch's own path (bf16 already goes through oneDNN)
  kOneDnn,    // fp32 on oneDNN's matmul, weights packed at load (fp32_matmul.h)
  kInt8,      // dynamic int8 (int8_matmul.h): weights per output channel, activations per call
  kTorchOps,  // torch::linear on the weights' device, adapters too (EncoderOptions::torch_ops)
};

// Converts every linear layer of `w` (which must hold fp32 weights for kOneDnn and kInt8) to
// `kernel`, and fills each layer's qkv_heads with `kv_heads` slices of its qkv (grouped by
// key/value head), one per group.
absl::Status PrepareLinearLayers(LinearKernel kernel, int64_t kv_heads, EncoderWeights* w);

// x [tokens, in] -> [tokens, out], in x's dtype, through whatever PrepareLinearLayers chose.
// `row_adapters` (int64 [tokens], or undefined: none): the task adapter of each row, -1 for
// none; where the layer has adapters, each row gets its own added (in fp32, on each adapter's
// rows alone, so a row's result does not depend on its neighbours').
torch::Tensor ApplyLinear(const torch::Tensor& x, const LinearWeights& w,
                          const torch::Tensor& row_adapters = torch::Tensor());

// second(activate(first(x))), a feed-forward block's two layers: through
// PackedLinear::ApplyThrough (int8 fuses the passes between them) where both are packed and
// neither has adapters for these rows, otherwise ApplyLinear, `activate` (in place), ApplyLinear.
torch::Tensor ApplyLinearPair(const torch::Tensor& x, const LinearWeights& first,
                              const PackedLinear::ActivateRows& activate,
                              const LinearWeights& second,
                              const torch::Tensor& row_adapters = torch::Tensor());

// Adds to `out` ([tokens, out]) each row's adapter's low-rank term, `low` of adapter t giving
// its rows' [rows, rank] factors (a product with the inputs, or rows of a table). Nothing where
// `adapters` is null or `row_adapters` undefined.
void AddAdapters(const LowRankAdapters* adapters, const torch::Tensor& row_adapters,
                 const std::function<torch::Tensor(size_t t, const torch::Tensor& rows)>& low,
                 torch::Tensor& out);

}  // namespace embedding::model_store
