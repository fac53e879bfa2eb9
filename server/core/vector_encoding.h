// Multi-vectors as they travel: float32 values, IEEE half precision, or int8 with one
// symmetric scale per vector. Shared by every door so they encode alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/core/vocabulary.h"

namespace embedding::server {

// Bytes per value on the wire: 4, 2 or 1.
int64_t BytesPerValue(VectorEncoding encoding);

// Little-endian IEEE binary16, round to nearest even (FP16's conversion).
std::string EncodeFloat16(const std::vector<float>& values);

// `values` as rows of `dim`: per row, scale = max |v| / 127 and byte = round(v / scale)
// (scale 0 and bytes 0 for a zero row). Appends one scale per row to `scales`.
std::string EncodeInt8(const std::vector<float>& values, size_t dim, std::vector<float>* scales);

}  // namespace embedding::server
