// Internal to model_store: scaled dot-product self-attention for one unpadded sequence, with
// memory bounded by a block of queries. Scores for `query_block` queries at a time, never the
// whole [heads x L x L] matrix: an 8,192-token window would need gigabytes per layer.
#pragma once

#include <torch/types.h>

namespace embedding::model_store {

// softmax(Q K^T * scale) V for one sequence. `q`, `k`, `v`: [heads, L, head_dim], no padding
// (every key is real, so no mask). `scale` is 1 / (sqrt(head_dim) * tau): TempScale's
// temperature divides the logits, which is the same as scaling them. Everything runs in `q`'s
// dtype (a bf16 softmax measured 2-3x faster than one through fp32 on this CPU).
// Returns [heads, L, head_dim].
torch::Tensor BlockedSelfAttention(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, double scale, int64_t query_block);

}  // namespace embedding::model_store
