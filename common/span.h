// A half-open range [begin, end) of indices: tokens, code points or bytes. One type for all
// three, so a chunk's token, character and byte spans read the same way everywhere.
#pragma once

#include <cstdint>

namespace embedding {

struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;
  uint32_t size() const { return end - begin; }
  bool operator==(const Span& other) const { return begin == other.begin && end == other.end; }
};

}  // namespace embedding
