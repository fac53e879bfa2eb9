// The int8 layer's row passes against their rules, computed here one element at a time: each
// row's scale from its largest magnitude, half-to-even rounding, the zero point, and the rows
// that are not ordinary (all zeros, NaN, infinity).
#include "model_store/kernels/row_quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace embedding::model_store {
namespace {

TEST(RowQuantize, EachRowOnItsOwnScaleRoundedHalfToEven) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  // Widths around the vector lengths (8, 16, 32 floats), so every loop's tail is run.
  for (int64_t cols : {1, 7, 16, 33, 768}) {
    const int64_t rows = 37;
    std::vector<float> x(rows * cols);
    for (auto& v : x) v = normal(rng);
    // Row 0 holds exact ties: 127 levels of 1.0 each, so k + 0.5 lands half way.
    for (int64_t c = 0; c < cols; ++c) x[c] = c == 0 ? 127.0f : static_cast<float>(c % 9) - 3.5f;
    std::vector<uint8_t> q(rows * cols);
    std::vector<float> scales(rows);
    QuantizeRows(x.data(), rows, cols, q.data(), scales.data());
    for (int64_t r = 0; r < rows; ++r) {
      float largest = 0;
      for (int64_t c = 0; c < cols; ++c) largest = std::max(largest, std::fabs(x[r * cols + c]));
      ASSERT_EQ(scales[r], largest / 127.0f) << "row " << r;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = x[r * cols + c] * (1.0f / scales[r]);
        const double level = std::nearbyint(std::clamp(v, -127.0f, 127.0f));  // ties to even
        ASSERT_EQ(q[r * cols + c], static_cast<uint8_t>(level + kActivationZeroPoint))
            << "row " << r << " column " << c << " value " << v;
      }
    }
    if (cols > 2) {
      EXPECT_EQ(q[1], 128 - 2);  // -2.5 -> -2
      EXPECT_EQ(q[2], 128 - 2);  // -1.5 -> -2
    }
  }
}

TEST(RowQuantize, ZeroRowsTakeScaleOneAndNonFiniteRowsKeepTheirs) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0, 0, 0, 0,  1, inf, -2, 0,  3, nan, 1, -1};
  std::vector<uint8_t> q(x.size());
  std::vector<float> scales(3);
  QuantizeRows(x.data(), 3, 4, q.data(), scales.data());
  EXPECT_EQ(scales[0], 1.0f);
  EXPECT_TRUE(std::isinf(scales[1]));
  EXPECT_TRUE(std::isnan(scales[2]));
  // The zero row, and the non-finite rows' finite elements (quantized with a zero inverse
  // scale), are 0; a non-finite element is -127, never outside the range.
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_EQ(q[i], kActivationZeroPoint - (std::isfinite(x[i]) ? 0 : 127)) << i;
  }
}

TEST(RowQuantize, ScaleRowsAddBiasIsEachElementTimesItsRowAndColumnScalesPlusTheBias) {
  const int64_t rows = 5, cols = 19;
  std::vector<float> out(rows * cols), scales(rows), column_scales(cols), bias(cols);
  for (int64_t i = 0; i < rows * cols; ++i) out[i] = static_cast<float>(i % 23) - 11.0f;
  for (int64_t r = 0; r < rows; ++r) scales[r] = 0.25f * static_cast<float>(r + 1);
  for (int64_t c = 0; c < cols; ++c) bias[c] = static_cast<float>(c) * 0.5f;
  for (int64_t c = 0; c < cols; ++c) column_scales[c] = c % 3 == 0 ? 2.0f : 0.5f;
  const std::vector<float> before = out;
  ScaleRowsAddBias(out.data(), rows, cols, scales.data(), column_scales.data(), bias.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      // Exact in fp32 (eighths of small integers), fused multiply-add or not.
      EXPECT_EQ(out[r * cols + c], before[r * cols + c] * scales[r] * column_scales[c] + bias[c]);
    }
  }
}

}  // namespace
}  // namespace embedding::model_store
