#include "server/core/vector_encoding.h"

#include <fp16.h>

#include <algorithm>
#include <cmath>

namespace embedding::server {

int64_t BytesPerVector(VectorEncoding encoding, int64_t dim) {
  switch (encoding) {
    case VectorEncoding::kFloat16:
      return 2 * dim;
    case VectorEncoding::kInt8:
      return dim + 4;
    case VectorEncoding::kBinary:
      return (dim + 7) / 8;
    case VectorEncoding::kFloat32:
      break;
  }
  return 4 * dim;
}

std::string EncodeFloat16(const std::vector<float>& values) {
  std::string out(values.size() * 2, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = fp16_ieee_from_fp32_value(values[i]);
    out[2 * i] = static_cast<char>(h & 0xff);
    out[2 * i + 1] = static_cast<char>(h >> 8);
  }
  return out;
}

std::string EncodeInt8(const std::vector<float>& values, size_t dim, std::vector<float>* scales) {
  std::string out(values.size(), '\0');
  for (size_t row = 0; dim > 0 && row * dim < values.size(); ++row) {
    const float* v = values.data() + row * dim;
    float max_abs = 0;
    for (size_t d = 0; d < dim; ++d) max_abs = std::max(max_abs, std::fabs(v[d]));
    const float scale = max_abs / 127.0f;
    scales->push_back(scale);
    for (size_t d = 0; d < dim && scale > 0; ++d) {
      const float q = std::clamp(std::nearbyint(v[d] / scale), -127.0f, 127.0f);
      out[row * dim + d] = static_cast<char>(static_cast<int8_t>(q));
    }
  }
  return out;
}

std::string EncodeBinary(const std::vector<float>& values, size_t dim) {
  const size_t rows = dim == 0 ? 0 : values.size() / dim, row_bytes = (dim + 7) / 8;
  std::string out(rows * row_bytes, '\0');
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < dim; ++k) {
      char& byte = out[r * row_bytes + k / 8];
      if (values[r * dim + k] > 0) byte = static_cast<char>(byte | (0x80 >> (k % 8)));
    }
  }
  return out;
}

}  // namespace embedding::server
