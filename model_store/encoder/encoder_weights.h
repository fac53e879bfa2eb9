// Internal to model_store: the encoder's weights as torch tensors, bound from a checkpoint
// by an ArchitectureSpec's names. Included only by encoder*.cc.
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "model_store/formats/checkpoint.h"
#include "model_store/kernels/packed_linear.h"
#include "model_store/spec/architecture.h"
#include "model_store/spec/encoder_config.h"

namespace embedding::model_store {

// A layer's low-rank task adapters (EncoderConfig::adapters), kept apart from its weights: a
// row that names adapter t gets (down_t x) up_t added, all in fp32. Merging one into the
// weights would cost a copy of them per task; these cost rank x (in + out) floats per task.
struct LowRankAdapters {
  // Per adapter: a linear layer's [rank, in] (a product with the rows), or an embedding
  // table's [rows, rank] (looked up by id).
  std::vector<torch::Tensor> down;
  std::vector<torch::Tensor> up;  // per adapter [rank, out], times lora_alpha / lora_rank
  // A linear layer's two products per adapter in oneDNN's fp32 matmul (PrepareLinearLayers),
  // whose row results do not depend on the row count; empty for a table.
  std::vector<std::shared_ptr<const PackedLinear>> down_packed, up_packed;
};

struct LinearWeights {
  torch::Tensor weight;                        // [out, in]; undefined once `packed` holds the layer
  torch::Tensor bias;                          // [out]; zeros when the checkpoint has none
  std::shared_ptr<const PackedLinear> packed;  // fp32 and int8 (see linear_layer.h)
  std::shared_ptr<const LowRankAdapters> adapters;  // null where the layer has none
};

// Always fp32; `bias` undefined for a norm without one, `weight` undefined for a norm the
// layer lacks (ModernBERT's first layer has no attention norm). LayerNorm in bf16 measured 8x
// slower than converting to fp32, normalising and converting back (0.38 ms against 3.05 ms for 512
// x 768 on this CPU), and is less exact.
struct NormWeights {
  torch::Tensor weight;
  torch::Tensor bias;
  bool rms = false;  // RMSNorm (no mean, no bias) instead of LayerNorm
};

struct LayerWeights {
  // Queries, keys and values stacked into one projection: one GEMM, not three. Grouped by
  // key/value head: the group's query heads, then its key and its value head, then the next
  // group's ([kv_heads x (group + 2) x head_dim] rows; with a group of one, head 0's query, key
  // and value, then head 1's).
  LinearWeights qkv;
  // The same projection one key/value group at a time (views of `qkv`'s weights), for long
  // windows (encoder_layers.cc); empty where its layout does not split.
  std::vector<LinearWeights> qkv_heads;
  // Qwen3's RMSNorm over each head's queries and keys ([head_dim]); undefined where none.
  NormWeights query_norm, key_norm;
  LinearWeights attention_output;
  // [intermediate, hidden]; for a gated MLP both halves, [2 x intermediate, hidden], in the
  // family's order (EncoderConfig::mlp says which half is activated).
  LinearWeights mlp_in;
  LinearWeights mlp_out;
  NormWeights attention_norm, output_norm;
  // A mixture-of-experts layer's, in place of mlp_in and mlp_out (empty elsewhere): the router
  // [experts, hidden] (fp32), and per expert its two linear layers [intermediate, hidden] and
  // [hidden, intermediate] (w2 transposed) with the shared bias [hidden], all through the
  // linear kernels, so a row's result does not depend on how many rows chose the expert.
  LinearWeights moe_router;
  std::vector<LinearWeights> moe_in, moe_out;
  torch::Tensor moe_bias;
  // Gemma3's norms on the attention's and the MLP's outputs; undefined where none.
  NormWeights attention_post_norm, output_post_norm;
};

struct EncoderWeights {
  torch::Tensor word_embeddings;       // [vocab, hidden]
  torch::Tensor position_embeddings;   // [positions, hidden]; undefined for rotary positions
  torch::Tensor token_type_embeddings;  // [types, hidden]; undefined where the family has none
  // The two tables' task adapters; null where none.
  std::shared_ptr<const LowRankAdapters> word_adapters, type_adapters;
  torch::Tensor relative_bias;         // [heads, buckets] fp32 (MPNet); may be undefined
  NormWeights embeddings_norm;
  std::vector<LayerWeights> layers;
  NormWeights final_norm;  // undefined where the family has none
};

// A copy of a checkpoint's floating tensor (F32, F16, BF16 or F64) in its own dtype.
// DATA_LOSS naming the file, the tensor and its dtype for any other dtype: the model reads it.
absl::StatusOr<torch::Tensor> FloatingTensor(const TensorView& view);
// Rows `rows` of a 2-D floating tensor, copying only their bytes (two rows of a 150k-row LM
// head, not the head), in its own dtype. DATA_LOSS as FloatingTensor's, or naming a row out
// of range.
absl::StatusOr<torch::Tensor> FloatingRows(const TensorView& view,
                                           const std::vector<int32_t>& rows);

// Finds every weight `spec` names (trying each prefix), checks its shape against `config`
// and converts it to `dtype`. DATA_LOSS naming the tensor when one is missing or mis-shaped.
absl::StatusOr<EncoderWeights> BindEncoderWeights(const EncoderConfig& config,
                                                  const ArchitectureSpec& spec,
                                                  const Checkpoint& checkpoint,
                                                  torch::ScalarType dtype);

// Moves every tensor of `w` to `device` (a GPU), in place; before PrepareLinearLayers, whose
// per-head slices are views of the weights where they then lie.
void MoveEncoderWeights(const torch::Device& device, EncoderWeights* w);

}  // namespace embedding::model_store
