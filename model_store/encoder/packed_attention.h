// Internal to model_store: on LibTorch's own ops (a GPU), the whole segments of one projection
// attended in one fused call per layer instead of one call per segment: there, kernel launches
// and not arithmetic bound a batch of short texts (a few per segment and layer, each costing
// about as much as a short segment's attention). Included only by encoder_layers.cc.
#pragma once

#include <torch/types.h>

#include "model_store/encoder/encoder_layers.h"

namespace embedding::model_store {

// Whether segments [first, last) of `batch` go together: LibTorch's ops, more than one, none
// a shared prefix or its continuation, and a layer that attends every key or causally (no
// band, ALiBi or relative bias; a logn scale is per segment and goes with tau).
bool AttendTogether(const PackedSequences& batch, int64_t first, int64_t last,
                    const EncoderConfig& config, const LayerAttention& attention);

// Attends segments [first, last) as SelfAttention would one by one: `projection` holds their
// rows back to back ([rows, kv_heads, group + 2, head_dim], each group's queries, key and value,
// which it normalises and rotates in place); their context rows go into `context` ([batch rows,
// heads x head_dim]). Each row's queries are scaled by its segment's base_scale x logn / tau.
// Then segments of about one length (padding within a quarter of their tokens) are padded to
// their longest into one [segments, heads, longest, head_dim] call: keys past a segment's end
// are masked out where lengths differ (a causal mask hides them already), and the padded rows'
// outputs are dropped.
void AttendSegmentsTogether(const torch::Tensor& projection, const LayerWeights& layer,
                            const PackedSequences& batch, int64_t first, int64_t last,
                            const EncoderConfig& config, const LayerAttention& attention,
                            double base_scale, torch::Tensor& context);

}  // namespace embedding::model_store
