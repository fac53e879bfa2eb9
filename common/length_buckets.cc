#include "common/length_buckets.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace embedding {
namespace {

// Bucket 0 holds [0, 64); bucket k holds [64 * 2^(k-1), 64 * 2^k); the last is open-ended.
constexpr uint64_t kFirstBound = 64;
constexpr int kBuckets = 9;

}  // namespace

const std::vector<LengthBucket>& AllLengthBuckets() {
  static const auto* const kAll = [] {
    auto* all = new std::vector<LengthBucket>;
    uint64_t min = 0;
    for (int i = 0; i < kBuckets; ++i) {
      const uint64_t next = i == 0 ? kFirstBound : min * 2;
      if (i + 1 == kBuckets) {
        all->push_back({absl::StrCat(min, "+"), min, std::numeric_limits<uint64_t>::max()});
      } else {
        all->push_back({absl::StrCat(min, "-", next - 1), min, next - 1});
      }
      min = next;
    }
    return all;
  }();
  return *kAll;
}

const std::string& LengthBucketLabel(uint64_t tokens) {
  for (const auto& bucket : AllLengthBuckets()) {
    if (tokens <= bucket.max_tokens) return bucket.label;
  }
  return AllLengthBuckets().back().label;
}

}  // namespace embedding
