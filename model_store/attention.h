// Internal to model_store: scaled dot-product self-attention for one unpadded sequence, with
// memory bounded by a block of queries. Scores for `query_block` queries at a time, never the
// whole [heads x L x L] matrix: an 8,192-token window would need gigabytes per layer.
#pragma once

#include <torch/types.h>

namespace embedding::model_store {

// out = softmax(Q K^T * scale) V for one sequence. `q`, `k`, `v`, `out`: [heads, L, head_dim]
// views with unit stride in the last dimension and any other strides, so heads are read from a
// packed projection and written into the layer's [L, heads x head_dim] context in place. No
// padding: every key is real, so no mask. `scale` is 1 / (sqrt(head_dim) * tau): TempScale's
// temperature divides the logits, which is the same as scaling them. Everything runs in `q`'s
// dtype (a bf16 softmax measured 2-3x faster than one through fp32 on this CPU).
void BlockedSelfAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          double scale, int64_t query_block, torch::Tensor& out);

}  // namespace embedding::model_store
