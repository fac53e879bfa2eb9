// Rotary angles at the far end of a 32k window, against fp64.
#include "model_store/encoder/rotary.h"

#include <gtest/gtest.h>

#include <cmath>

namespace embedding::model_store {
namespace {

// The angle of pair i at position t is t x f_i, f_i the model's fp32 inverse frequency. With
// exact_angles, cos and sin at position 32,000 are as close to fp64's as at position 100 (fp32's
// own rounding of the result, ~6e-8); computed in fp32 they drift with t (t x f_0 = 32,000
// radians carries ~2e-3 of rounding there).
TEST(RotaryEmbedding, ExactAnglesStayExactAtThirtyTwoThousandPositions) {
  RotaryConfig config;
  config.dim = 128;
  config.base = 1e6;
  auto worst = [&](bool exact, int64_t position) {
    config.exact_angles = exact;
    const RotaryEmbedding rotary(config, 32768);
    const RotaryEmbedding::Angles angles = rotary.For(32768);
    double error = 0;
    for (int64_t i = 0; i < config.dim / 2; ++i) {
      // The inverse frequency as the model defines it: fp32 of base^(-2i/dim).
      const float exponent = static_cast<float>(2 * i) / static_cast<float>(config.dim);
      const float inv_freq = 1.0f / std::pow(1e6f, exponent);
      const double angle = static_cast<double>(position) * static_cast<double>(inv_freq);
      error = std::max(error, std::abs(angles.cos[position][i].item<float>() - std::cos(angle)));
      error = std::max(error, std::abs(angles.sin[position][i].item<float>() - std::sin(angle)));
    }
    return error;
  };
  EXPECT_LT(worst(true, 100), 1e-6);
  EXPECT_LT(worst(true, 32000), 1e-6);
  EXPECT_GT(worst(false, 32000), 1e-4);  // what fp32 angles would give: the test can fail
}

}  // namespace
}  // namespace embedding::model_store
