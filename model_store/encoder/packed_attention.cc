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
    if (!batch.attended.empty() && batch.attended[s] < batch.offsets[s + 1] - batch.offsets[s])
      return false;
  }
  return true;
}

namespace {

// A group's padded tokens stay within this share above its real ones: the padding a mask then
// costs is bounded, and segments of far different lengths (one of 3,000 tokens among texts of
// a few) go in groups of their own.
constexpr double kMaxPaddedShare = 0.25;

// Segments of about one length, attended in one call; rows are the projection's.
struct LengthGroup {
  std::vector<int64_t> begins, lengths;
  int64_t longest = 0, tokens = 0;
};

// Segments [first, last) by length, longest first, cut where the next one would pad its group
// past kMaxPaddedShare.
std::vector<LengthGroup> GroupByLength(const PackedSequences& batch, int64_t first, int64_t last) {
  std::vector<int64_t> order;
  for (int64_t s = first; s < last; ++s) order.push_back(s);
  const auto length = [&](int64_t s) { return batch.offsets[s + 1] - batch.offsets[s]; };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return length(a) > length(b); });
  std::vector<LengthGroup> groups;
  for (const int64_t s : order) {
    const int64_t count = groups.empty() ? 0 : static_cast<int64_t>(groups.back().begins.size());
    if (groups.empty() ||
        static_cast<double>((count + 1) * groups.back().longest) >
            (1 + kMaxPaddedShare) * static_cast<double>(groups.back().tokens + length(s))) {
      groups.emplace_back();
      groups.back().longest = length(s);
    }
    groups.back().begins.push_back(batch.offsets[s] - batch.offsets[first]);
    groups.back().lengths.push_back(length(s));
    groups.back().tokens += length(s);
  }
  return groups;
}

// One group's attention: q [kv, group, rows, d] (scaled), k and v [kv, rows, d], every row of
// the projection; its context rows go into `context_rows` ([rows, heads x d]).
void AttendGroup(const LengthGroup& segments, const torch::Tensor& q, const torch::Tensor& k,
                 const torch::Tensor& v, bool causal, torch::Tensor& context_rows) {
  const int64_t kv = q.size(0), group = q.size(1), d = q.size(3);
  const int64_t n = static_cast<int64_t>(segments.begins.size()), longest = segments.longest;
  const bool ragged = segments.tokens != n * longest;
  // Padded positions read their segment's first row (finite, and masked or dropped).
  std::vector<int64_t> gather(n * longest), real, rows;
  std::vector<uint8_t> has_key(n * longest);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = 0; t < longest; ++t) {
      const bool inside = t < segments.lengths[i];
      gather[i * longest + t] = segments.begins[i] + (inside ? t : 0);
      has_key[i * longest + t] = inside;
      if (inside) real.push_back(i * longest + t);
    }
  }
  const torch::Device device = q.device();
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
  if (!causal) {
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
  torch::Tensor out_rows = out.permute({0, 3, 1, 2, 4}).reshape({n * longest, kv * group * d});
  if (ragged) out_rows = out_rows.index_select(0, on_device(real));
  for (const int64_t r : real) rows.push_back(gather[r]);
  context_rows.index_copy_(0, on_device(rows), out_rows);
}

}  // namespace

void AttendSegmentsTogether(const torch::Tensor& projection, const LayerWeights& layer,
                            const PackedSequences& batch, int64_t first, int64_t last,
                            const EncoderConfig& config, const LayerAttention& attention,
                            double base_scale, torch::Tensor& context) {
  const int64_t rows = projection.size(0), group = projection.size(2) - 2;
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
  for (int64_t s = first; s < last; ++s) {
    const int64_t begin = batch.offsets[s] - batch.offsets[first];
    const int64_t length = batch.offsets[s + 1] - batch.offsets[s];
    const double scale = base_scale * config.logn_scale.For(length) / (*attention.temperatures)[s];
    std::fill(scales.begin() + begin, scales.begin() + begin + length, static_cast<float>(scale));
    if (attention.rotary != nullptr) {
      cos.push_back((*attention.angles)[s].cos);
      sin.push_back((*attention.angles)[s].sin);
    }
  }
  if (attention.rotary != nullptr) {
    const RotaryEmbedding::Angles angles{torch::cat(cos), torch::cat(sin)};
    attention.rotary->ApplyInPlace(q, angles);
    attention.rotary->ApplyInPlace(k, angles);
  }
  q.mul_(torch::from_blob(scales.data(), {rows}, torch::kFloat32)
             .to(q.device(), q.scalar_type())
             .view({1, 1, rows, 1}));
  torch::Tensor context_rows = context.slice(0, batch.offsets[first], batch.offsets[last]);
  for (const LengthGroup& segments : GroupByLength(batch, first, last)) {
    AttendGroup(segments, q, k, v, config.causal, context_rows);
  }
}

}  // namespace embedding::model_store
