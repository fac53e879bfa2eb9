#include "server/length_bucket.h"

namespace embedding::server {

const std::vector<std::string>& AllLengthBuckets() {
  static const auto* const kBuckets =
      new std::vector<std::string>{"0-63",      "64-127",    "128-255",   "256-511", "512-1023",
                                   "1024-2047", "2048-4095", "4096-8191", "8192+"};
  return *kBuckets;
}

const std::string& LengthBucket(uint64_t tokens) {
  // Bucket k (k >= 1) holds [64 * 2^(k-1), 64 * 2^k).
  size_t index = 0;
  for (uint64_t upper = 64; tokens >= upper && index + 1 < AllLengthBuckets().size(); upper *= 2)
    ++index;
  return AllLengthBuckets()[index];
}

}  // namespace embedding::server
