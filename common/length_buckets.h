// The fixed document-length buckets that responses, the collapse metrics and embedctl's
// collapse report all use: "0-63", "64-127", ..., "4096-8191", "8192+".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace embedding {

struct LengthBucket {
  std::string label;
  uint64_t min_tokens = 0;  // inclusive
  uint64_t max_tokens = 0;  // inclusive; UINT64_MAX for the last bucket
};

// Every bucket, shortest first.
const std::vector<LengthBucket>& AllLengthBuckets();

// The label of the bucket holding a document of `tokens` content tokens (before chunking,
// without special tokens).
const std::string& LengthBucketLabel(uint64_t tokens);

}  // namespace embedding
