#include "model_store/kernels/row_quantize.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace embedding::model_store {
namespace {

// Rows per task: a few hundred KB each at BERT's widths.
constexpr int64_t kRowsPerTask = 16;

#define EMB_ROW_KERNEL __attribute__((target_clones("avx512f", "avx2", "default")))

// The largest magnitude as the largest of the bit patterns with the sign cleared: for floats
// that are not negative, integer order is float order (NaN's patterns lie above infinity's),
// and an integer max is vectorised without -ffast-math.
EMB_ROW_KERNEL float LargestMagnitude(const float* x, int64_t n) {
  uint32_t largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    largest = std::max(largest, bits & 0x7fffffffu);
  }
  float out;
  std::memcpy(&out, &largest, sizeof out);
  return out;
}

EMB_ROW_KERNEL void QuantizeRow(const float* __restrict x, int64_t n, float inverse_scale,
                                uint8_t* __restrict q) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] * inverse_scale;
    v = v > -127.0f ? v : -127.0f;  // in this form NaN, too, lands in range
    v = v < 127.0f ? v : 127.0f;
    // Half to even (the default rounding mode), as oneDNN's reorder rounded.
    q[i] = static_cast<uint8_t>(static_cast<int32_t>(__builtin_nearbyintf(v)) +
                                kActivationZeroPoint);
  }
}

EMB_ROW_KERNEL void ScaleRow(float* __restrict row, int64_t n, float scale,
                             const float* __restrict column_scales, const float* __restrict bias) {
  for (int64_t i = 0; i < n; ++i) row[i] = row[i] * scale * column_scales[i] + bias[i];
}

void QuantizeRowsInline(const float* x, int64_t first, int64_t last, int64_t cols, uint8_t* q,
                        float* scales) {
  for (int64_t r = first; r < last; ++r) {
    const float largest = LargestMagnitude(x + r * cols, cols);
    scales[r] = largest > 0 || largest != largest ? largest / 127.0f : 1.0f;
    const float inverse = std::isfinite(scales[r]) ? 1.0f / scales[r] : 0.0f;
    QuantizeRow(x + r * cols, cols, inverse, q + r * cols);
  }
}

}  // namespace

void QuantizeRows(const float* x, int64_t rows, int64_t cols, uint8_t* q, float* scales) {
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t first, int64_t last) {
    QuantizeRowsInline(x, first, last, cols, q, scales);
  });
}

void ScaleRowsAddBias(float* out, int64_t rows, int64_t cols, const float* row_scales,
                      const float* column_scales, const float* bias) {
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      ScaleRow(out + r * cols, cols, row_scales[r], column_scales, bias);
    }
  });
}

void ScaleActivateQuantizeRows(float* out, int64_t rows, int64_t cols, const float* row_scales,
                               const float* column_scales, const float* bias,
                               const std::function<void(int64_t first, int64_t last)>& activate,
                               uint8_t* q, float* q_scales) {
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t first, int64_t last) {
    for (int64_t begin = first; begin < last; begin += kRowsPerTask) {
      const int64_t end = std::min(last, begin + kRowsPerTask);
      for (int64_t r = begin; r < end; ++r) {
        ScaleRow(out + r * cols, cols, row_scales[r], column_scales, bias);
      }
      activate(begin, end);
      QuantizeRowsInline(out, begin, end, cols, q, q_scales);
    }
  });
}

}  // namespace embedding::model_store
