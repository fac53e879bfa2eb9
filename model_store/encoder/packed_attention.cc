#include "model_store/encoder/packed_attention.h"

#include <algorithm>
#include <vector>

#include "model_store/kernels/torch_compat.h"

namespace embedding::model_store {

bool AttendTogether(const PackedSequences& batch, int64_t first, int64_t last,
                    const EncoderConfig& config, const LayerAttention& attention) {
  if (!batch.torch_ops || last - first < 2 || attention.band > 0 || !config.alibi_slopes.empty() ||
      (attention.relative_bias != nullptr && attention.relative_bias->defined())) {
    return false;
  }
  for (int64_t s = first; s < last; ++s) {
    if (batch.prefix(s) >= 0 || (!batch.is_prefix.empty() && batch.is_prefix[s])) return false;
  }
  return true;
}

void AttendSegmentsTogether(const torch::Tensor& projection, const LayerWeights& layer,
                            const PackedSequences& batch, int64_t first, int64_t last,
                            const EncoderConfig& config, const LayerAttention& attention,
                            double base_scale, torch::Tensor& context) {
  const int64_t rows = projection.size(0), kv = projection.size(1);
  const int64_t group = projection.size(2) - 2, d = projection.size(3), n = last - first;
  const torch::Tensor seq = projection.permute({2, 1, 0, 3});  // [group + 2, kv, rows, d]
  torch::Tensor q = seq.slice(0, 0, group).transpose(0, 1);    // [kv, group, rows, d]
  torch::Tensor k = seq[group];                                // [kv, rows, d]
  const torch::Tensor v = seq[group + 1];
  if (layer.query_norm.weight.defined()) {  // row by row: every segment at once
    q.copy_(Norm(q, layer.query_norm, config.layer_norm_eps));
    k.copy_(Norm(k, layer.key_norm, config.layer_norm_eps));
  }
  // Per row: its segment's scale, and its rotary angles (each segment's own, from position 0).
  std::vector<float> scales(rows);
  std::vector<torch::Tensor> cos, sin;
  int64_t longest = 0;
  bool ragged = false;
  for (int64_t s = first; s < last; ++s) {
    const int64_t begin = batch.offsets[s] - batch.offsets[first];
    const int64_t length = batch.offsets[s + 1] - batch.offsets[s];
    const double scale = base_scale * config.logn_scale.For(length) / (*attention.temperatures)[s];
    std::fill(scales.begin() + begin, scales.begin() + begin + length, static_cast<float>(scale));
    if (attention.rotary != nullptr) {
      cos.push_back((*attention.angles)[s].cos);
      sin.push_back((*attention.angles)[s].sin);
    }
    ragged |= s > first && length != longest;
    longest = std::max(longest, length);
  }
  if (attention.rotary != nullptr) {
    const RotaryEmbedding::Angles angles{torch::cat(cos), torch::cat(sin)};
    attention.rotary->ApplyInPlace(q, angles);
    attention.rotary->ApplyInPlace(k, angles);
  }
  const torch::Device device = q.device();
  q.mul_(torch::from_blob(scales.data(), {rows}, torch::kFloat32)
             .to(device, q.scalar_type())
             .view({1, 1, rows, 1}));
  // Padded positions read their segment's first row (finite, and masked or dropped).
  std::vector<int64_t> gather(n * longest), real;
  std::vector<uint8_t> has_key(n * longest);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t begin = batch.offsets[first + i] - batch.offsets[first];
    const int64_t length = batch.offsets[first + i + 1] - batch.offsets[first + i];
    for (int64_t t = 0; t < longest; ++t) {
      gather[i * longest + t] = begin + (t < length ? t : 0);
      has_key[i * longest + t] = t < length;
      if (t < length) real.push_back(i * longest + t);
    }
  }
  const auto on_device = [&](std::vector<int64_t>& data) {
    return torch::from_blob(data.data(), {static_cast<int64_t>(data.size())}, torch::kInt64)
        .to(device);
  };
  const torch::Tensor index = on_device(gather);
  const torch::Tensor qp =  // [n, kv, group, longest, d]
      q.index_select(2, index).view({kv, group, n, longest, d}).permute({2, 0, 1, 3, 4});
  const torch::Tensor kp = k.index_select(1, index).view({kv, n, longest, d}).transpose(0, 1);
  const torch::Tensor vp = v.index_select(1, index).view({kv, n, longest, d}).transpose(0, 1);
  torch::Tensor out;  // [n, kv, group, longest, d]
  if (!config.causal) {
    // A key/value head's query heads as one head of group x longest rows (no copy of K or V
    // per query head); where lengths differ, each segment's keys past its end are masked.
    torch::Tensor mask;
    if (ragged) {
      mask = torch::from_blob(has_key.data(), {n, 1, 1, longest}, torch::kBool)
                 .to(device)
                 .expand({n, kv, 1, longest})
                 .reshape({n * kv, 1, 1, longest});
    }
    out = ScaledDotProductAttention(qp.reshape({n * kv, 1, group * longest, d}),
                                    kp.reshape({n * kv, 1, longest, d}),
                                    vp.reshape({n * kv, 1, longest, d}), 1.0, false, mask)
              .view({n, kv, group, longest, d});
  } else {
    // A real query never reaches past its own position, so never a padded key: causal alone.
    out = torch::empty({n, kv, group, longest, d}, q.options());
    for (int64_t g = 0; g < group; ++g) {
      out.select(2, g).copy_(ScaledDotProductAttention(qp.select(2, g), kp, vp, 1.0, true));
    }
  }
  torch::Tensor rows_out = out.permute({0, 3, 1, 2, 4}).reshape({n * longest, kv * group * d});
  if (ragged) rows_out = rows_out.index_select(0, on_device(real));
  context.slice(0, batch.offsets[first], batch.offsets[last]).copy_(rows_out);
}

}  // namespace embedding::model_store
