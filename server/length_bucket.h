// The fixed document-length buckets shared by responses and the collapse metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace embedding::server {

// "0-63", "64-127", "128-255", "256-511", "512-1023", "1024-2047", "2048-4095", "4096-8191",
// "8192+", for a document's content-token count (before chunking, no special tokens).
const std::string& LengthBucket(uint64_t tokens);

// Every bucket label, shortest first (dashboards iterate them).
const std::vector<std::string>& AllLengthBuckets();

}  // namespace embedding::server
