#include "model_store/encoder/segment_layout.h"

#include <map>
#include <tuple>

namespace embedding::model_store {

SegmentLayout LayOutSegments(const EncodeBatch& batch, bool share_prefixes) {
  SegmentLayout layout;
  const auto count = static_cast<int64_t>(batch.sequences.size());
  auto prefix_length = [&](int64_t b) -> int64_t {
    return share_prefixes && !batch.prefix_lengths.empty() ? batch.prefix_lengths[b] : 0;
  };
  bool split = false;
  for (int64_t b = 0; b < count; ++b) split |= prefix_length(b) > 0;
  if (!split) {
    for (int64_t b = 0; b < count; ++b) {
      layout.segments.push_back({b, 0, static_cast<int64_t>(batch.sequences[b].size())});
    }
    return layout;
  }
  // What a prefix's hidden states depend on: ids, token types, global and local temperature,
  // task adapter.
  using PrefixKey = std::tuple<std::vector<int32_t>, std::vector<int32_t>, float, float, int32_t>;
  std::map<PrefixKey, int64_t> prefix_segments;
  std::vector<int64_t> first_rows;  // per segment
  int64_t rows = 0;
  auto add = [&](Segment segment) {
    layout.segments.push_back(segment);
    first_rows.push_back(rows);
    rows += segment.end - segment.begin;
  };
  for (int64_t b = 0; b < count; ++b) {
    const std::vector<int32_t>& ids = batch.sequences[b];
    const int64_t length = static_cast<int64_t>(ids.size()), shared = prefix_length(b);
    int64_t prefix = -1;
    if (shared > 0) {
      const bool typed =
          b < static_cast<int64_t>(batch.token_types.size()) && !batch.token_types[b].empty();
      std::vector<int32_t> types(shared, 0);
      if (typed) types.assign(batch.token_types[b].begin(), batch.token_types[b].begin() + shared);
      const float local =
          batch.local_temperatures.empty() ? batch.temperatures[b] : batch.local_temperatures[b];
      const int32_t adapter = batch.adapters.empty() ? -1 : batch.adapters[b];
      PrefixKey key{std::vector<int32_t>(ids.begin(), ids.begin() + shared), std::move(types),
                    batch.temperatures[b], local, adapter};
      const auto [it, added] =
          prefix_segments.try_emplace(std::move(key), static_cast<int64_t>(first_rows.size()));
      if (added) add({b, 0, shared, -1, true});
      prefix = it->second;
      for (int64_t t = 0; t < shared; ++t) layout.token_rows.push_back(first_rows[prefix] + t);
    }
    const int64_t first_row = rows;
    add({b, shared, length, prefix, false});
    for (int64_t t = shared; t < length; ++t) layout.token_rows.push_back(first_row + t - shared);
  }
  return layout;
}

}  // namespace embedding::model_store
