// Internal to model_store: the int8 linear layer's passes around its matrix kernel, one row
// at a time (a row's result depends on that row alone, so a text gets the same vector in any
// batch). Compiled for AVX-512, AVX2 and the x86-64 baseline, picked when the process loads:
// the build cannot assume the CPU it runs on.
#pragma once

#include <cstdint>
#include <functional>

namespace embedding::model_store {

// The zero point of the quantized activations: uint8 around 128.
inline constexpr int32_t kActivationZeroPoint = 128;

// Each of `rows` rows of `x` (`cols` fp32 each) quantized symmetrically to 127 levels each
// side of 0, stored as uint8 around kActivationZeroPoint in `q` [rows, cols]; its scale (its
// largest magnitude / 127; 1 for an all-zero row, such as padding) in `scales` [rows].
// Rounds half to even. NaN or infinity in a row makes its scale non-finite (so its outputs
// are NaN, which the forward reports) and its levels 0, or -127 for the non-finite elements.
void QuantizeRows(const float* x, int64_t rows, int64_t cols, uint8_t* q, float* scales);

// out[r][c] = out[r][c] * row_scales[r] * column_scales[c] + bias[c] in place, for `rows`
// rows of `cols`.
void ScaleRowsAddBias(float* out, int64_t rows, int64_t cols, const float* row_scales,
                      const float* column_scales, const float* bias);

// ScaleRowsAddBias, then `activate` (rows [first, last) of `out`, in place), then QuantizeRows
// of the result into `q` and `q_scales`, in blocks of a few rows, each block's three steps
// while it is in cache: the int8 layer's output handed to the next int8 layer without an fp32
// pass between. `activate` runs on the pool's threads, inside a parallel region.
void ScaleActivateQuantizeRows(float* out, int64_t rows, int64_t cols, const float* row_scales,
                               const float* column_scales, const float* bias,
                               const std::function<void(int64_t first, int64_t last)>& activate,
                               uint8_t* q, float* q_scales);

}  // namespace embedding::model_store
