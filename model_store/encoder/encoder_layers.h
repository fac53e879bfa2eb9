// Internal to model_store: the encoder's layers, each configured by EncoderConfig data
// (position kind, MLP kind, norm placement, biases), never by architecture name. Encoder::Encode
// chains them. Included only by encoder*.cc (and its unit tests).
#pragma once

#include <torch/types.h>

#include <vector>

#include "model_store/encoder/encoder_weights.h"
#include "model_store/encoder/rotary.h"
#include "model_store/spec/encoder_config.h"

namespace embedding::model_store {

// The batch's segments back to back, unpadded, in `rows` rows (the tail rows past the last
// segment are filler that nothing attends to). A segment is a whole sequence, or a causal
// model's shared prefix, or a sequence's rest after its prefix (segment_layout.h).
struct PackedSequences {
  // Attention through TorchOpsSelfAttention (EncoderOptions::torch_ops), not the CPU kernels.
  bool torch_ops = false;
  std::vector<int64_t> offsets;  // segment b is rows [offsets[b], offsets[b + 1])
  int64_t rows = 0;
  std::vector<float> temperatures;
  std::vector<float> local_temperatures;  // for banded layers
  // Per segment, when positions are rotary: for global layers, and for local (banded) layers
  // when their rotary base differs.
  std::vector<RotaryEmbedding::Angles> angles, local_angles;
  // Per segment, or empty when none is split: -1, or the earlier segment whose keys and values
  // come before its own (its prefix; its positions continue the prefix's).
  std::vector<int64_t> prefix_of;
  // Per segment, or empty: whether a later one reads its keys and values.
  std::vector<bool> is_prefix;
  // Per segment, or empty when every key is read: its first keys, the ones its rows attend
  // (EncodeBatch::attended_lengths).
  std::vector<int64_t> attended;
  // Per row, int64: its sequence's task adapter, -1 for none (the filler rows: the last
  // sequence's); undefined when no sequence names one.
  torch::Tensor row_adapters;
  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t prefix(int64_t b) const { return prefix_of.empty() ? -1 : prefix_of[b]; }
  // Keys before segment b's own: its prefix's length, or 0.
  int64_t keys_before(int64_t b) const {
    const int64_t p = prefix(b);
    return p < 0 ? 0 : offsets[p + 1] - offsets[p];
  }
};

// The rows a batch of `tokens` tokens is computed on: rounded up to a bucket, so oneDNN's
// kernels, built and cached per shape, keep being reused (the extra rows are filler).
int64_t BucketedRows(int64_t tokens);

// `act` of x, as the config names it (Hugging Face's gelu is exact erf).
torch::Tensor Activate(const torch::Tensor& x, Activation act);
// The same, in place on x's own elements (a view's too).
void ActivateInPlace(const torch::Tensor& x, Activation act);

// LayerNorm or RMSNorm in fp32 (see NormWeights), back in x's dtype; x itself where the layer has
// no such norm (ModernBERT's first attention norm).
torch::Tensor Norm(const torch::Tensor& x, const NormWeights& w, double eps);

// Word (times config.embedding_scale) + absolute position (when the model has a table) + token
// type (`types` per row, or type 0 for every row when undefined), each table with its rows'
// task adapters (`row_adapters`, as PackedSequences holds them), normalised. [rows, H]
torch::Tensor Embeddings(const EncoderWeights& w, const torch::Tensor& ids,
                         const torch::Tensor& positions, const torch::Tensor& types,
                         const torch::Tensor& row_adapters, const EncoderConfig& config);

// How one layer attends: globally or within a band, and with which rotary positions.
struct LayerAttention {
  int64_t band = 0;  // 0: every key; otherwise keys with |i - j| <= band
  const std::vector<float>* temperatures = nullptr;  // per sequence
  const RotaryEmbedding* rotary = nullptr;
  const std::vector<RotaryEmbedding::Angles>* angles = nullptr;  // per sequence, with `rotary`
  const torch::Tensor* relative_bias = nullptr;  // [heads, buckets] (MPNet), shared by layers
};

// Multi-head self-attention per sequence with its own temperature (grouped key/value heads, a
// causal mask where the config has one, Qwen3's q/k norm first), rotary positions on queries
// and keys first when the layer has them, then the output projection. [rows, H] -> [rows, H]
torch::Tensor SelfAttention(const torch::Tensor& x, const LayerWeights& layer,
                            const PackedSequences& batch, const EncoderConfig& config,
                            const LayerAttention& attention);

// The MLP, plain or gated, in blocks of rows so its activations stay bounded, or whole where
// `whole` (LibTorch's ops: on a GPU each block's calls cost launches, and the batch budget,
// sized from the measured cost per token, bounds the memory); `row_adapters` as
// PackedSequences holds them. [rows, H]
torch::Tensor FeedForward(const torch::Tensor& x, const LayerWeights& layer,
                          const EncoderConfig& config, const torch::Tensor& row_adapters,
                          bool whole = false);

// One transformer layer: attention and MLP, each with its residual and norm, post-norm
// (norm(x + f(x))) or pre-norm (x + f(norm(x))) as the config says. Takes `x` by value and
// lets it go once it is last read: pass it with std::move and its memory is back before the MLP.
torch::Tensor TransformerLayer(torch::Tensor x, const LayerWeights& layer,
                               const PackedSequences& batch, const EncoderConfig& config,
                               const LayerAttention& attention);

}  // namespace embedding::model_store
