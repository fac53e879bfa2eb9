// Multi-vectors as they travel: float32 values, IEEE half precision, int8 with one symmetric
// scale per vector, or packed sign bits. Shared by every door so they encode alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/core/vocabulary.h"

namespace embedding::server {

// Bytes per vector of `dim` values on the wire: 4, 2, 1 or 1/8 each (bits padded to a byte),
// and an int8 vector's scale.
int64_t BytesPerVector(VectorEncoding encoding, int64_t dim);

// Little-endian IEEE binary16, round to nearest even (FP16's conversion).
std::string EncodeFloat16(const std::vector<float>& values);

// `values` as rows of `dim`: per row, scale = max |v| / 127 and byte = round(v / scale)
// (scale 0 and bytes 0 for a zero row). Appends one scale per row to `scales`.
std::string EncodeInt8(const std::vector<float>& values, size_t dim, std::vector<float>* scales);

// `values` as rows of `dim`: per row, ceil(dim / 8) bytes of sign bits, 1 for a value > 0,
// the first value in the most significant bit (numpy's packbits, as sentence-transformers'
// quantize_embeddings "ubinary" and PyLate's precision="ubinary" pack them).
std::string EncodeBinary(const std::vector<float>& values, size_t dim);

}  // namespace embedding::server
